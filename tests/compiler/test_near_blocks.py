"""Near-interior blocks (docs/tables.md, "Near-interior blocks"): a block whose state reads
nearly like a shared interior's (a declared property name's prefix inside the free names of an
object) is linked to that interior's block, its exit block holding only the tokens whose next
state differs, read first. The token language must be exactly the plain lift's.

Oracle: the plain lift (`share_walks=False`), walked in lockstep with the shared one
(`shared_oracle`: finality, distances, allowed tokens, next states and mask rows along every
token path); pynini's equivalence of the OpenFst exports; an artifact round trip.
"""
from __future__ import annotations

import numpy as np
import pynini
import pytest
from shared_oracle import assert_same_language, fresh_walk_memos, lift_both

import fstbeam
from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift import chain_blocks, near_blocks
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.compiler.structured.regex import regex_fst
from fstbeam.contract.compiled import load_constraints
from fstbeam.contract.hard import HardTables, exit_overrides
from fstbeam.contract.vocab import Vocab

# printable ASCII, the declared names' pieces (a token that follows a name on, one that leaves it,
# one that closes a declared name and one that closes a free name: the exits the walks part on)
PIECES = [chr(c) for c in range(32, 127)] + [
    "ti", "tit", "title", "tle", "les", "ip", "tip", "tips", "xt", '"t', '":', '",', '"}', "\\u00", "\\u0074", "é", "ab",
    'p"', 'e":', 'ip":', 's":', 'x":', "pa", "pet", "ex", "lex", "sa", "ba",
]
# objects that allow undeclared properties (any name but the declared ones), in two copies or more
SCHEMAS = {
    "two-names": {"type": "object", "properties": {"title": {"type": "string"}, "tip": {"type": "integer"}}},
    "nested": {"type": "object", "properties": {"ti": {"type": "object", "properties": {"title": {"type": "string"}}},
                                                "tle": {"type": "string"}}},
    "array": {"type": "array", "maxItems": 2,
              "items": {"type": "object", "properties": {"tips": {"type": "string"}, "t": {"type": "boolean"}}}},
}


def vocab_of(byte_fallback: bool | str) -> Vocab:
    """``byte_fallback``: every byte >= 0x80 is a token too; False: none (the UTF-8 continuation
    states cannot finish: copies fall back to absolute blocks, the near blocks with them);
    ``"continuation"``: only the continuation bytes."""
    high = {True: range(128, 256), False: range(0), "continuation": range(128, 192)}[byte_fallback]
    raw = [p.encode() for p in PIECES] + [bytes([c]) for c in high]
    return Vocab.from_dict(dict(enumerate(raw)), eos_ids=[len(raw)], name=f"near-{byte_fallback}")


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch):
    monkeypatch.setattr(chain_blocks, "MIN_SHIFTED", 10**9)  # interiors and near blocks alone
    fresh_walk_memos(monkeypatch)


@pytest.fixture
def found(monkeypatch):
    """Every `near_blocks.find` result of the test, and the candidates it was given."""
    seen: dict[str, list] = {"near": [], "candidates": []}
    find, candidates = near_blocks.find, near_blocks._candidates

    def spy_find(*a, **k):
        out = find(*a, **k)
        seen["near"].append(out)
        return out

    def spy_candidates(*a, **k):
        out = candidates(*a, **k)
        seen["candidates"].append(out)
        return out

    monkeypatch.setattr(near_blocks, "find", spy_find)
    monkeypatch.setattr(near_blocks, "_candidates", spy_candidates)
    return seen


def schema_dfa(schema):
    return fst_to_dfa(pynini.connect(json_schema_fst(schema, max_depth=2)))


def overriding_links(h: HardTables) -> int:
    NB = len(h.block_ptr) - 1
    tokens = h.block_key - np.repeat(np.arange(NB, dtype=np.int64), np.diff(h.block_ptr)) * h.width
    return int(exit_overrides(np.asarray(h.state_block_id, np.int64), np.asarray(h.state_block_exit, np.int64),
                           h.block_ptr, tokens).sum())


@pytest.mark.parametrize("byte_fallback", [True, False, "continuation"])
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_declared_names_read_the_free_names_interior(name, byte_fallback, found, monkeypatch):
    vocab = vocab_of(byte_fallback)
    plain, shared, (tp, ts) = lift_both(schema_dfa(SCHEMAS[name]), vocab)
    assert_same_language(tp, ts, max_pairs=50_000)
    near = [n for n in found["near"] if n is not None]
    assert near and sum(len(n.block) for n in near) >= 2
    if byte_fallback is False:  # the copies fall back to absolute blocks: the near blocks' too
        assert not ts.shared
        return
    assert overriding_links(ts) > 0  # an exit block that overrides tokens of its interior block
    # and they store fewer arcs than the same lift without them
    monkeypatch.setattr(near_blocks, "MIN_BYTES", 10**6)
    fresh_walk_memos(monkeypatch)
    _, without, (_, tw) = lift_both(schema_dfa(SCHEMAS[name]), vocab)
    assert overriding_links(tw) == 0
    assert len(shared.block_tokens) < len(without.block_tokens)


def test_a_state_that_cannot_read_an_interior_token_is_walked_whole(found):
    """After ``"t`` the string goes on like the interior ``[^"]*`` but cannot read ``i``: linked to
    the interior's block it would allow the token ``ti``, so its block is walked whole (and the
    language stays the plain lift's)."""
    vocab = vocab_of(True)
    field = '"(t[^"i]|[^"t])[^"]*"'
    _, _, (tp, ts) = lift_both(fst_to_dfa(pynini.connect(regex_fst(f"{field},{field}"))), vocab)
    assert_same_language(tp, ts)
    b0 = np.concatenate([c[0] for c in found["candidates"]])
    kept = np.concatenate([n.block for n in found["near"] if n is not None] or [np.zeros(0, np.int64)])
    assert len(b0) and not np.isin(b0, kept).any()  # every candidate refused
    assert overriding_links(ts) == 0
    # without the ``i`` the same states are linked
    found["candidates"].clear()
    found["near"].clear()
    free = '"(t[^"]|[^"t])[^"]*"'
    _, _, (tp, ts) = lift_both(fst_to_dfa(pynini.connect(regex_fst(f"{free},{free}"))), vocab)
    assert_same_language(tp, ts)
    assert any(n is not None for n in found["near"]) and overriding_links(ts) > 0


def test_a_next_state_only_overridden_tokens_reach_is_not_linked(found):
    """From ``T`` the tokens starting with ``b`` are ``b`` and ``ba``, and ``"b`` overrides ``b``.
    With ``ba`` filtered out (``allowed_tokens``), the interior's next state ``T`` would count as
    reached from ``"b`` through the link (a distance one too short): that block is walked whole.
    With ``ba`` allowed, it is linked."""
    from fstbeam.compiler.hard.lift.token_fsa import lift
    from fstbeam.compiler.hard.tables import build_tables
    from fstbeam.compiler.hard.token_trie import token_trie

    vocab = vocab_of(True)
    field = '"(b[^"]|[^"b])[^"]*"'
    dfa, trie = fst_to_dfa(pynini.connect(regex_fst(f"{field},{field}"))), token_trie(vocab)
    ba = PIECES.index("ba")
    for allowed, linked in ((np.delete(np.arange(vocab.width), ba), False), (None, True)):
        found["near"].clear()
        plain = lift(dfa, trie, vocab.width, allowed_tokens=allowed, share_walks=False)
        shared = lift(dfa, trie, vocab.width, allowed_tokens=allowed, share_walks=True)
        tp, ts = (build_tables(f, vocab, dense_min=3, sparse_max=4) for f in (plain, shared))
        assert_same_language(tp, ts)
        assert any(n is not None for n in found["near"]) is linked


def test_the_openfst_export_is_equivalent_and_counted():
    vocab = vocab_of(True)
    _, _, (tp, ts) = lift_both(schema_dfa(SCHEMAS["two-names"]), vocab)
    assert overriding_links(ts) > 0

    def dfa(data: bytes) -> pynini.Fst:
        f = pynini.Fst.read_from_string(data)
        assert f.verify()
        return pynini.determinize(f.rmepsilon()).minimize()

    assert pynini.equivalent(dfa(tp.token_fst()), dfa(ts.token_fst()))
    f = pynini.Fst.read_from_string(ts.token_fst())
    assert ts.token_fst_arcs() == sum(f.num_arcs(q) for q in f.states())
    # deterministic: no state has two arcs with one token label (an overridden token is read once)
    for q in f.states():
        labels = [a.ilabel for a in f.arcs(q) if a.ilabel]
        assert len(labels) == len(set(labels)), q


def test_artifact_round_trip_keeps_overriding_exits(tmp_path):
    vocab = vocab_of(True)
    cc = fstbeam.compile_constraints(json_schema=SCHEMAS["two-names"], tokenizer=vocab)
    assert overriding_links(cc.hard) > 0
    path = tmp_path / "n.fstbeam"
    cc.save(path)
    back = load_constraints(path, tokenizer=vocab)  # the loader's checks accept an overriding exit
    for name, arr in cc.hard.arrays().items():
        assert np.array_equal(arr, back.hard.arrays()[name]), name
    assert_same_language(cc.hard, back.hard)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_token_filter_keeps_the_plain_language(seed, found):
    """With ``allowed_tokens`` (a tokenizer's canonical tokens) the near blocks' own tokens, the
    interior's and the distance check all read the filter: still the plain lift's language."""
    from fstbeam.compiler.hard.lift.token_fsa import lift
    from fstbeam.compiler.hard.tables import build_tables
    from fstbeam.compiler.hard.token_trie import token_trie

    vocab = vocab_of(True)
    rng = np.random.default_rng(seed)
    allowed = np.flatnonzero(rng.random(vocab.width) < 0.8)
    trie, dfa = token_trie(vocab), schema_dfa(SCHEMAS["two-names"])
    plain = lift(dfa, trie, vocab.width, allowed_tokens=allowed, share_walks=False)
    shared = lift(dfa, trie, vocab.width, allowed_tokens=allowed, share_walks=True)
    tp, ts = (build_tables(f, vocab, dense_min=3, sparse_max=4) for f in (plain, shared))
    assert_same_language(tp, ts, max_pairs=50_000)
    assert any(n is not None for n in found["near"])
