"""Fallback states of AnyOf / ordered / sentence-case automata (compiler.light.fallback).

Two oracles that share none of the fallback code: the explicit lift (``automaton.lift_light``: one
exception list per state, every transition listed, distances over listed edges) run on the same
character DFA, compared state by state and token by token; and, for a plain AnyOf, the OR of the
single-phrase automata of its alternatives (``compile_phrase``) over random token sequences.
"""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_alternatives import items
from test_light import HYP, check_tables, vocabularies, walk

from fstbeam.compiler.light.alternatives import AnyOf, _candidates, _items_char_dfa, compile_items, stages_of
from fstbeam.compiler.light.automaton import compile_phrase, lift_light
from fstbeam.compiler.light.token_index import TokenIndex
from fstbeam.contract.artifact_validate import check_light
from fstbeam.contract.vocab import Vocab
from fstbeam.errors import ArtifactCorruptError, UnsatisfiableConstraintError


def explicit(its, index: TokenIndex, ordered: bool):
    """The same items lifted the explicit way (no fallback states)."""
    stages = stages_of(its)
    dfa, _ = _items_char_dfa(stages)
    longest = max((lit for s in stages for lit, _ in s.alts), key=len)
    return lift_light("phrase", "x", longest, dfa, index, _candidates(stages, index), True, True, "")


def same_automaton(a, b, vocab: Vocab) -> None:
    """``a`` (fallback states, numbered as the char DFA) behaves as ``b`` (explicit) on every
    state ``b`` keeps and every token: next state, final, progress, distance, advancing set."""
    text = [t for t, tb in enumerate(vocab.token_bytes) if tb]
    for qb in range(b.n_states):
        qa = int(b.char_state[qb])
        assert a.final[qa] == b.final[qb] and a.progress[qa] == b.progress[qb]
        assert a.dist[qa] == b.dist[qb], (qa, qb)
        row_a, row_b = a.row(qa), b.row(qb)
        for t in text:
            nb = int(b.char_state[b.next_state(qb, t)])
            assert a.next_state(qa, t) == nb == row_a[t] and b.char_state[row_b[t]] == nb, (qa, t)
        np.testing.assert_array_equal(a.advancing(qa), b.advancing(qb))
        np.testing.assert_array_equal(a.next_states(np.full(len(text), qa), np.array(text)), row_a[text])


@HYP
@given(vocabularies(), items(max_items=2), st.booleans())
def test_fallback_lift_equals_the_explicit_lift(vocab, its, ordered):
    if not ordered:
        its = its[:1]
    index = TokenIndex.for_vocab(vocab)
    try:
        b = explicit(its, index, ordered)
    except UnsatisfiableConstraintError:
        with pytest.raises(UnsatisfiableConstraintError):
            compile_items(its, index, ordered=ordered)
        return
    a = compile_items(its, index, ordered=ordered)
    check_tables(a)
    check_light(a, a.width, "test", "light/0")
    same_automaton(a, b, vocab)


alt_texts = st.lists(st.sampled_from(["a", "b", "c", " ", "ab", "ba", "cab", "A", "é"]), min_size=1, max_size=3).map("".join)


@HYP
@given(vocabularies(), st.lists(alt_texts.filter(str.strip), min_size=2, max_size=6), st.booleans(), st.booleans(),
       st.integers(0, 10**6))
def test_anyof_is_met_when_one_alternative_automaton_is(vocab, alts, wb, cs, seed):
    index = TokenIndex.for_vocab(vocab)
    item = AnyOf(*alts, word_boundary=wb, case_sensitive=cs)
    singles = []
    for alt in item.alternatives:
        try:
            singles.append(compile_phrase(alt, index, word_boundary=wb, case_sensitive=cs))
        except UnsatisfiableConstraintError:
            pass
    if not singles:
        with pytest.raises(UnsatisfiableConstraintError):
            compile_items([item], index)
        return
    a = compile_items([item], index)
    text = [t for t, tb in enumerate(vocab.token_bytes) if tb]
    rng = random.Random(seed)
    for _ in range(80):
        seq = [rng.choice(text) for _ in range(rng.randint(0, 7))]
        assert bool(a.final[walk(a, seq)]) == any(bool(s.final[walk(s, seq)]) for s in singles), seq


def word_vocab(n_words: int, seed: int = 0) -> tuple[Vocab, list[str]]:
    """Letters, a space, and each of ``n_words`` random words with and without a leading space."""
    rng = random.Random(seed)
    words = sorted({"".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 6))) for _ in range(n_words)})
    toks = [*"abcdefghij .", *words, *(" " + w for w in words)]
    toks = list(dict.fromkeys(toks))
    return Vocab.from_dict(dict(enumerate(toks)), eos_ids=[len(toks)], width=len(toks) + 1), words


def test_exceptions_grow_with_the_alternatives_not_their_square():
    """Every alternative's first word is a token that starts a match from any state: listed per
    state, the exceptions grow as alternatives x states (the explicit lift); with fallback
    states, linearly. The explicit count is the check that the case is quadratic at all."""
    vocab, words = word_vocab(400)
    index = TokenIndex.for_vocab(vocab)
    rng = random.Random(1)
    pairs = list(dict.fromkeys(f"{rng.choice(words)} {rng.choice(words)}" for _ in range(400)))
    counts = {}
    for k in (25, 100):
        item = AnyOf(*pairs[:k])
        a, b = compile_items([item], index), explicit([item], index, False)
        counts[k] = (a.n_exceptions, b.n_exceptions, a.n_states)
    (a25, b25, _), (a100, b100, n100) = counts[25], counts[100]
    assert b100 / b25 > 10  # explicit: ~16x for 4x the alternatives
    assert a100 / a25 < 6 and a100 / n100 < 30  # fallback: ~4x, a few exceptions per state
    same_automaton(compile_items([AnyOf(*pairs[:25])], index), explicit([AnyOf(*pairs[:25])], index, False), vocab)


def test_the_loader_refuses_a_broken_fallback_table():
    vocab, words = word_vocab(30)
    a = compile_items([AnyOf(*(f"{w} {x}" for w, x in zip(words, words[1:])))], TokenIndex.for_vocab(vocab))
    fb = a.fallback.copy()
    has = np.flatnonzero(fb >= 0)
    assert len(has) and (fb[fb[has]] == -1).all()
    check_light(a, a.width, "x", "light/0")
    chained = fb.copy()
    chained[fb[has[0]]] = has[-1]  # a fallback with a fallback of its own
    short = fb[:-1].copy()
    out = fb.copy()
    out[has[0]] = a.n_states
    for bad, why in ((chained, "no fallback of its own"), (short, "one entry per state"), (out, "fallback")):
        broken = dataclasses.replace(a, fallback=bad, dist=a.dist)
        with pytest.raises(ArtifactCorruptError, match=why):
            check_light(broken, a.width, "x", "light/0")
    with pytest.raises(ArtifactCorruptError, match="must-include"):
        check_light(dataclasses.replace(a, kind="avoid"), a.width, "x", "light/0")


def test_artifact_keeps_the_fallback_states(tmp_path):
    from fstbeam import load_constraints
    from fstbeam.compiler.api import compile_constraints

    vocab, words = word_vocab(30)
    cc = compile_constraints(tokenizer=vocab, phrases=[AnyOf(*(f"{w} {x}" for w, x in zip(words, words[1:])))])
    cc.save(tmp_path / "x.fstbeam")
    back = load_constraints(tmp_path / "x.fstbeam", tokenizer=vocab)
    a, b = cc.phrases[0], back.phrases[0]
    assert (a.fallback >= 0).any()
    np.testing.assert_array_equal(a.fallback, b.fallback)
    np.testing.assert_array_equal(a.dist, b.dist)  # recomputed on load from the tables
    for q in range(a.n_states):
        np.testing.assert_array_equal(a.row(q), b.row(q))


def _tables(n, V, default, exc, fallback, final):
    """Plain light tables (all tokens of class 0) for `light_distances`."""
    from types import SimpleNamespace

    keys = sorted(exc)
    return SimpleNamespace(final=np.array(final), width=V, default_next=np.array(default, np.int32),
                           exc_key=np.array([q * V + t for q, t in keys], np.int64),
                           exc_next=np.array([exc[k] for k in keys], np.int32),
                           fallback=np.array(fallback, np.int32), token_class=np.zeros(V, np.int8), text="t")


def _bfs_distances(n, V, default, exc, fallback, final):
    """Every (state, token) transition written out (own exception, else the fallback's, else the
    class default), then a search back from the final states. The class default counts as an
    edge even where every token of the class is an exception (`light_distances` keeps it: a
    smaller distance stays a valid bound)."""
    from fstbeam.contract.layout import INF_DIST

    def nxt(q, t):
        if (q, t) in exc:
            return exc[q, t]
        f = fallback[q]
        return exc[f, t] if f >= 0 and (f, t) in exc else default[q][0]

    dist = [INF_DIST if not f else 0 for f in final]
    changed = True
    while changed:
        changed = False
        for q in range(n):
            best = min([dist[nxt(q, t)] + 1 for t in range(V)] + [dist[default[q][0]] + 1, dist[q]])
            if best < dist[q]:
                dist[q], changed = best, True
    return dist


def test_distances_with_fallbacks_equal_a_search_over_every_transition():
    """`light_distances` never lists a state's fallback edges; a state that overrides every token
    leading to one of its fallback's targets must not reach that target through it."""
    from fstbeam.contract.light import light_distances

    # 1 falls back on 0, whose token 1 reaches the final state 2; 1 overrides token 1 (to 3, one
    # more token from 2): 1 is 2 tokens away, not 1. Class defaults lead to the dead state 4.
    case = (5, 3, [[4] * 4] * 5, {(0, 1): 2, (1, 1): 3, (3, 2): 2}, [-1, 0, -1, -1, -1], [False, False, True, False, False])
    assert list(light_distances(_tables(*case))) == _bfs_distances(*case) == [1, 2, 0, 1, light_distances(_tables(*case))[4]]
    rng = random.Random(0)
    for _ in range(300):
        n, V = rng.randint(2, 7), rng.randint(1, 5)
        fbs = [q for q in range(n) if rng.random() < 0.4]  # states that others fall back on
        fallback = [rng.choice(fbs) if fbs and q not in fbs and rng.random() < 0.7 else -1 for q in range(n)]
        rows = [[rng.randrange(n)] * 4 for _ in range(n)]
        default = [rows[fallback[q]] if fallback[q] >= 0 else rows[q] for q in range(n)]
        exc = {(q, t): rng.randrange(n) for q in range(n) for t in range(V) if rng.random() < 0.4}
        final = [rng.random() < 0.25 for _ in range(n)]
        case = (n, V, default, exc, fallback, final)
        assert list(light_distances(_tables(*case))) == _bfs_distances(*case), case
