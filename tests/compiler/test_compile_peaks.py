"""The pieces that lower a large schema's compile peak (issue 36, "every schema in 1 GB") give
what the whole-column forms gave: the OpenFst form written a slice of states at a time
(`vector_fst`), the rank lookups built a slice of arcs at a time and shared by the inside walk's
arcs (`_Arcs.with_dst`), the automaton's OpenFst bytes read back from a temporary file
(`vector_fst.openfst_bytes`), and a compile's character automaton written from its arcs after
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
from fstbeam.compiler.hard.lift.token_fsa import _Arcs
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.contract.vocab import Vocab
from fstbeam.fst import vector_fst
from fstbeam.fst.vector_fst import openfst_bytes


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
    assert openfst_bytes([fst.copy()]) == want  # (small: written in memory)
    monkeypatch.setattr(vector_fst, "FILE_WRITE_STATES", 1)
    assert openfst_bytes([fst.copy()]) == want  # (through a temporary file)
    assert openfst_bytes(fst) == want and fst.num_states() > 0  # (an automaton given alone: kept)

    def no_dir(*a, **k):
        raise OSError("read-only file system")
    monkeypatch.setattr(tempfile, "TemporaryDirectory", no_dir)
    assert openfst_bytes([fst.copy()]) == want  # (written in memory instead)


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


@pytest.mark.parametrize("slice_tokens", [1, 5, 1 << 21])
@pytest.mark.parametrize("seed", range(6))
def test_the_sparse_pairs_in_slices_are_the_sorted_tokens_of_each_state(slice_tokens, seed, monkeypatch):
    """`tables._sparse_pairs`: every token of each (state, small block) pair, sorted by state then
    token, as a loop says; packed a slice at a time, and by the plain sort where a packed key
    would not fit in 63 bits (a huge width, forced)."""
    from fstbeam.compiler.hard import tables

    rng = np.random.default_rng(seed)
    S, NB, V = int(rng.integers(1, 40)), int(rng.integers(1, 12)), 300
    sizes = rng.integers(0, 9, NB)
    block_ptr = np.zeros(NB + 1, np.int64)
    np.cumsum(sizes, out=block_ptr[1:])
    block_tokens = np.concatenate([rng.choice(V, n, replace=False) for n in sizes]).astype(np.int32)
    n_pairs = int(rng.integers(0, 60))
    sp_state, sp_block = rng.integers(0, S, n_pairs), rng.integers(0, NB, n_pairs)
    want = sorted((int(q), int(t)) for q, b in zip(sp_state, sp_block)
                  for t in block_tokens[block_ptr[b]:block_ptr[b + 1]])
    monkeypatch.setattr(tables, "SPARSE_SLICE_TOKENS", slice_tokens)
    for width in (V, 2**62):
        q, t = tables._sparse_pairs(sp_state, sp_block, block_ptr, block_tokens, width)
        assert list(zip(q.tolist(), t.tolist())) == want


@pytest.mark.parametrize("seed", range(8))
def test_the_graph_s_components_and_regions_from_the_changes_of_edge(seed):
    """`shared_walks.components` sorts only the arcs whose edge differs from the arc before;
    `regions` counts an edge's arcs among the inner ones only: both as the whole-column forms
    give them (scipy's components of every distinct edge; the cut of single ASCII arcs)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    from fstbeam.compiler.hard.lift import shared_walks

    rng = np.random.default_rng(seed)
    S = int(rng.integers(2, 200))
    A = int(rng.integers(1, 2000))
    src = np.sort(rng.integers(0, S, A))
    dst = np.where(rng.random(A) < 0.7, src, rng.integers(0, S, A))  # (runs of arcs to one target)
    dst = np.where(rng.random(A) < 0.5, np.roll(dst, 1), dst).astype(np.int32)
    src = src.astype(np.int32)
    byte = rng.integers(0, 256, A).astype(np.uint8)

    def plain(s, d):
        e = np.unique(s.astype(np.int64) * S + d)
        g = csr_matrix((np.ones(len(e), np.int8), (e // S, e % S)), shape=(S, S))
        return connected_components(g, directed=True, connection="strong")[1]

    def same_partition(a, b):
        pairs = set(zip(a.tolist(), b.tolist()))
        return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))

    assert same_partition(shared_walks.components(S, src, dst), plain(src, dst))
    comp = plain(src, dst)
    big = np.bincount(comp)[comp] > shared_walks.MAX_COMPONENT
    key = src.astype(np.int64) * S + dst
    n_arcs = {k: c for k, c in zip(*np.unique(key, return_counts=True))}
    keep = [i for i in range(A) if not (big[src[i]] and big[dst[i]])
            or not (n_arcs[key[i]] == 1 and byte[i] < 0x80)]
    fine = plain(src[keep], dst[keep])
    want = np.where(big, comp.max() + 1 + fine, comp)
    got = shared_walks.regions(S, src, byte, dst)
    assert same_partition(got, want)


def test_arc_keys_of_int32_states_do_not_wrap_around():
    """The renumbered arcs of the lift come as int32 states and uint8 bytes: their sorted
    (state, byte) keys are int64, right past 2**23 states."""
    src = np.array([0, 2**23 + 5, 2**30], np.int32)
    byte = np.array([255, 3, 200], np.uint8)
    arcs = _Arcs.plain(2**30 + 1, src, byte, np.zeros(3, np.int32))
    assert arcs.key.dtype == np.int64
    assert arcs.key.tolist() == [int(s) * 256 + int(b) for s, b in zip(src, byte)]


def test_optimize_in_place_takes_the_automaton_out_of_its_box():
    from fstbeam.fst.optimize import optimize_in_place

    fst = json_schema_fst(SCHEMA)
    nfa = (fst | pynini.accep("nul", token_type="byte")).rmepsilon()
    box = [nfa.copy()]
    out = optimize_in_place(box, stage="test", max_states=10_000)
    assert box == []
    assert pynini.equivalent(out, nfa)
    assert out.num_states() == pynini.determinize(nfa).minimize().num_states()
