"""Device tables: masks, next states, acceptance and distances, against the definitions."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from fstbeam.kernels.bitmask import unpack_bitmask_torch as unpack_bits
from fstbeam.runtime.search.tables import FREE, TEXT, InputConstraints, Tables

from rt_dfa import hard_from_dfa, light_from_spec, light_next_py
from rt_helpers import tiny_vocab

TOKENS = [None, b"a", b"b", b" ", b"ab", b" a", b" b", b"c", b".", b" c", b"ba", b"a "]
V = len(TOKENS)

# A hand-written hard DFA over TOKENS: 0 -a/ab-> 1 -' '/' a'-> ... (the shape is arbitrary,
# what matters is mixing dense blocks (>= 2 tokens with one first byte) and sparse ones).
HARD = {
    0: {1: 1, 4: 1, 2: 2, 7: 2},
    1: {3: 0, 5: 1, 6: 2, 8: 3},
    2: {3: 0, 9: 2, 10: 1, 8: 3},
    3: {3: 0},
}


def _light_phrase():
    # "met after a token 'ab' or 'ba'": state 1 = met (absorbing); class moves stay put.
    return light_from_spec("phrase", "ab", TOKENS, default_next=[[0, 0, 0, 0], [1, 1, 1, 1]],
                           exceptions={(0, 4): 1, (0, 10): 1}, final=[False, True], progress=[0, 2])


def _light_avoid():
    # avoid 'c': tokens 7 and 9 disallowed in state 0; nothing else changes.
    return light_from_spec("avoid", "c", TOKENS, default_next=[[0, 0, 0, 0]], exceptions={(0, 7): -1, (0, 9): -1},
                           final=[True], progress=[0])


def _fixture_inputs():
    hard = hard_from_dfa(HARD, {0, 3}, TOKENS, dense_min=2)
    text_ids = np.array([i for i, b in enumerate(TOKENS) if b], np.int64)
    return hard, [
        InputConstraints(hard, (_light_phrase(), _light_avoid()), 1, True, text_ids),
        InputConstraints(None, (_light_avoid(),), 0, True, text_ids),
        InputConstraints(constrained=False),
        InputConstraints(hard, (), 0, True, text_ids),
    ]


def _allowed(tb, h, s):
    mask = tb.build_mask(torch.tensor([h]), torch.tensor([s], dtype=torch.long).view(1, -1))
    return set(torch.nonzero(unpack_bits(mask, V)[0]).flatten().tolist())


def test_fixture_masks_and_transitions_follow_the_contract():
    hard, inputs = _fixture_inputs()
    tb = Tables(inputs, vocab_width=V, eos_ids=[0])
    rng = random.Random(1)
    for inp in inputs:
        for _ in range(20):
            h, s = tb.hard_start(inp), tb.light_starts(inp)
            q, ls = hard.start, [a.start for a in inp.lights]
            for _step in range(5):
                # expected: hard row (or every text token / every id) AND each light automaton
                if not inp.constrained:
                    exp = set(range(1, V))
                else:
                    exp = set(HARD.get(q, {})) if inp.hard is not None else {i for i, b in enumerate(TOKENS) if b}
                    for a, st in zip(inp.lights, ls):
                        exp = {t for t in exp if light_next_py(a, st, t) >= 0}
                assert _allowed(tb, h, s) == exp
                acc = (inp.hard is None or q in {0, 3}) and all(bool(a.final[st]) for a, st in zip(inp.lights, ls))
                assert bool(tb.accepting(torch.tensor([h]), torch.tensor([s]).view(1, -1))[0]) == acc
                if not exp:
                    break
                t = rng.choice(sorted(exp))
                h = int(tb.hard_next(torch.tensor([h]), torch.tensor([t]))[0])
                s = tb.light_next(torch.tensor([s]).view(1, -1), torch.tensor([t]))[0].tolist()
                if inp.hard is not None:
                    q = HARD[q][t]
                ls = [light_next_py(a, st, t) for a, st in zip(inp.lights, ls)]


def test_pseudo_states_free_and_text():
    _, inputs = _fixture_inputs()
    tb = Tables(inputs, vocab_width=V, eos_ids=[0])
    assert tb.hard_start(inputs[2]) == FREE and tb.hard_start(inputs[1]) == TEXT
    free = _allowed(tb, FREE, [0] * tb.P)
    assert free == set(range(1, V))  # every id but EOS (no text for id 0 here)
    text = _allowed(tb, TEXT, [0] * tb.P)
    assert text == {i for i, b in enumerate(TOKENS) if b}
    # the pseudo states never move
    assert tb.hard_next(torch.tensor([FREE, TEXT]), torch.tensor([4, 7])).tolist() == [FREE, TEXT]


def test_distances_bank_and_advance_sets():
    hard, inputs = _fixture_inputs()
    tb = Tables(inputs, vocab_width=V, eos_ids=[0])
    inp = inputs[0]
    h = torch.tensor([tb.hard_start(inp)])
    s = torch.tensor([tb.light_starts(inp)])
    # hard start is final (dist 0) but the phrase needs one token
    assert int(tb.lower_bound(h, s)[0]) == 1
    assert int(tb.bank(s)[0]) == 0
    sets = tb.advance_sets(s)[0]  # [2P, C]: word-completing tokens per light slot, then the others
    assert sorted(t for t in sets[0].tolist() if t >= 0) == [4, 10]  # both complete the phrase's word
    assert all(t == -1 for t in sets[1].tolist() + sets[2].tolist() + sets[3].tolist())  # (avoid never advances)
    s2 = tb.light_next(s, torch.tensor([4]))
    assert int(tb.bank(s2)[0]) == 1 and tb.met(s2)[0].tolist()[:1] == [True]  # banks count words: "ab" is one


@pytest.mark.parametrize("seed", range(3))
def test_pool_of_compiled_constraints_matches_the_matcher(seed):
    """Several compiled constraint sets pooled in one Tables object: every row's mask and
    acceptance equal the compiler's host-side matcher along random walks."""
    from fstbeam.compiler.api import compile_constraints

    v = tiny_vocab()
    specs = [dict(words=["a", "b", "ab"], phrases=["b a"]), dict(phrases=["b a", "c"], avoid=["ab"]),
             dict(words=["a", "b", "c", "ab"], prefix="a b"), None]
    ccs = [compile_constraints(tokenizer=v, **s) if s else None for s in specs]
    inputs = [InputConstraints.from_compiled(c) for c in ccs]
    tb = Tables(inputs, vocab_width=v.width, eos_ids=[0])
    rng = random.Random(seed)
    for inp, cc in zip(inputs, ccs):
        for _ in range(10):
            h, s = tb.hard_start(inp), tb.light_starts(inp)
            m = cc.matcher() if cc else None
            for _step in range(6):
                mask = tb.build_mask(torch.tensor([h]), torch.tensor([s]).view(1, -1))
                got = set(torch.nonzero(unpack_bits(mask, v.width)[0]).flatten().tolist())
                if m is None:
                    exp = set(range(v.width)) - {0}
                else:
                    exp = set(m.allowed_token_ids().tolist()) - {0}
                    assert bool(tb.accepting(torch.tensor([h]), torch.tensor([s]).view(1, -1))[0]) == m.is_final()
                    assert tb.met(torch.tensor([s]).view(1, -1))[0, : len(cc.phrases)].tolist() == m.phrases_met()
                assert got == exp
                if not got:
                    break
                t = rng.choice(sorted(got))
                h = int(tb.hard_next(torch.tensor([h]), torch.tensor([t]))[0])
                s = tb.light_next(torch.tensor([s]).view(1, -1), torch.tensor([t]))[0].tolist()
                if m is not None:
                    m.advance(t)


def test_batched_mask_equals_row_by_row():
    """Building the masks of many rows at once equals building each alone (scatter fix-ups of
    distinct rows never interfere)."""
    _, inputs = _fixture_inputs()
    tb = Tables(inputs, vocab_width=V, eos_ids=[0])
    hs, ss = [], []
    for inp in inputs:
        h, s = tb.hard_start(inp), tb.light_starts(inp)
        for t in (None, 4, 1, 2):
            if t is not None:
                nh = int(tb.hard_next(torch.tensor([h]), torch.tensor([t]))[0])
                ns = tb.light_next(torch.tensor([s]).view(1, -1), torch.tensor([t]))[0].tolist()
                if nh < 0 or min(ns, default=0) < 0:
                    continue
                h, s = nh, ns
            hs.append(h)
            ss.append(s)
    H, S = torch.tensor(hs), torch.tensor(ss).view(len(hs), -1)
    full = tb.build_mask(H, S)
    for i in range(len(hs)):
        assert torch.equal(full[i], tb.build_mask(H[i : i + 1], S[i : i + 1])[0])


def test_word_banks_and_completing_sets_on_a_compiled_phrase():
    """Banks count the words of the phrase begun ("a price tag": 0..3, a word begun at its first
    byte or the space before it) and each state's advancing tokens split into those that complete a word and the others
    DBA may offer (those on a shortest path to the phrase's end, all where none is), checked
    token by token against the compiler's automaton, a breadth-first distance and the literal."""
    from fstbeam.compiler.api import compile_constraints
    from fstbeam.contract.vocab import Vocab

    from rt_reference import _dist_light

    pieces = ["<eos>", " a", " p", " pr", " price", "ice", " t", " tag", "ag", " ", "a", "x", " prices"]
    v = Vocab.from_dict({i: t for i, t in enumerate(pieces) if i}, eos_ids=[0])
    cc = compile_constraints(tokenizer=v, phrases=["a price tag"])
    a = cc.phrases[0]
    tb = Tables([InputConstraints.from_compiled(cc)], vocab_width=v.width, eos_ids=[0])
    dist = _dist_light(a, v.width)
    lit = b"a price tag"
    words_at = lambda p: sum(p >= e if e < len(lit) else p == len(lit) for e in (1, 7, 11))  # noqa: E731
    begun_at = lambda p: sum(p > start for start in (0, 1, 7))  # noqa: E731
    for q in range(a.n_states):
        s = torch.tensor([[tb.light_starts(InputConstraints.from_compiled(cc))[0] - a.start + q]])
        assert int(tb.bank(s)[0]) == begun_at(int(a.progress[q]))
        sets = tb.advance_sets(s)[0]
        done = {t for t in sets[0].tolist() if t >= 0}
        other = {t for t in sets[1].tolist() if t >= 0}
        adv = set(a.advancing(q).tolist())
        completes = {t for t in adv if words_at(int(a.progress[a.next_state(q, t)])) > words_at(int(a.progress[q]))}
        short = {t for t in adv - completes if dist[a.next_state(q, t)] + 1 == dist[q]}
        assert done == completes and other == (short or adv - completes)
