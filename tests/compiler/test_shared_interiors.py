"""Shared interiors (docs/tables.md): the token arcs of a recurring component (a JSON string's
interior) are stored once with relative next states, and each copy's links carry an offset and
an exit block. The token language must be exactly the plain lift's.

Oracle: the plain lift (`share_walks=False`, itself checked against regular expressions in
test_lift_exact.py), walked in lockstep with the shared one (`shared_oracle`): the same
finality, distances, allowed tokens and mask rows along every token path; pynini's
equivalence of the two OpenFst exports; an artifact round trip.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pynini
import pytest
from shared_oracle import assert_same_language, fresh_walk_memos, lift_both

import fstbeam
from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift import chain_blocks
from fstbeam.compiler.hard.lift.token_fsa import lift
from fstbeam.compiler.hard.tables import build_tables
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.compiler.structured.regex import regex_fst
from fstbeam.contract.compiled import load_constraints
from fstbeam.contract.table_checks import check_hard
from fstbeam.contract.vocab import Vocab
from fstbeam.errors import ArtifactCorruptError

PIECES = [chr(c) for c in range(32, 127)] + [
    '"a', "ab", '",', '":"', "é", "\\n", '"}', 'a"', "b\\", '{"', ' "x', '"]', "é\"", "\\u00", "bb", '"b":',
]
SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
     "required": ["a", "b"], "additionalProperties": False},
    {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}},
                                      "b": {"type": "array", "items": {"type": "string"}}, "c": {"type": "string"}},
     "required": ["a"], "additionalProperties": False},
    {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},  # free properties, any JSON
]


def vocab_of(byte_fallback: bool | str) -> Vocab:
    """Printable ASCII plus multi-character tokens; with ``byte_fallback`` every byte >= 0x80
    too (else the UTF-8 continuation states are dead at token level: no token starts there);
    ``"continuation"``: only the continuation bytes 0x80-0xBF (a continuation state is alive but
    no token ends after a lead byte: unreachable at token boundaries)."""
    high = {True: range(128, 256), False: range(0), "continuation": range(128, 192)}[byte_fallback]
    raw = [p.encode() for p in PIECES] + [bytes([c]) for c in high]
    return Vocab.from_dict(dict(enumerate(raw)), eos_ids=[len(raw)], name=f"interiors-{byte_fallback}")


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch):
    monkeypatch.setattr(chain_blocks, "MIN_SHIFTED", 10**9)  # interiors alone (with chains: test_chain_blocks.py)
    fresh_walk_memos(monkeypatch)


both = lift_both


def schema_dfa(schema):
    return fst_to_dfa(pynini.connect(json_schema_fst(schema, max_depth=2)))


@pytest.mark.parametrize("byte_fallback", [True, False, "continuation"])
@pytest.mark.parametrize("schema", SCHEMAS, ids=["two-strings", "array", "nested", "free"])
def test_schema_languages_are_the_plain_lift(schema, byte_fallback):
    vocab = vocab_of(byte_fallback)
    plain, shared, (tp, ts) = both(schema_dfa(schema), vocab)
    assert_same_language(tp, ts, max_pairs=20_000)
    if byte_fallback:  # each schema has two string interiors or more: they are shared
        # ("continuation": with members no token boundary reaches, kept to keep copies contiguous,
        # with their arcs: on a vocabulary this small they outweigh what sharing saves)
        assert ts.shared
        assert byte_fallback == "continuation" or len(shared.block_tokens) < len(plain.block_tokens)
    else:  # continuation members cannot finish: those copies fall back to absolute blocks
        assert not ts.shared


def test_regex_and_grammar_languages_are_the_plain_lift():
    vocab = vocab_of(True)
    # the start's own region recurs after the first ";": that copy stays absolute, the other is shared
    start_inside = fst_to_dfa(pynini.connect(regex_fst("[^;]*;[^;]*;")))
    _, _, (tp, ts) = both(start_inside, vocab)
    assert ts.shared
    assert_same_language(tp, ts)
    rx = fst_to_dfa(pynini.connect(regex_fst('"[^"]*"(,"[^"]*")*')))
    inner = pynini.union(*(pynini.accep(c, token_type="byte") for c in "ab\"é"))
    field = pynini.accep("<", token_type="byte") + pynini.closure(inner) + pynini.accep(">", token_type="byte")
    grammar = fst_to_dfa(pynini.connect(pynini.determinize((field + field + field).optimize()).minimize()))
    for dfa in (rx, grammar):
        _, _, (tp, ts) = both(dfa, vocab)
        assert_same_language(tp, ts)


def test_the_openfst_export_is_equivalent():
    vocab = vocab_of(True)
    _, shared, (tp, ts) = both(schema_dfa(SCHEMAS[0]), vocab)
    assert ts.shared and (shared.state_block_exit >= 0).any()  # tokens that close a string: exits

    def dfa(data: bytes) -> pynini.Fst:
        f = pynini.Fst.read_from_string(data)
        assert f.verify()
        return pynini.determinize(f.rmepsilon()).minimize()

    assert pynini.equivalent(dfa(tp.token_fst()), dfa(ts.token_fst()))


def test_the_export_arc_count_is_counted_without_building_it():
    vocab = vocab_of(True)
    for schema in SCHEMAS:
        _, _, (tp, ts) = both(schema_dfa(schema), vocab)
        for tables in (tp, ts):
            f = pynini.Fst.read_from_string(tables.token_fst())
            assert tables.token_fst_arcs() == sum(f.num_arcs(q) for q in f.states())
        assert ts.token_fst_arcs() > tp.token_fst_arcs()  # each copy of an interior written out


def test_an_artifact_leaves_out_an_export_over_the_arc_limit(tmp_path, monkeypatch, caplog):
    from fstbeam.contract import artifact

    vocab = vocab_of(True)
    cc = fstbeam.compile_constraints(json_schema=SCHEMAS[0], tokenizer=vocab)
    arcs = cc.hard.token_fst_arcs()
    caplog.set_level("INFO", logger=artifact.__name__)
    monkeypatch.setattr(artifact, "TOKEN_FST_MAX_RATIO", 10**6)
    for limit, written in ((arcs, True), (arcs - 1, False)):
        monkeypatch.setattr(artifact, "TOKEN_FST_MAX_ARCS", limit)
        path = tmp_path / f"{limit}.fstbeam"
        caplog.clear()
        cc.save(path)
        manifest = artifact.read_manifest(path)
        assert manifest["token_fst"] == {"arcs": arcs, "written": written}
        assert ("token.fst" in manifest["members"]) is written
        assert ("not written" in caplog.text) is not written
        back = load_constraints(path, tokenizer=vocab)
        assert_same_language(cc.hard, back.hard)  # the tables hold the language either way
        assert (back.token_fst is not None) is written


def test_an_artifact_leaves_out_an_export_many_times_its_tables(tmp_path, monkeypatch):
    from fstbeam.contract import artifact

    vocab = vocab_of(True)
    cc = fstbeam.compile_constraints(json_schema=SCHEMAS[0], tokenizer=vocab)
    arcs, stored = cc.hard.token_fst_arcs(), len(cc.hard.block_key)
    monkeypatch.setattr(artifact, "TOKEN_FST_MAX_ARCS", 10**9)
    monkeypatch.setattr(artifact, "TOKEN_FST_SMALL", 0)
    assert arcs > stored  # the interiors' copies
    for ratio, written in ((arcs // stored, arcs % stored == 0), (arcs // stored + 1, True)):
        monkeypatch.setattr(artifact, "TOKEN_FST_MAX_RATIO", ratio)
        cc.save(tmp_path / "r.fstbeam")
        assert artifact.read_manifest(tmp_path / "r.fstbeam")["token_fst"] == {"arcs": arcs, "written": written}


def test_artifact_round_trip_keeps_shared_tables(tmp_path):
    vocab = vocab_of(True)
    cc = fstbeam.compile_constraints(json_schema=SCHEMAS[0], tokenizer=vocab)
    assert cc.hard.shared
    path = tmp_path / "s.fstbeam"
    cc.save(path)
    back = load_constraints(path, tokenizer=vocab)
    for name, arr in cc.hard.arrays().items():
        assert np.array_equal(arr, back.hard.arrays()[name]), name
    assert_same_language(cc.hard, back.hard)
    plain = build_tables(lift(schema_dfa(SCHEMAS[0]), token_trie(vocab), vocab.width, share_walks=False), vocab)
    assert_same_language(plain, back.hard)


def test_the_loader_refuses_broken_shared_links():
    vocab = vocab_of(True)
    _, _, (_, ts) = both(schema_dfa(SCHEMAS[0]), vocab)
    V, S, NB = vocab.width, ts.num_states, len(ts.block_ptr) - 1
    check_hard(ts, V, vocab.eos_ids, "t.fstbeam")  # as built: accepted
    i = int(np.flatnonzero(ts.state_block_exit >= 0)[0])
    cases = {
        "offset takes": ("state_block_offset", S - 1),
        r"state_block_exit must lie in \[-1": ("state_block_exit", NB),
        "read as a link's own block": ("state_block_exit", int(ts.state_block_id[i])),
    }
    for message, (name, value) in cases.items():
        arr = getattr(ts, name).copy()
        arr[i] = value
        with pytest.raises(ArtifactCorruptError, match=message):
            check_hard(dataclasses.replace(ts, **{name: arr}), V, vocab.eos_ids, "t.fstbeam")


def test_a_lift_past_its_arc_budget_is_a_clear_error(monkeypatch):
    """A token automaton past `MAX_TOKEN_ARCS` stops the lift before it holds the arcs (a 1.3M-state
    schema went past 22 GB): the error names the constraint and how to make it smaller."""
    from fstbeam.compiler.hard.lift import token_fsa
    from fstbeam.errors import SpecError

    vocab = vocab_of(True)
    schema = {**SCHEMAS[0], "properties": {**SCHEMAS[0]["properties"], "z": {"type": "integer"}}}
    monkeypatch.setattr(token_fsa, "MAX_TOKEN_ARCS", 10)
    with pytest.raises(SpecError, match=r"more than 10 token arcs.*json_max_depth"):
        fstbeam.compile_constraints(json_schema=schema, tokenizer=vocab)
    with pytest.raises(SpecError, match=r"word list.*more than 10 token arcs.*smaller word list"):
        fstbeam.compile_constraints(words=["ab", "bb", "aab"], tokenizer=vocab)
    # strings counted to a length are named, longest first (each position holds every token)
    counted = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 40},
                                                "b": {"items": {"type": "string", "maxLength": 90}},
                                                "c": {"type": "string", "maxLength": 90, "pattern": "x"},
                                                "d": {"type": "string", "maxLength": 999}}}
    with pytest.raises(SpecError, match=r"json_max_depth.*/properties/b/items \(maxLength 90\), "
                                        r"/properties/a \(maxLength 40\) \(lower"):  # (c, d: not counted)
        fstbeam.compile_constraints(json_schema=counted, tokenizer=vocab)
    monkeypatch.setattr(token_fsa, "MAX_TOKEN_ARCS", 10**9)
    assert fstbeam.compile_constraints(json_schema=schema, tokenizer=vocab).hard.num_states > 0
