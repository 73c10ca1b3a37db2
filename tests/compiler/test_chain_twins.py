"""Copies of a chain and their twins (`chain_levels.copies`, `chain_levels.twin_classes`): where a
chain has copies, only chain positions count as copies, and a level's classes stay whole only
where they are twin sets (one state per copy). A counted repetition of unbounded words
(``(\\S+\\s+){0,n}``) repeats the same states in every repetition without being a chain; grouped
as twins, it cost 1.9x the memory of its lift (Github_medium o21115). The token language must be
the plain lift's either way.

Oracles: the plain lift walked in lockstep with the grouped one (`shared_oracle`); the copies
counted by hand from the schema (its counted strings).
"""
from __future__ import annotations

import numpy as np
import pynini
import pytest
from shared_oracle import assert_same_language, fresh_walk_memos, lift_both
from test_chain_blocks import long_vocab

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift import chain_blocks, chain_levels
from fstbeam.compiler.hard.lift.token_fsa import _Arcs, _chains
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.contract.table_checks import check_hard

WORDS = "^(?:\\S+\\s+){0,9}\\S+$"


def words_beside_strings(strings: int) -> dict:
    """``strings`` counted strings (the copies of one chain) beside two fields of counted words."""
    props = {f"s{i}": {"type": "string", "maxLength": 14} for i in range(strings)}
    props |= {"w0": {"type": "string", "pattern": WORDS}, "w1": {"type": "string", "pattern": WORDS}}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch):
    monkeypatch.setattr(chain_blocks, "MIN_SHIFTED", 1)
    monkeypatch.setattr(chain_levels, "MIN_CHAIN_STATES", 1)
    fresh_walk_memos(monkeypatch)


def counted_copies(schema: dict, monkeypatch) -> list[int]:
    seen: list[int] = []
    copies = chain_levels.copies
    monkeypatch.setattr(chain_levels, "copies", lambda *a: seen.append(copies(*a)) or seen[-1])
    _chains(_Arcs.of(fst_to_dfa(pynini.connect(json_schema_fst(schema, max_depth=2)))), token_trie(long_vocab()))
    return seen


@pytest.mark.parametrize("strings", [2, 3])
def test_counted_words_are_no_copies(strings, monkeypatch):
    """The copies are the counted strings, not the repetitions of a word."""
    assert counted_copies(words_beside_strings(strings), monkeypatch) == [strings]


def test_without_counted_strings_repeated_states_are_the_copies(monkeypatch):
    """No chain has copies: the states alike in every repetition are counted instead (their twins
    pay where they are many, Github_hard o21192)."""
    seen = counted_copies(words_beside_strings(1), monkeypatch)
    assert seen[0] == 1 and seen[-1] > 2


@pytest.mark.parametrize("strings", [0, 1, 2])
def test_words_beside_strings_lift_to_the_plain_language(strings):
    vocab = long_vocab()
    dfa = fst_to_dfa(pynini.connect(json_schema_fst(words_beside_strings(strings), max_depth=2)))
    plain, grouped, (tp, tg) = lift_both(dfa, vocab)
    check_hard(tg, vocab.width, vocab.eos_ids, "grouped")
    assert_same_language(tp, tg, max_pairs=50_000)


def test_twin_classes_keep_only_twin_sets():
    """Class 0: one state of each of 2 copies (twins, whole). Class 1: three states of 3
    labels, more than the 2 copies (not twins: each state alone, `within_copies`). Class 2: two
    states of one copy (not twins; `within_copies` keeps the pair)."""
    cls = np.array([0, 0, 1, 1, 1, 2, 2])
    label = np.array([10, 11, 10, 11, 12, 10, 10])
    got = chain_levels.twin_classes(cls, label, copies=2)
    assert got[0] == got[1]
    assert len({int(got[2]), int(got[3]), int(got[4])}) == 3 and not {int(x) for x in got[2:5]} & {int(got[0])}
    assert got[5] == got[6] and got[5] not in set(got[:5].tolist())
