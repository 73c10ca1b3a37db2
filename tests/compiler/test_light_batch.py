"""A request's phrases compiled together (`light.batch.compile_phrases`) are exactly the automata
`compile_phrase` builds one by one: every table, the distances, the char DFA and the errors.

The one-by-one compile is the oracle here; tests/compiler/test_light.py checks it against regular
expressions and pynini acceptors.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fstbeam
from fstbeam.compiler.light.automaton import _phrase_candidates, compile_phrase
from fstbeam.compiler.light.batch import compile_phrases
from fstbeam.compiler.light.candidates import phrase_candidates
from fstbeam.compiler.light.memo import forget
from fstbeam.compiler.light.token_index import TokenIndex
from fstbeam.contract.vocab import Vocab

UNITS = [b"a", b"b", b"c", b" ", b".", b"-", b"A", b"1", "é".encode(), b"\xc3", b":", b"_", b"~"]
pieces = st.lists(st.sampled_from(UNITS), min_size=1, max_size=4).map(b"".join)


@st.composite
def vocabularies(draw) -> Vocab:
    tokens = list(dict.fromkeys([*draw(st.lists(st.sampled_from(UNITS), max_size=8)), *draw(st.lists(pieces, max_size=14))]))
    tokens += draw(st.lists(st.sampled_from(tokens), max_size=2)) if tokens else [b"a"]  # ids sharing bytes
    draw(st.randoms(use_true_random=False)).shuffle(tokens)
    return Vocab.from_dict(dict(enumerate(tokens)), eos_ids=[len(tokens)], width=len(tokens) + 2)


def assert_same(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "char_dfa":
            for g in dataclasses.fields(x):
                assert_equal_value(getattr(x, g.name), getattr(y, g.name), f"char_dfa.{g.name}")
        else:
            assert_equal_value(x, y, f.name)


def assert_equal_value(x, y, name: str) -> None:
    if isinstance(x, np.ndarray):
        assert isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y), name
        assert not y.flags.writeable, name
    else:
        assert x == y and type(x) is type(y), name


def outcome(fn):
    try:
        return fn()
    except Exception as exc:  # the error is part of the behaviour compared
        return exc


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vocab=vocabularies(), lits=st.lists(pieces, min_size=1, max_size=6), wb=st.booleans(), cs=st.booleans())
def test_batch_is_one_by_one(vocab, lits, wb, cs):
    index = TokenIndex.for_vocab(vocab)
    texts = [lit.decode("utf-8", "replace") for lit in lits]
    expect = [outcome(lambda t=t: compile_phrase(t, index, word_boundary=wb, case_sensitive=cs)) for t in texts]
    got = outcome(lambda: compile_phrases(texts, index, word_boundary=wb, case_sensitive=cs))
    errors = [e for e in expect if isinstance(e, Exception)]
    if errors:  # the first phrase that fails one by one also fails the batch
        assert type(got) is type(errors[0]), (texts, got)
        if len([e for e in expect if isinstance(e, Exception)]) == 1:
            assert str(got) == str(errors[0])
        return
    assert not isinstance(got, Exception), got
    assert len(got) == len(expect)
    for a, b in zip(expect, got):
        assert_same(a, b)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vocab=vocabularies(), lits=st.lists(st.lists(pieces, min_size=1, max_size=6).map(b"".join), min_size=1, max_size=5),
       wb=st.booleans(), cs=st.booleans(), nul=st.booleans())
def test_candidates_together_are_each_phrases(vocab, lits, wb, cs, nul):
    """Literals up to 48 bytes (longer than the 32-byte fixed keys too); tokens with NUL bytes."""
    if nul:  # "a\x00" pads like "a" in the fixed keys
        extra = [b"\x00", b"a\x00", b"a\x00b", b" \x00", b"\x00a"]
        vocab = Vocab.from_dict(dict(enumerate([*filter(None, vocab.token_bytes), *extra])), eos_ids=[len(vocab.token_bytes) + 5])
    index = TokenIndex.for_vocab(vocab)
    got = phrase_candidates(lits, index, word_boundary=wb, case_sensitive=cs)
    for lit, c in zip(lits, got):
        expect = _phrase_candidates(lit, index, word_boundary=wb, case_sensitive=cs)
        assert c.dtype == expect.dtype and c.tolist() == expect.tolist(), lit


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vocab=vocabularies(), data=st.data())
def test_containing_many_is_each_ids_containing(vocab, data):
    """Strings cut from the tokens themselves (so they occur), and random ones."""
    index = TokenIndex.for_vocab(vocab)
    texts = [b for b in vocab.token_bytes if b and len(b) >= 4]
    cut = [t[i:] for t in texts for i in range(len(t) - 3)] + data.draw(st.lists(st.lists(pieces, min_size=2, max_size=3).map(b"".join)))
    strings = [s for s in cut if len(s) >= 4][:12]
    flags = [(data.draw(st.booleans()), data.draw(st.booleans())) for _ in strings]
    owner, ids = index.containing_many(strings, [b for b, _ in flags], [a for _, a in flags])
    for i, (s, (b, a)) in enumerate(zip(strings, flags)):
        assert sorted(set(ids[owner == i].tolist())) == index.ids_containing(s, nonword_before=b, nonword_after=a).tolist()


def test_real_vocabulary_phrases(gemma):
    vocab, index = gemma
    texts = ["my family", "on sunday", "the big dog", "New York", "e-mail", "don't", "3 apples", "über",
             "a", "x" * 80, "the " * 30, "naïve café", "my family"]
    for wb, cs in ((True, True), (True, False), (False, True)):
        got = compile_phrases(texts, index, word_boundary=wb, case_sensitive=cs)
        for t, b in zip(texts, got):
            assert_same(compile_phrase(t, index, word_boundary=wb, case_sensitive=cs), b)


def test_with_request_is_the_same_through_the_batch():
    """The public call: a request's phrases (batched) give the tables of one-phrase requests."""
    vocab = Vocab.from_dict({i: p.encode() for i, p in enumerate(["the", " the", "cat", " cat", "s", " ", ".", "t", "c", "a"])},
                            eos_ids=[10])
    base = fstbeam.compile_constraints(words=["the", "cat", "cats"], tokenizer=vocab)
    forget()
    together = fstbeam.with_request(base, phrases=["the cat", "cats", "the"])
    forget()
    alone = [fstbeam.with_request(base, phrases=[p]).phrases[0] for p in ["the cat", "cats", "the"]]
    for a, b in zip(alone, together.phrases):
        assert_same(a, b)
    with pytest.raises(fstbeam.errors.UnsatisfiableConstraintError):
        fstbeam.with_request(base, phrases=["the cat", "dog"])
