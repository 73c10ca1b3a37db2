"""Remembered light automata (`compiler.light.memo`): the same tables as a fresh compile, one
object per (text, options, tokenizer), and a request that repeats a phrase gets the same one."""
from __future__ import annotations

import numpy as np

import fstbeam
from fstbeam.compiler.light import memo
from fstbeam.compiler.light.automaton import compile_avoid, compile_phrase
from fstbeam.compiler.light.token_index import TokenIndex
from fstbeam.contract.vocab import Vocab

PIECES = ["the", " the", "cat", " cat", "s", " ", ".", "t", "h", "e", "c", "a", " c", "at"]


def _index():
    return TokenIndex.for_vocab(Vocab.from_dict({i: p.encode() for i, p in enumerate(PIECES)}, eos_ids=[len(PIECES)]))


def _same(a, b):
    assert a.kind == b.kind and a.text == b.text and a.start == b.start
    for k, v in a.tables().items():
        assert np.array_equal(v, b.tables()[k]), k
    assert np.array_equal(a.dist, b.dist)


def test_remembered_equals_fresh():
    index = _index()
    for text in ("the cat", "cat", "at", "s."):
        for wb in (True, False):
            for cs in (True, False):
                _same(memo.light_phrase(text, index, word_boundary=wb, case_sensitive=cs),
                      compile_phrase(text, index, word_boundary=wb, case_sensitive=cs))
                _same(memo.light_avoid(text, index, word_boundary=wb, case_sensitive=cs, source="s"),
                      compile_avoid(text, index, word_boundary=wb, case_sensitive=cs, source="s"))


def test_one_object_per_key():
    index = _index()
    a = memo.light_phrase("the cat", index)
    assert memo.light_phrase("the cat", index) is a
    assert memo.light_phrase("the cat", index, word_boundary=False) is not a
    assert memo.light_avoid("the cat", index) is not a and memo.light_avoid("the cat", index).kind == "avoid"
    long = "cat " * (memo.MAX_BYTES // 4 + 1)
    assert memo.light_phrase(long, index) is not memo.light_phrase(long, index)  # never kept


def test_requests_share_the_automaton():
    v = Vocab.from_dict({i: p.encode() for i, p in enumerate(PIECES)}, eos_ids=[len(PIECES)])
    base = fstbeam.compile_constraints(words=["the", "cat", "cats"], tokenizer=v)
    one = fstbeam.with_request(base, phrases=["the cat"])
    two = fstbeam.with_request(base, phrases=["the cat"], avoid=["cats"])
    assert one.phrases[-1] is two.phrases[-1]
    assert [p.text for p in two.avoid] == ["cats"]


def test_forget_drops_them():
    index = _index()
    a = memo.light_phrase("the cat", index)
    memo.forget()
    b = memo.light_phrase("the cat", index)
    assert b is not a
    _same(a, b)
