"""The near-linear per-request compile (issue 23, item 4) against independent oracles:

- the KMP-style phrase / avoid DFA against the definition of "contains at word boundaries",
  checked on every text up to 7 bytes over a small alphabet (periodic literals included);
- the trie walk of `token_exceptions` against running every candidate from every state;
- `prefix_exceptions` against `token_exceptions` on the prefix automaton;
- the trie-based AnyOf DFA against the definition of "contains one of the alternatives".
Timings live in benchmarks/bench_request.py, not here.
"""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from fstbeam.compiler.light.alternatives import AnyOf, items_char_dfa, stages_of
from fstbeam.compiler.light.lift import _exceptions_dense, prefix_exceptions, token_exceptions, trie_exceptions
from fstbeam.compiler.light.phrase_dfa import phrase_char_dfa, prefix_char_dfa
from fstbeam.fst.text import IS_WORD_BYTE

ALPHABET = b"aAb ."


def _word(b: int) -> bool:
    return bool(IS_WORD_BYTE[b])


def contains(text: bytes, lit: bytes, wb: bool, cs: bool) -> bool:
    """The phrase rule of DESIGN.md, written out: an occurrence with a boundary on each side that
    needs one (a side needs one where the literal has a word byte; the text's ends count)."""
    if not cs:
        text, lit = text.lower(), lit.lower()
    m = len(lit)
    for i in range(len(text) - m + 1):
        if text[i:i + m] != lit:
            continue
        left = not (wb and _word(lit[0])) or i == 0 or not _word(text[i - 1])
        right = not (wb and _word(lit[-1])) or i + m == len(text) or not _word(text[i + m])
        if left and right:
            return True
    return False


def _texts(n: int):
    for k in range(n + 1):
        yield from (bytes(t) for t in itertools.product(ALPHABET, repeat=k))


TEXTS = list(_texts(6))
LITERALS = [b"a", b"aa", b"aaa", b"aba", b"abab", b"a a", b"a a a", b"ab.", b".a", b"aab", b"a.a", b"Ab", b" a "]


@pytest.mark.parametrize("lit", LITERALS)
@pytest.mark.parametrize("wb, cs", [(True, True), (False, True), (True, False)])
def test_phrase_and_avoid_dfa_match_the_definition(lit, wb, cs):
    phrase = phrase_char_dfa(lit, word_boundary=wb, case_sensitive=cs, kind="phrase")
    avoid = phrase_char_dfa(lit, word_boundary=wb, case_sensitive=cs, kind="avoid")
    for t in TEXTS:
        want = contains(t, lit, wb, cs)
        assert phrase.accepts(t) == want, (lit, t)
        assert avoid.accepts(t) == (not want), (lit, t)


def test_long_periodic_phrase_stays_small():
    """States grow with the phrase, not with its partial matches (was a subset construction)."""
    lit = (b"a " * 3000).strip()
    d = phrase_char_dfa(lit, kind="avoid")
    assert d.n_states <= len(lit) + 3
    assert not d.accepts(lit) and d.accepts(lit[:-1])


@pytest.mark.parametrize("alts, kw", [(["ab", "b a"], {}), (["a", "aa", "a.a"], {}), (["ab", "Ab"], dict(case_sensitive=False)),
                                      (["a b", "b"], dict(word_boundary=False))])
def test_anyof_dfa_matches_the_definition(alts, kw):
    item = AnyOf(*alts, **kw)
    d = items_char_dfa(stages_of([item]))
    wb, cs = kw.get("word_boundary", True), kw.get("case_sensitive", True)
    for t in TEXTS:
        assert d.accepts(t) == any(contains(t, a.encode(), wb, cs) for a in alts), (alts, t)


def _random_case(rng):
    nq, nsym = int(rng.integers(1, 40)), int(rng.integers(2, 6))
    delta = rng.integers(0, nq, (nq, nsym))
    if rng.random() < 0.5:  # chain-like, as a phrase automaton is
        delta = np.clip(np.arange(nq)[:, None] + rng.integers(-4, 2, (nq, nsym)), 0, nq - 1)
    sym_of_byte = rng.integers(0, nsym, 256).astype(np.int16)
    c, L = int(rng.integers(1, 80)), int(rng.integers(1, 7))
    lengths = rng.integers(1, L + 1, c)
    padded = rng.integers(0, 6, (c, L)).astype(np.uint8)
    padded[np.arange(L)[None, :] >= lengths[:, None]] = 0
    cls = rng.integers(0, 4, c)
    default = rng.integers(0, nq, (nq, 4)) if rng.random() < 0.5 else np.repeat(rng.integers(0, nq, (1, 4)), nq, 0)
    return delta, sym_of_byte, padded, lengths, cls, default


@pytest.mark.parametrize("seed", range(40))
def test_trie_walk_equals_running_every_candidate_from_every_state(seed):
    case = _random_case(np.random.default_rng(seed))
    for a, b in zip(_exceptions_dense(*case), trie_exceptions(*case)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(20))
def test_prefix_exceptions_equal_the_generic_lift(seed):
    rng = random.Random(seed)
    toks = sorted({"".join(rng.choice("ab c") for _ in range(rng.randint(1, 9))).encode() for _ in range(200)})
    L = max(map(len, toks))
    padded = np.zeros((len(toks), L), np.uint8)
    for i, t in enumerate(toks):
        padded[i, :len(t)] = list(t)
    lengths = np.array([len(t) for t in toks])
    cls = np.array([(0 if _word(t[0]) else 2) | (0 if _word(t[-1]) else 1) for t in toks])
    for _ in range(10):
        lit = "".join(rng.choice("ab c") for _ in range(rng.randint(1, 40))).encode()
        d = prefix_char_dfa(lit)
        want = token_exceptions(d.delta, d.sym_of_byte, padded, lengths, cls, d.class_defaults())
        got = prefix_exceptions(lit, padded, lengths)
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)
