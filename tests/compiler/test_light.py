"""Light automata (per-request phrase / avoid / prefix) against independent oracles.

Oracles, none of which share code with fstbeam.compiler.light.automaton:
- a pynini acceptor for ``(eps | Sigma* N) phrase (eps | N Sigma*)`` (N = non-word bytes) checks
  the character DFA on random strings;
- Python ``re`` with look-arounds over the word-byte definition checks token sequences;
- a plain per-byte walk of the character DFA checks every lifted transition of every token.
"""
from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pynini
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fstbeam.compiler.light.automaton import (
    LightAutomaton,
    compile_avoid,
    compile_phrase,
    compile_prefix,
    phrase_char_dfa,
)
from fstbeam.compiler.light.token_index import TokenIndex
from fstbeam.contract.vocab import Vocab
from fstbeam.errors import DisallowedTokenError, SpecError, UnsatisfiableConstraintError

HYP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HYP_MORE = settings(HYP, max_examples=300)


# ---- oracles ---------------------------------------------------------------------------------
def is_word(b: int) -> bool:
    """Word bytes: ASCII letters and digits, the word joiners ' and -, and every byte >= 0x80
    (spelled out independently)."""
    return chr(b).isascii() and (chr(b).isalnum() or chr(b) in "'-") or b >= 0x80


_W = rb"[A-Za-z0-9'\-\x80-\xff]"


def needs(lit: bytes, word_boundary: bool) -> tuple[bool, bool]:
    return word_boundary and is_word(lit[0]), word_boundary and is_word(lit[-1])


def oracle_contains(text: bytes, lit: bytes, *, word_boundary: bool = True, case_sensitive: bool = True) -> bool:
    """The phrase occurs in text; start/end of text count as boundaries."""
    nl, nr = needs(lit, word_boundary)
    pat = (rb"(?<!" + _W + rb")" if nl else b"") + re.escape(lit) + (rb"(?!" + _W + rb")" if nr else b"")
    return re.search(pat, text, 0 if case_sensitive else re.IGNORECASE) is not None


def oracle_progress(text: bytes, lit: bytes, *, word_boundary: bool, case_sensitive: bool) -> int:
    """Bytes of the phrase matched: len when met or matched at the very end, else the longest
    phrase prefix that ends the text with a boundary before it."""
    if not case_sensitive:
        text, lit = text.lower(), lit.lower()
    m = len(lit)
    if oracle_contains(text, lit, word_boundary=word_boundary):
        return m
    nl, _ = needs(lit, word_boundary)
    for j in range(m - 1, 0, -1):
        if text.endswith(lit[:j]) and (not nl or len(text) == j or not is_word(text[-j - 1])):
            return j
    return 0


class PyniniDfa:
    """The phrase language as an optimized pynini acceptor, walked label by label."""

    def __init__(self, lit: bytes, *, word_boundary: bool, case_sensitive: bool):
        nl, nr = needs(lit, word_boundary)
        sigma = self._set(range(1, 256))
        nonword = self._set(b for b in range(1, 256) if not is_word(b))
        body = pynini.accep("")
        for b in lit:
            variants = {b} if case_sensitive else {b, ord(chr(b).lower()) if b < 128 else b, ord(chr(b).upper()) if b < 128 else b}
            body = body + self._set(variants)
        any_ = pynini.closure(sigma)
        left = pynini.union(pynini.accep(""), any_ + nonword) if nl else any_
        right = pynini.union(pynini.accep(""), nonword + any_) if nr else any_
        fst = (left + body + right).optimize()
        zero = pynini.Weight.zero(fst.weight_type())
        self.start = fst.start()
        self.final = {s for s in fst.states() if fst.final(s) != zero}
        self.arcs = {}
        for s in fst.states():
            for a in fst.arcs(s):
                assert a.ilabel != 0 and (s, a.ilabel) not in self.arcs, "oracle acceptor must be a DFA"
                self.arcs[(s, a.ilabel)] = a.nextstate

    @staticmethod
    def _set(labels) -> pynini.Fst:
        f = pynini.Fst()
        s, t = f.add_state(), f.add_state()
        f.set_start(s)
        f.set_final(t)
        one = pynini.Weight.one(f.weight_type())
        for b in labels:
            f.add_arc(s, pynini.Arc(b, b, one, t))
        return f

    def accepts(self, data: bytes) -> bool:
        q = self.start
        for b in data:
            q = self.arcs.get((q, b))
            if q is None:
                return False
        return q in self.final


def decode(vocab: Vocab, seq) -> bytes:
    return b"".join(vocab.token_bytes[t] for t in seq)


def walk(a: LightAutomaton, seq) -> int | None:
    """State after seq, or None if some token is disallowed."""
    q = a.start
    for t in seq:
        q = a.next_state(q, t)
        if q < 0:
            return None
    return q


def check_tables(a: LightAutomaton) -> None:
    """Shapes, dtypes and the invariants the runtime relies on."""
    n, V = a.n_states, a.width
    assert a.start == 0
    assert a.final.dtype == bool and a.final.shape == (n,)
    assert a.progress.dtype == np.int32 and a.progress.shape == (n,)
    assert a.default_next.dtype == np.int32 and a.default_next.shape == (n, 4)
    assert a.exc_key.dtype == np.int64 and a.exc_next.dtype == np.int32 and a.exc_key.shape == a.exc_next.shape
    assert np.all(np.diff(a.exc_key) > 0), "exception keys sorted and unique"
    assert a.exc_key.size == 0 or (0 <= a.exc_key.min() and a.exc_key.max() < n * V)
    assert np.all((a.exc_next >= -1) & (a.exc_next < n)) and np.all((a.default_next >= -1) & (a.default_next < n))
    qs, ts = a.exc_key // V, a.exc_key % V
    cls = a.token_class[ts]
    assert np.all(cls < 4), "special / EOS ids are never exceptions"
    # An exception differs from what the lookup gives without it: the fallback's entry, else the
    # class default (docs/tables.md, "Fallback states").
    without = a.default_next[qs, cls].astype(np.int64)
    fb = a.fallback[qs].astype(np.int64)
    key = np.where(fb >= 0, fb * V + ts, -1)
    i = np.searchsorted(a.exc_key, key).clip(max=max(a.exc_key.size - 1, 0))
    on_fb = (fb >= 0) & (a.exc_key[i] == key) if a.exc_key.size else fb >= 0
    without[on_fb] = a.exc_next[i[on_fb]]
    assert np.all(a.exc_next != without), "exceptions differ from the fallback's entry or the class default"
    assert a.adv_ptr.dtype == np.int64 and a.adv_ptr.shape == (n + 1,) and a.adv_ptr[0] == 0
    assert a.adv_ptr[-1] == a.adv_tokens.shape[0] and a.adv_tokens.dtype == np.int32
    for q in range(n):
        adv = a.advancing(q)
        assert np.all(np.diff(adv) > 0)
        for t in adv:
            r = a.next_state(q, int(t))
            assert r >= 0 and a.progress[r] > a.progress[q]
    for name, arr in a.tables().items():
        assert not arr.flags.writeable, name


def check_every_transition(a: LightAutomaton, vocab: Vocab) -> None:
    """next_state(q, t) == the char DFA walked byte by byte over t, for every state and token."""
    dfa = a.char_dfa
    light_of = {int(c): q for q, c in enumerate(a.char_state)}
    for q in range(a.n_states):
        row = a.row(q)
        for t, tb in enumerate(vocab.token_bytes):
            if tb is None:
                expect = -1
            else:
                c = int(a.char_state[q])
                for b in tb:
                    c = int(dfa.delta[c, dfa.sym_of_byte[b]])
                expect = light_of.get(c, -1)
            assert a.next_state(q, t) == expect == row[t], (a.describe(), q, t, tb)
        np.testing.assert_array_equal(a.allowed(q), np.flatnonzero(row >= 0))
        if a.kind == "phrase":
            assert (row[[t for t, tb in enumerate(vocab.token_bytes) if tb]] >= 0).all(), "phrases never disallow"


# ---- random vocabularies ---------------------------------------------------------------------
UNITS = [b"a", b"b", b"c", b" ", b".", b"-", b"A", b"1", "é".encode(), b"\xc3", b":", b"_", b"~"]  # a non-word byte from each range
unit_lists = st.lists(st.sampled_from(UNITS), min_size=1, max_size=4).map(b"".join)


@st.composite
def vocabularies(draw):
    multi = draw(st.lists(unit_lists, min_size=0, max_size=12))
    singles = UNITS if draw(st.booleans()) else draw(st.lists(st.sampled_from(UNITS), max_size=6))
    tokens = list(dict.fromkeys([*singles, *multi]))
    tokens += draw(st.lists(st.sampled_from(tokens), max_size=2)) if tokens else []  # ids sharing bytes
    if not tokens:
        tokens = [b"a"]
    draw(st.randoms(use_true_random=False)).shuffle(tokens)
    table = {i: t for i, t in enumerate(tokens)}
    eos = len(tokens)
    return Vocab.from_dict(table, eos_ids=[eos], width=eos + 2)  # one padding id after EOS


literals = st.lists(st.sampled_from(UNITS), min_size=1, max_size=4).map(b"".join)
kinds = st.sampled_from(["phrase", "avoid"])


def build(kind, lit, index, wb=True, cs=True):
    if kind == "phrase":
        return compile_phrase(lit, index, word_boundary=wb, case_sensitive=cs)
    if kind == "avoid":
        return compile_avoid(lit, index, word_boundary=wb, case_sensitive=cs)
    return compile_prefix(lit, index)


def sequences(vocab: Vocab, rng: random.Random, n_random: int = 150):
    ids = [i for i, b in enumerate(vocab.token_bytes) if b]
    yield ()
    yield from ((t,) for t in ids)
    yield from itertools.product(ids, repeat=2)
    for _ in range(n_random):
        yield tuple(rng.choice(ids) for _ in range(rng.randint(3, 4)))


# ---- character DFA vs pynini -----------------------------------------------------------------
@HYP
@given(lit=literals, wb=st.booleans(), cs=st.booleans(), data=st.data())
def test_char_dfa_matches_pynini_acceptor(lit, wb, cs, data):
    oracle = PyniniDfa(lit, word_boundary=wb, case_sensitive=cs)
    phrase = phrase_char_dfa(lit, word_boundary=wb, case_sensitive=cs, kind="phrase")
    avoid = phrase_char_dfa(lit, word_boundary=wb, case_sensitive=cs, kind="avoid")
    alphabet = UNITS + [b"z", b"Z", b"B", b"!"]
    strings = data.draw(st.lists(st.lists(st.sampled_from(alphabet), max_size=10).map(b"".join), min_size=20, max_size=40))
    strings += [lit, lit + b" ", b" " + lit, b"x" + lit, lit + b"x", lit + lit, lit[:-1]]
    for s in strings:
        expect = oracle.accepts(s)
        assert phrase.accepts(s) == expect, (lit, s)
        assert avoid.accepts(s) == (not expect), (lit, s)
        assert phrase.progress[phrase.run(s)] == oracle_progress(s, lit, word_boundary=wb, case_sensitive=cs), (lit, s)
        assert oracle_contains(s, lit, word_boundary=wb, case_sensitive=cs) == expect  # the two oracles agree


# ---- lifting: every token from every state ---------------------------------------------------
@HYP_MORE
@given(vocab=vocabularies(), lit=literals, kind=st.sampled_from(["phrase", "avoid", "prefix"]), wb=st.booleans(), cs=st.booleans())
def test_every_token_from_every_state_matches_char_dfa(vocab, lit, kind, wb, cs):
    index = TokenIndex(vocab.token_bytes)
    try:
        a = build(kind, lit, index, wb, cs)
    except UnsatisfiableConstraintError:
        event("unsatisfiable")
        # then no short token sequence may satisfy it either
        for seq in sequences(vocab, random.Random(0), 50):
            text = decode(vocab, seq)
            if kind == "phrase":
                assert not oracle_contains(text, lit, word_boundary=wb, case_sensitive=cs)
            elif kind == "prefix":
                assert not text.startswith(lit)
        return
    event(f"{kind}: {'some' if a.n_exceptions else 'no'} exceptions")
    check_tables(a)
    check_every_transition(a, vocab)
    assert a.length == len(lit)


@pytest.mark.slow  # many hypothesis examples: CI runs it (-m slow)
@HYP_MORE
@given(vocab=vocabularies(), lit=literals, kind=kinds, wb=st.booleans(), cs=st.booleans(), seed=st.integers(0, 2**16))
def test_token_sequences_against_regex_oracle(vocab, lit, kind, wb, cs, seed):
    index = TokenIndex(vocab.token_bytes)
    try:
        a = build(kind, lit, index, wb, cs)
    except UnsatisfiableConstraintError:
        return  # covered by the test above
    for seq in sequences(vocab, random.Random(seed)):
        text = decode(vocab, seq)
        contains = oracle_contains(text, lit, word_boundary=wb, case_sensitive=cs)
        q = walk(a, seq)
        if kind == "phrase":
            assert q is not None and a.is_final(q) == contains, (lit, text)
        else:  # avoid: a sequence can finish iff its text does not contain the phrase
            finishes = q is not None and a.is_final(q)
            assert finishes == (not contains), (lit, text)


@HYP
@given(vocab=vocabularies(), lit=literals, seed=st.integers(0, 2**16))
def test_prefix_sequences(vocab, lit, seed):
    index = TokenIndex(vocab.token_bytes)
    try:
        a = compile_prefix(lit, index)
    except UnsatisfiableConstraintError:
        return
    for seq in sequences(vocab, random.Random(seed)):
        text = decode(vocab, seq)
        q = walk(a, seq)
        assert (q is not None and a.is_final(q)) == text.startswith(lit), (lit, text)
        if q is not None:  # every allowed sequence is still on the prefix
            assert text.startswith(lit) or lit.startswith(text), (lit, text)
            assert a.progress[q] == min(len(text), len(lit))


# ---- table-driven phrase semantics -----------------------------------------------------------
def byte_vocab(extra=()) -> tuple[Vocab, TokenIndex]:
    """Every byte 1..255 as its own token plus some merges (ids sharing bytes included)."""
    tokens = [bytes([b]) for b in range(1, 256)] + [t.encode() if isinstance(t, str) else t for t in extra]
    vocab = Vocab.from_dict(dict(enumerate(tokens)), eos_ids=[len(tokens)])
    return vocab, TokenIndex(vocab.token_bytes)


MERGES = ["11", "12", "1 ", " 1", "11 1", "5 ", " 5", "5 5", "cat", " cat", "cat.", "concat", "C++", "++", " e-", "mail",
          "e-mail", "s ", "New", " York", "ew Y", "naïve", "ï", "té", "Dr.", " Smith", "Sm", "aa", "aab", "ab", " CAT", "T!"]

PHRASE_CASES = [
    # (phrase, text, word_boundary, case_sensitive, met)
    ("11 12", "11 11 12", True, True, True),  # restart after a broken partial match
    ("5 5 6", "5 5 5 6", True, True, True),  # overlapping partial matches
    ("5 5 6", "5 5 5 7", True, True, False),
    ("cat", "a cat.", True, True, True),
    ("cat", "cat", True, True, True),  # start and end of output are boundaries
    ("cat", "concatenate", True, True, False),  # inside a word
    ("cat", "concatenate", False, True, True),  # ... allowed with word_boundary=False
    ("cat", "cats", True, True, False),  # no boundary after
    ("cat", "A CAT!", True, False, True),  # ASCII case-insensitive
    ("cat", "A CAT!", True, True, False),
    ("C++", "I like C++11", True, True, True),  # last byte is non-word: no right boundary needed
    ("C++", "ObjC++", True, True, False),  # first byte is a word byte: left boundary needed
    ("e-mail", "send e-mails", True, True, False),
    ("e-mail", "send e-mail.", True, True, True),
    ("naïve", "a naïve idea", True, True, True),
    ("naïve", "naïveté", True, True, False),  # bytes >= 0x80 are word bytes
    ("New York", "in New York", True, True, True),
    ("Dr. Smith", "Dr. Smithers", True, True, False),
    ("Dr. Smith", "(Dr. Smith)", True, True, True),
    ("aab", "aaab", True, True, False),
    ("aab", "aaab", False, True, True),  # restart inside a self-overlapping phrase
    (" .", "a .", True, True, True),  # non-word edges need no boundary
]


def tokenizations(text: bytes, vocab: Vocab, limit: int = 200):
    """Up to ``limit`` tokenizations of text (all ids with matching bytes)."""
    by_bytes: dict[bytes, list[int]] = {}
    for i, b in enumerate(vocab.token_bytes):
        if b:
            by_bytes.setdefault(b, []).append(i)
    out: list[list[int]] = []

    def rec(pos, acc):
        if len(out) >= limit:
            return
        if pos == len(text):
            out.append(list(acc))
            return
        for end in range(len(text), pos, -1):
            for t in by_bytes.get(text[pos:end], ()):
                rec(end, acc + [t])

    rec(0, [])
    return out


@pytest.mark.parametrize("phrase,text,wb,cs,met", PHRASE_CASES)
def test_phrase_cases(phrase, text, wb, cs, met):
    vocab, index = byte_vocab(MERGES)
    a = compile_phrase(phrase, index, word_boundary=wb, case_sensitive=cs)
    avoid = compile_avoid(phrase, index, word_boundary=wb, case_sensitive=cs)
    toks = tokenizations(text.encode(), vocab)
    assert toks
    for seq in toks:
        assert a.is_final(walk(a, seq)) == met, seq
        q = walk(avoid, seq)
        assert (q is not None and avoid.is_final(q)) == (not met), seq


def test_met_is_absorbing_and_pending_is_not():
    vocab, index = byte_vocab(MERGES)
    a = compile_phrase("cat", index)
    ids = {b: i for i, b in enumerate(vocab.token_bytes) if b}
    pending = walk(a, [ids[b"cat"]])
    assert a.is_final(pending) and a.progress[pending] == 3  # matched at the end of the output
    assert not a.is_final(a.next_state(pending, ids[b"s"]))  # "cats": the match is gone
    met = a.next_state(pending, ids[b"."])
    assert a.is_final(met)
    assert (a.row(met)[a.token_class < 4] == met).all()  # MET is absorbing
    assert (a.default_next[met] == met).all()


def test_avoid_disallows_completing_tokens():
    vocab, index = byte_vocab(MERGES)
    a = compile_avoid("cat", index)
    ids = {b: i for i, b in enumerate(vocab.token_bytes) if b}
    q = walk(a, [ids[b"a"], ids[b" "], ids[b"cat"]])
    assert q is not None and not a.is_final(q)  # EOS would complete "cat"
    assert a.next_state(q, ids[b"."]) == -1 and a.next_state(q, ids[b" "]) == -1
    assert a.next_state(q, ids[b"s"]) >= 0  # "cats" is fine
    assert a.next_state(walk(a, [ids[b" "]]), ids[b"cat."]) == -1  # the whole match inside one token
    assert walk(a, [ids[b"concat"]]) is not None
    with pytest.raises(DisallowedTokenError):
        a.advance(q, ids[b"."])
    assert a.adv_tokens.size == 0


def test_phrase_advancing_tokens():
    vocab, index = byte_vocab(MERGES)
    a = compile_phrase("New York", index)
    ids = {b: i for i, b in enumerate(vocab.token_bytes) if b}
    adv0 = set(a.advancing(a.start).tolist())
    assert {ids[b"N"], ids[b"New"]} <= adv0 and ids[b"Y"] not in adv0
    q = walk(a, [ids[b"New"]])
    assert a.progress[q] == 3 and ids[b" York"] in set(a.advancing(q).tolist())
    assert a.is_final(a.next_state(q, ids[b" York"]))


# ---- prefix ----------------------------------------------------------------------------------
def test_prefix_token_healing():
    words = ["Hello", "Help", "He", "H", "el", "l", "lo", "Hex", " world", "x"]
    vocab = Vocab.from_dict(dict(enumerate(words)), eos_ids=[len(words)])
    a = compile_prefix("Hel", TokenIndex(vocab.token_bytes))
    ids = {w: i for i, w in enumerate(words)}
    assert a.allowed(a.start).tolist() == sorted(ids[w] for w in ["Hello", "Help", "He", "H"])
    assert a.is_final(walk(a, [ids["Hello"]])) and a.is_final(walk(a, [ids["He"], ids["lo"]]))
    assert not a.is_final(walk(a, [ids["He"]])) and not a.is_final(a.start)
    assert walk(a, [ids["Hex"]]) is None
    free = walk(a, [ids["Help"]])
    assert (a.row(free)[: len(words)] == free).all()  # after the prefix everything is allowed
    assert a.next_state(free, len(words)) == -1  # EOS is no transition (decided by `final`)


def test_prefix_dead_ends_are_disallowed():
    vocab = Vocab.from_dict({0: "ab", 1: "a", 2: "c"}, eos_ids=[3])
    a = compile_prefix("abc", vocab)  # a Vocab is indexed (and cached) on the fly
    assert a.allowed(a.start).tolist() == [0]  # "a" would need a token starting with "bc"
    assert a.is_final(walk(a, [0, 2]))


# ---- errors ----------------------------------------------------------------------------------
def test_errors_name_the_phrase_and_the_fix():
    vocab = Vocab.from_dict({0: "ab", 1: " ", 2: "a"}, eos_ids=[3])
    index = TokenIndex(vocab.token_bytes)
    with pytest.raises(SpecError, match="empty phrase"):
        compile_phrase("", index)
    with pytest.raises(SpecError, match="0x00"):
        compile_avoid("a\x00", index)
    with pytest.raises(UnsatisfiableConstraintError, match=r"'zz'.*0x7a"):
        compile_phrase("zz", index)
    with pytest.raises(UnsatisfiableConstraintError, match=r"'b' \(terms.tsv:3\).*word_boundary=False"):
        compile_phrase("b", index, source="terms.tsv:3")  # "b" only occurs right after "a"
    assert compile_phrase("b", index, word_boundary=False).n_states >= 2
    with pytest.raises(UnsatisfiableConstraintError, match="prefix 'ba'"):
        compile_prefix("ba", index)
    with pytest.raises(SpecError, match="empty prefix"):
        compile_prefix(b"", index)


def test_case_insensitive_uses_ascii_folding_only():
    vocab, index = byte_vocab(["É", "é", "Café", "CAFÉ", "café"])
    a = compile_phrase("café", index, case_sensitive=False)
    ids = {b: i for i, b in enumerate(vocab.token_bytes) if b}
    assert a.is_final(walk(a, [ids["Café".encode()]]))
    assert not a.is_final(walk(a, [ids["CAFÉ".encode()]]))  # É is not folded (documented limit)
    assert a.is_final(walk(a, [ids[b"C"], ids[b"A"], ids[b"F"], ids["é".encode()]]))
