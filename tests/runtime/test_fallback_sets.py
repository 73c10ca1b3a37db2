"""DBA's advancing sets and next states of automata with fallback states (docs/tables.md), from the
runtime tables, against the contract's definitions (``LightAutomaton.advancing``, ``next_state``,
word progress and distances), state by state: the runtime reads a state's fallback tokens as
ranges of its fallback's lists, skipping those the state overrides."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import fstbeam
from fstbeam import AnyOf, Phrase
from fstbeam.contract.progress import word_progress
from fstbeam.contract.vocab import Vocab
from fstbeam.runtime.search.tables import InputConstraints, Tables


def word_vocab(n_words: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = sorted({"".join(rng.choice("abcdefg") for _ in range(rng.randint(2, 5))) for _ in range(n_words)})
    return [*"abcdefg .!", *words, *(" " + w for w in words), *(w[:2] for w in words)], words


def vocab_of(tokens: list[str]) -> Vocab:
    toks = list(dict.fromkeys(tokens))
    return Vocab.from_dict(dict(enumerate(toks)), eos_ids=[len(toks)], width=len(toks) + 1)


def reference_sets(a, q: int) -> tuple[list[int], list[int]]:
    """(word-completing tokens, the others DBA may offer) of state ``q``, from the definitions."""
    w, dd = word_progress(a), a.dist
    adv = a.advancing(q).tolist()
    done = [v for v in adv if w[a.next_state(q, v)] > w[q]]
    short = [v for v in adv if v not in done and dd[a.next_state(q, v)] + 1 == dd[q]]
    return sorted(done), sorted(short if short else [v for v in adv if v not in done])


def cases():
    tokens, words = word_vocab(60)
    rng = random.Random(3)
    pairs = list(dict.fromkeys(f"{rng.choice(words)} {rng.choice(words)}" for _ in range(40)))
    # Tokens that spell a whole alternative, or all of one but its last byte (a partial advance
    # one byte short of a word's end), so every range boundary is met.
    tokens += [" " + p for p in pairs[:12]] + [p[:-1] for p in pairs[12:24]] + [" " + p[:-1] for p in pairs[24:30]]
    return vocab_of(tokens), [
        dict(phrases=[AnyOf(*pairs)]),
        dict(phrases=[AnyOf(*words[:25], sentence_case=True)]),
        dict(phrases=[AnyOf(*pairs[:8]), Phrase(pairs[12]), AnyOf(*words[5:12])], ordered=True),
        dict(phrases=[AnyOf(*pairs[10:30]), pairs[13]], avoid=[words[9]]),  # with a plain phrase and an avoid
        dict(phrases=[AnyOf(*pairs[:30], case_sensitive=False), AnyOf(*pairs[5:9], word_boundary=False)]),
    ]


@pytest.mark.parametrize("i", range(5))
def test_runtime_sets_and_next_states_equal_the_definitions(i):
    vocab, specs = cases()
    cc = fstbeam.compile_constraints(tokenizer=vocab, **specs[i])
    assert any((a.fallback >= 0).any() for a in cc.phrases)
    tb = Tables([InputConstraints.from_compiled(cc)], vocab_width=vocab.width, eos_ids=list(vocab.eos_ids))
    text = torch.tensor([t for t, tb_ in enumerate(vocab.token_bytes) if tb_])
    for slot, a in enumerate(cc.phrases):
        off = tb._light_offset[a]
        n = a.n_states
        s = torch.zeros((n, tb.P), dtype=torch.int64)
        s[:, slot] = torch.arange(n) + off
        sets = tb.advance_sets(s)  # [n, 2P, C]
        nxt = tb.light_next(s[:, None, :].expand(n, len(text), tb.P), text[None, :].expand(n, len(text)))
        for q in range(n):
            np.testing.assert_array_equal(nxt[q, :, slot].numpy() - off, a.row(q)[text.numpy()])
            got = [sorted(x for x in sets[q, k].tolist() if x >= 0) for k in (slot, tb.P + slot)]
            for g in got:
                assert len(g) == len(set(g)), "no token twice in a set"
            if a.final[q]:
                assert got == [[], []]
            else:
                assert tuple(got) == reference_sets(a, q), (slot, q)
