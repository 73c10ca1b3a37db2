"""Rows of loops (`loop_rows`): a pattern of counted words (``^(?:\\S+\\s+){0,4}\\S+$``) is a row
of strongly connected regions, one per word and gap. Where the row recurs (two fields, an array's
items) and the tokenizer has many tokens that cross a gap, the lift takes it as one region, so a
token that crosses into a later word is stored once for every copy instead of once per copy; a
row met once, or on a tokenizer with few such tokens, keeps its regions. The token language must
be the plain lift's either way.

Oracles: the plain lift (no shared walks) walked in lockstep with the shared one
(`shared_oracle`); the rows counted by hand from the schema (its fields of counted words).
"""
from __future__ import annotations

import numpy as np
import pynini
import pytest
from shared_oracle import assert_same_language, fresh_walk_memos, lift_both

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift import loop_rows
from fstbeam.compiler.hard.lift.token_fsa import lift
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.contract.table_checks import check_hard
from fstbeam.contract.vocab import Vocab

WORDS = "^(?:\\S+\\s+){0,4}\\S+$"
# a few tokens that cross word gaps (" ab", "ab cd") beside every single byte, so any text is spelled
PIECES = [b" ab", b"ab cd", b" a b", b"abc", b"a  b", b"ab\"", b" ab\",", b"\",\"", b"abcdef", b"\xc3\xa9 a"]
# as a SentencePiece vocabulary: most tokens begin a word (" x", " xy")
SPACED = [f" {a}{b}".encode() for a in "abcdefghijklmnopqrstuvwxyz" for b in ["", *"abcdefghijklmno"]]


def vocab(spaced: bool = True) -> Vocab:
    raw = [bytes([c]) for c in range(1, 256)] + PIECES + (SPACED if spaced else [])
    return Vocab.from_dict(dict(enumerate(raw)), eos_ids=[len(raw)], name=f"loop-rows-{spaced}")


def fields(n: int, pattern: str = WORDS) -> dict:
    props = {f"w{i}": {"type": "string", "pattern": pattern} for i in range(n)}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def items(n: int) -> dict:
    return {"type": "array", "items": {"type": "string", "pattern": WORDS}, "maxItems": n}


def dfa_of(schema: dict):
    return fst_to_dfa(pynini.connect(json_schema_fst(schema, max_depth=2)))


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    fresh_walk_memos(monkeypatch)


def merged_rows(schema: dict, monkeypatch, spaced: bool = True) -> list[list[int]]:
    """Per lift of ``schema``: for each region `loop_rows.merged` made of a row, how many regions
    it joined."""
    seen: list[list[int]] = []
    merged = loop_rows.merged

    def spy(comp, row, keys_of, worth):
        out = merged(comp, row, keys_of, worth)
        joined = {}
        for r, c in zip(out.tolist(), comp.tolist()):
            if r >= len(row):
                joined.setdefault(r, set()).add(c)
        seen.append(sorted(len(x) for x in joined.values()))
        return out
    monkeypatch.setattr(loop_rows, "merged", spy)
    v = vocab(spaced)
    lift(dfa_of(schema), token_trie(v), v.width)
    return seen


@pytest.mark.parametrize("schema, copies", [(fields(2), 2), (fields(3), 3), (items(3), 3)], ids=["2 fields", "3 fields", "3 items"])
def test_a_recurring_row_is_one_region_per_copy(schema, copies, monkeypatch):
    (joined,) = merged_rows(schema, monkeypatch)
    # one region per copy, each the 9 loops of 5 words and their 4 gaps
    assert joined == [9] * copies


def test_a_row_met_once_keeps_its_regions(monkeypatch):
    assert merged_rows(fields(1), monkeypatch) == [[]]


def test_a_row_stays_apart_where_few_tokens_cross_a_gap(monkeypatch):
    """10 of 275 tokens hold a space: three copies would store every position's tokens once to
    save 3 x ~10 crossing tokens per position (`loop_rows.pays`)."""
    v = vocab(spaced=False)
    assert loop_rows.token_share(token_trie(v), frozenset({0x20})) < 1 / 3
    assert merged_rows(fields(3), monkeypatch, spaced=False) == [[]]


def test_token_share_counts_tokens_holding_a_join_byte():
    v = vocab()
    share = loop_rows.token_share(token_trie(v), frozenset({0x20}))
    texts = [bytes([c]) for c in range(1, 256)] + PIECES + SPACED  # (the vocabulary's text tokens)
    assert share == pytest.approx(sum(b" " in x for x in texts) / len(texts))
    tabs = loop_rows.token_share(token_trie(v), frozenset({0x09, 0x61}))
    assert tabs == pytest.approx(sum(b"\t" in x or b"a" in x for x in texts) / len(texts))


def test_rows_of_other_lengths_are_other_shapes(monkeypatch):
    """A 5-word and a 3-word field: two rows, each met once, so neither is merged."""
    schema = fields(1)
    schema["properties"]["x"] = {"type": "string", "pattern": "^(?:\\S+\\s+){0,2}\\S+$"}
    schema["required"].append("x")
    assert merged_rows(schema, monkeypatch) == [[]]


@pytest.mark.parametrize("schema", [fields(1), fields(2), fields(3), items(3)], ids=["1 field", "2 fields", "3 fields", "3 items"])
@pytest.mark.parametrize("spaced", [True, False], ids=["spaced", "sparse"])
def test_rows_lift_to_the_plain_language(schema, spaced):
    v = vocab(spaced)
    plain, shared, (tp, ts) = lift_both(dfa_of(schema), v)
    check_hard(ts, v.width, v.eos_ids, "shared")
    assert_same_language(tp, ts, max_pairs=50_000)


def test_rows_store_fewer_token_arcs(monkeypatch):
    """Three fields: the tokens that cross a gap are stored once, not per field."""
    v = vocab()
    trie = token_trie(v)
    dfa = dfa_of(fields(3))
    with_rows = lift(dfa, trie, v.width)
    fresh_walk_memos(monkeypatch)
    monkeypatch.setattr(loop_rows, "candidates", lambda *a: None)
    without = lift(dfa, trie, v.width)
    assert len(with_rows.block_tokens) < len(without.block_tokens)


def _comp_graph(arcs: list[tuple[int, int, int]], comp: list[int], wide: list[int]):
    src, dst, byte = (np.array(x, np.int64) for x in zip(*arcs))
    o = np.lexsort((byte, src))
    w = np.zeros(len(comp), bool)
    w[wide] = True
    return len(comp), src[o], byte[o], dst[o], np.array(comp, np.int64), w


def test_candidates_join_cyclic_regions_from_one_source():
    # regions 0 -> 1 -> 2, each a state looping on itself, joined on 'a' / ' ' (one row)
    arcs = [(0, 0, 0x61), (0, 1, 0x20), (1, 1, 0x20), (1, 2, 0x61), (2, 2, 0x61)]
    found = loop_rows.candidates(*_comp_graph(arcs, [0, 1, 2], wide=[0]))
    assert found is not None
    row, joins = found
    assert row[0] == row[1] == row[2] >= 0
    assert joins == {int(row[0]): frozenset({0x20, 0x61})}  # each state leaves on one byte


@pytest.mark.parametrize("arcs", [
    [(0, 0, 0x61), (0, 1, 0x22), (1, 1, 0x61), (2, 2, 0x61)],  # joined on a quote
    [(0, 0, 0x61), (0, 1, 0x20), (1, 2, 0x61), (2, 2, 0x61)],  # through a region that does not loop
    [(0, 0, 0x61), (0, 2, 0x20), (1, 1, 0x61), (1, 2, 0x20), (2, 2, 0x61)],  # two sources
], ids=["quote", "no loop", "two sources"])
def test_candidates_leave_other_regions_apart(arcs):
    assert loop_rows.candidates(*_comp_graph(arcs, [0, 1, 2], wide=[0, 1, 2])) is None


def test_a_row_without_a_wide_state_is_no_row():
    arcs = [(0, 0, 0x61), (0, 1, 0x20), (1, 1, 0x20), (1, 2, 0x61), (2, 2, 0x61)]
    assert loop_rows.candidates(*_comp_graph(arcs, [0, 1, 2], wide=[])) is None
