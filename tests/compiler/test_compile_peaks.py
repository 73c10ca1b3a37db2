"""The pieces that lower a large schema's compile peak (issue 36, "every schema in 1 GB") give
what the whole-column forms gave: the OpenFst form written a slice of states at a time
(`vector_fst`), the rank lookups built a slice of arcs at a time and shared by the inside walk's
arcs (`_Arcs.with_dst`), the automaton's OpenFst bytes read back from a temporary file
(`automaton._openfst_bytes`), and a compile's character automaton written from its arcs after
the tables (the language OpenFst reads back is the schema's).

Oracles: the one-slice forms, pynini's own writer and reader, and pynini's equivalence."""
from __future__ import annotations

import tempfile

import numpy as np
import pynini
import pytest

import fstbeam
from fstbeam.compiler.char_dfa import fst_bytes_to_arcs, fst_to_dfa
from fstbeam.compiler.hard import array_ops, automaton
from fstbeam.compiler.hard.token_fsa import _Arcs
from fstbeam.compiler.structured.json_schema import json_schema_fst
from fstbeam.contract.vocab import Vocab
from fstbeam.fst import vector_fst


def _random_acceptor(seed: int):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(1, 60))
    counts = rng.integers(0, 6, S)
    A = int(counts.sum())
    return rng, S, counts, rng.random(S) < 0.3, rng.integers(1, 256, A), rng.integers(0, S, A)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("slice_arcs", [1, 3, 7])
def test_the_openfst_form_in_slices_is_the_whole_one(seed, slice_arcs, monkeypatch):
    rng, S, counts, final, label, nxt = _random_acceptor(seed)
    A = len(nxt)
    cut = sorted(rng.integers(0, A + 1, 2).tolist())
    parts = [(label[:cut[0]], nxt[:cut[0]]), (7, nxt[cut[0]:cut[1]]), (label[cut[1]:], nxt[cut[1]:])]
    whole = vector_fst.vector_fst_bytes_by_count(S, 0, final, counts, parts)
    monkeypatch.setattr(vector_fst, "_SLICE_ARCS", slice_arcs)
    assert vector_fst.vector_fst_bytes_by_count(S, 0, final, counts, parts) == whole
    # and OpenFst reads it as the automaton it describes
    fst = pynini.Fst.read_from_string(whole)
    assert fst.num_states() == S and sum(fst.num_arcs(s) for s in fst.states()) == A
    labels = np.concatenate([label[:cut[0]], np.full(cut[1] - cut[0], 7), label[cut[1]:]])
    got = [(s, a.ilabel, a.nextstate) for s in fst.states() for a in fst.arcs(s)]
    assert got == list(zip(np.repeat(np.arange(S), counts).tolist(), labels.tolist(), nxt.tolist()))
    zero = pynini.Weight.zero(fst.weight_type())
    assert [fst.final(s) != zero for s in fst.states()] == final.tolist()


def test_too_few_arcs_is_an_error():
    with pytest.raises(ValueError, match="arcs given"):
        vector_fst.vector_fst_bytes_by_count(2, 0, np.zeros(2, bool), np.array([1, 1]), [(np.array([5]), np.array([1]))])


@pytest.mark.parametrize("slice_arcs", [1, 5, 64, 1 << 20])
def test_rank_bits_in_slices_are_the_whole_ones(slice_arcs, monkeypatch):
    rng = np.random.default_rng(slice_arcs)
    S = 300
    cells = np.unique(rng.integers(0, S * 256, S * 40))
    src, byte = cells // 256, cells % 256
    monkeypatch.setattr(array_ops, "RANK_SLICE", 1 << 30)
    want_bits, want_before = array_ops.rank_bits(S, src, byte)
    monkeypatch.setattr(array_ops, "RANK_SLICE", slice_arcs)
    bits, before = array_ops.rank_bits(S, src, byte)
    assert np.array_equal(bits, want_bits) and np.array_equal(before, want_before)
    # a bit per arc, the arcs before each word counted
    assert int(np.bitwise_count(bits).sum()) == len(cells)
    assert np.array_equal(before[cells >> 6], np.searchsorted(cells, (cells >> 6) << 6))


def test_other_targets_read_the_same_lookups():
    rng = np.random.default_rng(3)
    S = 200
    cells = np.unique(rng.integers(0, S * 256, S * 30))
    src, byte, dst = cells // 256, cells % 256, rng.integers(0, S, len(cells))
    arcs = _Arcs.plain(S, src, byte, dst)
    arcs.__dict__["table"] = None  # (the rank lookups under test, not the dense table)
    other = rng.integers(0, S + 1, len(cells)).astype(np.int32)
    moved = arcs.with_dst(other)
    assert moved.rank is arcs.rank and moved.ptr is arcs.ptr  # (built once, for both)
    fresh = _Arcs.plain(S, src, byte, other)
    fresh.__dict__["table"] = None
    q, b = np.concatenate([rng.integers(0, S, 5000), src]), np.concatenate([rng.integers(0, 256, 5000), byte])
    assert np.array_equal(moved.step(q, b), fresh.step(q, b))
    assert np.array_equal(moved.step(src, byte), other)


SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}},
          "required": ["name"]}


def test_the_openfst_bytes_come_back_from_the_file_and_in_memory(monkeypatch):
    fst = json_schema_fst(SCHEMA)
    want = fst.write_to_string()
    assert automaton._openfst_bytes([fst.copy()]) == want  # (small: written in memory)
    monkeypatch.setattr(automaton, "FILE_WRITE_STATES", 1)
    assert automaton._openfst_bytes([fst.copy()]) == want  # (through a temporary file)

    def no_dir(*a, **k):
        raise OSError("read-only file system")
    monkeypatch.setattr(tempfile, "TemporaryDirectory", no_dir)
    assert automaton._openfst_bytes([fst.copy()]) == want  # (written in memory instead)


def _vocab() -> Vocab:
    raw = [bytes([c]) for c in range(32, 127)] + [b'"name":', b'"tags":', b'["a"', b"ab", b"ame"]
    return Vocab.from_dict(dict(enumerate(raw)), eos_ids=[len(raw)], name="peaks")


@pytest.mark.parametrize("rewritten", [False, True])
def test_a_compile_s_character_automaton_is_the_schema_s_language(rewritten, monkeypatch):
    """Kept as OpenFst wrote it (small), or written again from its arcs after the tables (large;
    forced here)."""
    monkeypatch.setenv("FSTBEAM_NO_DISK_CACHE", "1")
    if rewritten:
        monkeypatch.setattr(automaton, "TRIM_ABOVE", 0)
        monkeypatch.setattr(automaton, "vector_fst_bytes", _counted(automaton.vector_fst_bytes, calls := []))
    cc = fstbeam.compile_constraints(json_schema=SCHEMA, tokenizer=_vocab())
    read = pynini.Fst.read_from_string(cc.char_fst)
    want = json_schema_fst(SCHEMA)
    assert pynini.equivalent(read, want)
    # the bytes describe the arcs the lift read (numpy's reader of them: the same DFA as pynini's)
    arcs = fst_bytes_to_arcs(cc.char_fst)
    dfa = fst_to_dfa(read)
    q, b = np.nonzero(dfa.next >= 0)
    assert np.array_equal(arcs.src, q) and np.array_equal(arcs.byte, b) and np.array_equal(arcs.dst, dfa.next[q, b])
    if rewritten:
        assert len(calls) == 1  # (the rewrite path was taken)


def _counted(fn, calls: list):
    def counted(*a, **k):
        calls.append(1)
        return fn(*a, **k)
    return counted


@pytest.mark.parametrize("chunk", [1, 4, 1 << 20])
@pytest.mark.parametrize("seed", range(6))
def test_the_sparse_tokens_outside_the_dense_rows_in_slices(chunk, seed, monkeypatch):
    """`tables._outside_rows` a slice of tokens at a time: each state's sparse tokens that its
    dense row does not hold, as a loop over the states says."""
    from fstbeam.compiler.hard import tables

    rng = np.random.default_rng(seed)
    S, V, R = int(rng.integers(1, 30)), 96, 4
    sizes = rng.integers(0, 8, S)
    ptr = np.zeros(S + 1, np.int64)
    np.cumsum(sizes, out=ptr[1:])
    tokens = np.concatenate([np.sort(rng.choice(V, n, replace=False)) for n in sizes]).astype(np.int32)
    dense = rng.integers(0, 2**32, (R, V // 32), dtype=np.uint64).astype(np.uint32)
    state_row = rng.integers(0, R, S)
    want_ptr, want_tok = [0], []
    for q in range(S):
        row = dense[state_row[q]]
        mine = [t for t in tokens[ptr[q]:ptr[q + 1]].tolist() if not (int(row[t >> 5]) >> (t & 31)) & 1]
        want_tok += mine
        want_ptr.append(want_ptr[-1] + len(mine))
    monkeypatch.setattr(tables, "CLASS_CHUNK_KEYS", chunk)
    got_ptr, got_tok = tables._outside_rows(ptr, tokens, dense, state_row)
    assert got_ptr.tolist() == want_ptr and got_tok.tolist() == want_tok
