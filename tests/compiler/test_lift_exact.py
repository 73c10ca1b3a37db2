"""The token automaton accepts a token sequence iff its bytes are in the character language.

Oracles: a Python regular expression written independently of the pynini builder (word-list
language), and the character DFA itself for viability of prefixes.
"""
from __future__ import annotations

import itertools
import re

import numpy as np
import pynini
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift.token_fsa import lift
from fstbeam.compiler.hard.tables import build_tables
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.contract.vocab import Vocab
from fstbeam.fst.wordlist.language import word_list_fst

LETTERS = "abé"
PUNCT = " ,.-'"


def word_regex(words: list[str]) -> re.Pattern:
    w = "(?:" + "|".join(re.escape(x) for x in sorted(words, key=len, reverse=True)) + ")"
    close, open_ = "[.,!?;:)\"']{0,3}", "[(\"']{0,2}"
    gap = f"(?:{close}[ \\n](?:- )?{open_}|-)"
    return re.compile(f"{open_}{w}(?:{gap}{w})*{close}", re.S)


def walk(tables, seq) -> int:
    q = tables.start
    for t in seq:
        q = tables.next_state(q, t)
        if q < 0:
            return -1
    return q


def compile_plain(words, vocab):
    fst = word_list_fst(words, case_variants=False, contractions=False, digits=False)
    dfa = fst_to_dfa(fst)
    fsa = lift(dfa, token_trie(vocab), vocab.width)
    return dfa, fsa, build_tables(fsa, vocab, dense_min=3, sparse_max=4)


words_st = st.lists(st.text(alphabet=LETTERS, min_size=1, max_size=3), min_size=1, max_size=4, unique=True)
extra_tokens_st = st.lists(st.text(alphabet=LETTERS + PUNCT, min_size=2, max_size=4), max_size=6, unique=True)


def _pieces_vocab(extra):
    """Every single character as a token (as with byte fallback), plus the ``extra`` tokens."""
    singles = sorted(set(LETTERS + PUNCT))
    pieces = singles + [e for e in extra if e not in singles]
    return pieces, Vocab.from_dict({i: p.encode() for i, p in enumerate(pieces)}, eos_ids=[len(pieces)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=words_st, extra=extra_tokens_st)
def test_every_short_sequence_matches_the_regex(words, extra):
    # Every single character is a token (as with byte fallback), plus random multi-char tokens
    # that may span word boundaries ("a b", ". ") and contain multi-byte UTF-8 ("é").
    pieces, vocab = _pieces_vocab(extra)
    dfa, fsa, tables = compile_plain(words, vocab)
    rx = word_regex(words)
    ids = list(range(len(pieces)))
    for n in range(1, 4):
        for seq in itertools.product(ids, repeat=n):
            text = "".join(pieces[t] for t in seq)
            q = walk(tables, seq)
            viable = dfa.run(text.encode()) >= 0
            assert (q >= 0) == viable, (words, pieces, seq, text)
            if q >= 0:
                assert bool(tables.final[q]) == bool(rx.fullmatch(text)), (words, text)
            else:
                assert not rx.fullmatch(text)


@settings(max_examples=30, deadline=None)
@given(words=words_st, pieces=st.lists(st.text(alphabet=LETTERS + " .", min_size=1, max_size=3), min_size=1, max_size=8, unique=True))
def test_no_dead_ends_when_bytes_are_missing(words, pieces):
    """With no byte fallback some character paths cannot be spelled; the automaton must not
    lead a hypothesis into a state from which no token sequence finishes."""
    vocab = Vocab.from_dict({i: p.encode() for i, p in enumerate(pieces)}, eos_ids=[len(pieces)])
    dfa, fsa, tables = compile_plain(words, vocab)
    rx = word_regex(words)
    if not tables.final.any():  # nothing spellable: an empty automaton (compile_constraints raises)
        assert tables.num_states == 1 and len(tables.allowed_text_tokens(0)) == 0
        return
    for q in range(tables.num_states):
        assert tables.final[q] or len(tables.allowed_text_tokens(q)) > 0
        assert tables.dist_to_final[q] < 10**6
    # accepted sequences are exactly the regex's, up to length 3
    for n in range(1, 4):
        for seq in itertools.product(range(len(pieces)), repeat=n):
            q = walk(tables, seq)
            text = "".join(pieces[t] for t in seq)
            assert (q >= 0 and bool(tables.final[q])) == bool(rx.fullmatch(text))


@settings(max_examples=30, deadline=None)
@given(words=words_st, extra=extra_tokens_st)
def test_tables_agree_with_blocks(words, extra):
    """The dense rows + sparse lists the decoder uses hold exactly each state's allowed tokens."""
    pieces, vocab = _pieces_vocab(extra)
    _, fsa, tables = compile_plain(words, vocab)
    for q in range(tables.num_states):
        dense, sparse = tables.mask_row(q)
        bits = np.unpackbits(dense.view(np.uint8), bitorder="little")[: vocab.width]
        dense_ids = np.nonzero(bits)[0]
        assert len(np.intersect1d(dense_ids, sparse)) == 0
        assert np.array_equal(np.union1d(dense_ids, sparse), tables.allowed_text_tokens(q))
        for t in range(vocab.width):
            assert (tables.next_state(q, t) >= 0) == (t in set(tables.allowed_text_tokens(q).tolist()))


def test_distance_to_final_is_exact():
    pieces = ["a", "b", " ", "ab", "ba", " a"]
    vocab = Vocab.from_dict({i: p.encode() for i, p in enumerate(pieces)}, eos_ids=[len(pieces)])
    _, fsa, tables = compile_plain(["abab", "b"], vocab)
    # brute force: BFS over token sequences
    for q in range(tables.num_states):
        frontier, d = {q}, 0
        while not any(tables.final[s] for s in frontier):
            frontier = {tables.next_state(s, t) for s in frontier for t in range(len(pieces))} - {-1}
            d += 1
        assert tables.dist_to_final[q] == d


def test_general_pynini_acceptor_lifts_exactly():
    """Not only word lists: any byte acceptor (here a small regular language) lifts exactly."""
    lang = (pynini.closure(pynini.accep("xy") | "z", 1) + pynini.closure(" " + pynini.accep("x"), 0, 2)).optimize()
    pieces = ["x", "y", "z", " ", "xy", "yz", "zx", "y x", "xyz"]
    vocab = Vocab.from_dict({i: p.encode() for i, p in enumerate(pieces)}, eos_ids=[len(pieces)])
    dfa = fst_to_dfa(lang)
    tables = build_tables(lift(dfa, token_trie(vocab), vocab.width), vocab)
    rx = re.compile(r"(?:xy|z)+(?: x){0,2}")
    for n in range(1, 5):
        for seq in itertools.product(range(len(pieces)), repeat=n):
            q = walk(tables, seq)
            text = "".join(pieces[t] for t in seq)
            assert (q >= 0 and bool(tables.final[q])) == bool(rx.fullmatch(text)), text


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.data())
def test_arc_step_is_the_arc_lookup(n_states, data):
    """`_Arcs.step` against a dict of the arcs, for every (state, byte) pair: missing arcs,
    states with no arc, bytes across the whole range."""
    from fstbeam.compiler.hard.lift.token_fsa import _Arcs

    pairs = data.draw(st.sets(st.tuples(st.integers(0, n_states - 1), st.integers(1, 255)), max_size=60))
    arcs = {p: data.draw(st.integers(0, n_states - 1)) for p in sorted(pairs)}
    src = np.array([q for q, _ in arcs], np.int64)
    byte = np.array([b for _, b in arcs], np.int64)
    dst = np.array(list(arcs.values()), np.int64)
    a = _Arcs(n_states, 0, np.zeros(n_states, bool), src, byte, dst)
    q, b = (x.ravel() for x in np.meshgrid(np.arange(n_states), np.arange(256), indexing="ij"))
    assert a.step(q, b).tolist() == [arcs.get((s, c), -1) for s, c in zip(q.tolist(), b.tolist())]
