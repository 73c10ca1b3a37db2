"""TokenIndex queries against brute force over the token list."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstbeam.compiler.light.token_index import IS_WORD_BYTE, TokenIndex
from fstbeam.contract.vocab import Vocab

HYP = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def word(b: int) -> bool:
    return (0x30 <= b <= 0x39) or (0x41 <= b <= 0x5A) or (0x61 <= b <= 0x7A) or b >= 0x80 or chr(b) in "'-"


def test_word_bytes():
    assert [b for b in range(256) if IS_WORD_BYTE[b]] == [b for b in range(256) if word(b)]


# bytes from every non-word range, word bytes, UTF-8 pieces and NUL
ALPHABET = [b"a", b"b", b"A", b"1", b" ", b".", b":", b"_", b"~", b"\x00", b"\xc3", b"\xa9", b"\xff"]
strings = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=5).map(b"".join)


@st.composite
def token_tables(draw):
    toks = draw(st.lists(st.one_of(strings, st.none()), min_size=1, max_size=25))
    toks += draw(st.lists(st.sampled_from(toks), max_size=3))  # ids sharing bytes
    return toks


def brute(toks, pred):
    return [i for i, t in enumerate(toks) if t and pred(t)]


def occurrences(t: bytes, s: bytes):
    return [k for k in range(len(t) - len(s) + 1) if t[k : k + len(s)] == s]


@HYP
@given(toks=token_tables(), queries=st.lists(strings, min_size=1, max_size=6))
def test_queries_match_brute_force(toks, queries):
    ix = TokenIndex(toks)
    for s in queries:
        assert ix.ids_equal(s).tolist() == brute(toks, lambda t: t == s)
        assert ix.ids_starting_with(s).tolist() == brute(toks, lambda t: t.startswith(s))
        assert ix.ids_ending_with(s).tolist() == brute(toks, lambda t: t.endswith(s))
        assert ix.ids_starting_with(s, followed_by_nonword=True).tolist() == brute(
            toks, lambda t: t.startswith(s) and len(t) > len(s) and not word(t[len(s)])
        )
        assert ix.ids_ending_with(s, preceded_by_nonword=True).tolist() == brute(
            toks, lambda t: t.endswith(s) and len(t) > len(s) and not word(t[-len(s) - 1])
        )
        assert ix.ids_substrings_of(s).tolist() == brute(toks, lambda t: t in s)
        for before in (False, True):
            for after in (False, True):

                def ok(t, before=before, after=after):
                    return any(
                        (not before or k == 0 or not word(t[k - 1]))
                        and (not after or k + len(s) == len(t) or not word(t[k + len(s)]))
                        for k in occurrences(t, s)
                    )

                assert ix.ids_containing(s, nonword_before=before, nonword_after=after).tolist() == brute(toks, ok)
        tok, off = ix.occurrences(s)
        got = sorted(zip(tok.tolist(), off.tolist()))
        assert got == sorted((i, k) for i, t in enumerate(toks) if t for k in occurrences(t, s))


def test_edge_bytes():
    """0xFF after the query (range upper bound) and NUL inside tokens and queries."""
    toks = [b"a\xff", b"a\xff\xff", b"a", b"b", b"\x00", b"a\x00", b"\xffa", b"a\x00b"]
    ix = TokenIndex(toks)
    assert ix.ids_starting_with(b"a").tolist() == [0, 1, 2, 5, 7]
    assert ix.ids_starting_with(b"a\xff").tolist() == [0, 1]
    assert ix.ids_ending_with(b"a").tolist() == [2, 6]
    assert ix.ids_ending_with(b"a", preceded_by_nonword=True).tolist() == []  # 0xFF is a word byte
    assert ix.ids_containing(b"\x00").tolist() == [4, 5, 7]
    assert ix.ids_containing(b"a\x00b").tolist() == [7]
    assert ix.ids_containing(b"\x00b").tolist() == [7]  # never across the blob separator
    assert ix.ids_equal(b"\x00").tolist() == [4]
    empty = TokenIndex([None])  # NUL queries must not match the separators and padding
    assert empty.ids_containing(b"\x00\x00\x00", nonword_before=True, nonword_after=True).tolist() == []
    assert empty.occurrences(b"\x00")[0].tolist() == []


@HYP
@given(toks=token_tables())
def test_arrays(toks):
    ix = TokenIndex(toks)
    V = len(toks)
    assert ix.width == V and ix.token_class.dtype == np.int8 and ix.token_class.shape == (V,)
    for i, t in enumerate(toks):
        expect = 4 if not t else 2 * (not word(t[0])) + (not word(t[-1]))
        assert ix.token_class[i] == expect
        assert ix.lengths[i] == len(t or b"")
        assert bytes(ix.padded[i, : ix.lengths[i]]) == (t or b"") and not ix.padded[i, ix.lengths[i] :].any()
    W = (V + 31) // 32
    assert ix.class_masks.dtype == np.int32 and ix.class_masks.shape == (4, W)
    for c in range(4):  # unpack bit j of word i = token 32*i + j, independently of the packer
        words = ix.class_masks[c].astype(np.int64) & 0xFFFFFFFF
        members = [32 * i + j for i in range(W) for j in range(32) if (int(words[i]) >> j) & 1]
        assert members == [i for i in range(V) if ix.token_class[i] == c]
    assert ix.bytes_present.tolist() == [any(t and b in t for t in toks) for b in range(256)]


def test_lowercased_twin_folds_ascii_only():
    toks = [b"Hello", "Édith".encode(), b"hello", None, b"WORLD!"]
    ix = TokenIndex(toks)
    low = ix.lowercased()
    assert low is ix.lowercased() and low.folded and not ix.folded
    assert low.ids_equal(b"hello").tolist() == [0, 2]
    assert low.ids_starting_with("é".encode()).tolist() == []  # É is not folded
    assert low.ids_starting_with("É".encode()).tolist() == [1]
    assert low.ids_ending_with(b"d!").tolist() == [4]
    assert low.token_class is ix.token_class


def test_for_vocab_caches_by_fingerprint():
    TokenIndex.clear_cache()
    a = Vocab.from_dict({0: "a", 1: "b c", 2: ". "}, eos_ids=[3])
    b = Vocab.from_dict({0: "a", 1: "b c", 2: ". "}, eos_ids=[3])
    c = Vocab.from_dict({0: "a", 1: "b c", 2: "."}, eos_ids=[3])
    assert TokenIndex.for_vocab(a) is TokenIndex.for_vocab(b)
    assert TokenIndex.for_vocab(c) is not TokenIndex.for_vocab(a)
    assert TokenIndex.for_vocab(a).fingerprint == a.fingerprint


@pytest.mark.integration
def test_gemma_index(gemma):
    vocab, ix = gemma
    tb = vocab.token_bytes
    assert len(ix.ids_equal(b" ")) == 2 and len(ix.ids_equal(b"A")) == 2  # duplicates are kept
    for s in [b" York", b"mail", b"++", "ï".encode(), b"e"]:
        assert ix.ids_containing(s).tolist() == brute(tb, lambda t: s in t)
        assert ix.ids_ending_with(s, preceded_by_nonword=True).tolist() == brute(
            tb, lambda t: t.endswith(s) and len(t) > len(s) and not word(t[-len(s) - 1])
        )
        assert ix.ids_starting_with(s).tolist() == brute(tb, lambda t: t.startswith(s))
    np.testing.assert_array_equal(
        np.bincount(ix.token_class, minlength=5)[4], sum(1 for t in tb if not t)
    )
