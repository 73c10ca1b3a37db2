"""Shared interiors on the real Gemma 3 tokenizer (262,144 ids): development-sample schemas with
free properties (strings at every depth) lift to exactly the plain lift's token language, with
far fewer stored arcs (and near-interior blocks for the declared names among free ones).
Oracle: the plain lift, walked in lockstep (`shared_oracle`)."""
from __future__ import annotations

import json
import weakref
from pathlib import Path

import pynini
import pytest
from shared_oracle import assert_same_language_fast

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift import walk_memo
from fstbeam.compiler.hard.lift.token_fsa import lift
from fstbeam.compiler.hard.tables import build_tables
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.contract.hard import exit_overrides

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "jsonschemabench_dev"
NAMES = ["Glaiveai2K---calculate_area_d97996ce", "Github_easy---o21083"]


@pytest.fixture(scope="module")
def gemma():
    import fstbeam

    cc = fstbeam.compile_constraints(words=["warm"], tokenizer="default")
    from fstbeam.compiler.hard.token_trie import token_trie

    return cc.vocab, token_trie(cc.vocab)


@pytest.mark.parametrize("name", NAMES)
def test_gemma_schema_lifts_to_the_plain_language(gemma, name, monkeypatch):
    path = SAMPLE / f"{name}.json"
    if not path.exists():
        pytest.skip(f"the development sample is not at {SAMPLE}")
    monkeypatch.setattr(walk_memo, "_SHARED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(walk_memo, "_ONCE", weakref.WeakKeyDictionary())
    vocab, trie = gemma
    dfa = fst_to_dfa(pynini.connect(json_schema_fst(json.loads(path.read_text())["schema"])))
    plain = lift(dfa, trie, vocab.width, share_walks=False)
    shared = lift(dfa, trie, vocab.width, share_walks=True)
    assert len(shared.block_tokens) * 5 < len(plain.block_tokens)
    tables = build_tables(shared, vocab)
    assert_same_language_fast(build_tables(plain, vocab), tables)
    if name.startswith("Glaiveai2K---calculate_area"):  # its free-property names: near-interior blocks
        tokens = tables.block_key % tables.width
        assert exit_overrides(tables.state_block_id.astype(int), tables.state_block_exit.astype(int), tables.block_ptr, tokens).any()
