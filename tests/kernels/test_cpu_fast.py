"""Internals of the numba backend: the vector loops, the exp polynomial, the order keys,
and determinism across thread counts. End-to-end checks live in test_masked_topk.py."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from kernel_oracle import assert_matches_oracle, exact64, oracle_masked_topk, pack_rows
from numba import njit

from fstbeam.kernels import cpu_fast, reference
from fstbeam.kernels._simd import (
    LOG2E_F32,
    chunk_exp2sum,
    chunk_exp2sum_masked,
    chunk_max2,
    chunk_scan,
    load_f32,
)


@njit(cache=False)
def _run_loops(x, off, n8, mbytes, moff, zref, sub_out):
    m, am = chunk_max2(x, off, n8, mbytes, moff)
    sm, sam, s = chunk_scan(x, off, n8, mbytes, moff, zref, sub_out, 1)
    return m, am, sm, sam, s, chunk_exp2sum(x, off, n8, zref), chunk_exp2sum_masked(x, off, n8, mbytes, moff, zref)


@njit(cache=False)
def _lane0_exp2(values, zref):
    """2**(v*L - zref) of each value, computed in lane 0 of a group whose other lanes are -inf."""
    out = np.empty(values.shape[0], np.float64)
    group = np.full(8, -np.inf, np.float32)
    for i in range(values.shape[0]):
        group[0] = values[i]
        out[i] = chunk_exp2sum(group, 0, 1, zref)
    return out


@njit(cache=False)
def _load_all(x):
    out = np.empty(x.shape[0], np.float32)
    for i in range(x.shape[0]):
        out[i] = load_f32(x, i)
    return out


def storage(t: torch.Tensor) -> np.ndarray:
    return {torch.float32: t, torch.bfloat16: t.view(torch.uint16), torch.float16: t.view(torch.int16)}[t.dtype].numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("n8", [0, 1, 2, 7, 128])
def test_vector_loops_against_float64(dtype, n8):
    rng = np.random.default_rng(n8)
    values = torch.from_numpy((rng.standard_normal(2000) * 4).astype(np.float32)).to(dtype)
    values[[20, 21]] = -math.inf
    mbytes = rng.integers(0, 256, 250).astype(np.uint8)
    off, moff = 16, 2
    x64 = exact64(values[None])[0][off : off + 8 * n8]
    bits = np.unpackbits(mbytes[moff : moff + n8], bitorder="little").astype(bool)
    ref = np.float32(x64.max()) if n8 else np.float32(0.0)
    exact = np.float64(ref) * np.float64(LOG2E_F32)
    zref = np.float32(exact)
    corr = 2.0 ** (np.float64(zref) - exact)
    sub_out = np.full(n8 // 16 + 3, np.nan, np.float32)
    got = np.array(_run_loops(storage(values), off, n8, mbytes, moff, zref, sub_out), dtype=np.float64)
    top = x64.max() if n8 else -np.inf
    allowed_top = x64[bits].max() if bits.any() else -np.inf
    np.testing.assert_array_equal(got[:4], [top, allowed_top, top, allowed_top])
    sums = got[4:] * corr
    want = [np.exp(x64 - ref).sum(), np.exp(x64 - ref).sum(), np.exp(x64[bits] - ref).sum()]
    np.testing.assert_allclose(sums, want, rtol=1e-6, atol=1e-30)
    # the masked max of every 128 tokens, written from sub_out[1] on, nothing outside
    nsub = -(-n8 // 16)
    for i in range(nsub):
        block = slice(128 * i, min(128 * (i + 1), 8 * n8))
        expect = x64[block][bits[block]].max() if bits[block].any() else -np.inf
        assert sub_out[1 + i] == expect, i
    assert np.isnan(sub_out[0]) and np.isnan(sub_out[1 + nsub :]).all()


def test_exp2_polynomial_error_bound():
    # The loops evaluate 2**(v*L - zref) on a dense grid of v - ref in [-60, 0]. The relative
    # error is the polynomial's (< 3.0e-7, about 2.5 float32 ulps) plus the float32 rounding of
    # the exponent z = v*L - zref, which grows with |z| but only where the term is tiny next
    # to the max term (= 1) that every sum holds. (Below -60 the seven -inf lanes' 2**-126
    # floor terms would show in this one-lane measurement.)
    t = np.linspace(-60.0, 0.0, 200_001).astype(np.float32)
    got = _lane0_exp2(t, np.float32(0.0))
    z = t.astype(np.float64) * np.float64(LOG2E_F32)
    rel = np.abs(got / np.exp2(z) - 1)
    assert np.all(rel < 3.0e-7 + np.abs(z) * 2.0**-24 * math.log(2))
    assert rel[t > -1].max() < 3.0e-7
    # -inf lanes count as (at most) the float32 normal floor, never as garbage
    assert 0.0 <= _lane0_exp2(np.array([-np.inf], np.float32), np.float32(0.0))[0] < 8 * 2.0**-125


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_decoding_is_exact(dtype):
    specials = torch.tensor([0.0, -0.0, 1.0, -2.5, 65504.0 if dtype == torch.float16 else 3e38, math.inf, -math.inf,
                             6e-8 if dtype == torch.float16 else 1e-40], dtype=torch.float32).to(dtype)
    values = torch.cat([specials, torch.randn(1000).to(dtype)])
    np.testing.assert_array_equal(_load_all(storage(values)), values.float().numpy())


def test_order_keys_sort_by_value_then_lower_id():
    rng = np.random.default_rng(0)
    pool = np.array([-np.inf, -1e30, -3.0, -1e-40, -0.0, 0.0, 1e-40, 2.0, 1e30, np.inf], np.float32)
    values = rng.choice(pool, 500)
    ids = rng.permutation(500)
    keys = np.array([cpu_fast._order_key(np.float32(v), int(t)) for v, t in zip(values, ids)])
    by_key = np.argsort(keys)[::-1]  # descending key = best first
    by_rule = np.lexsort((ids, -values.astype(np.float64)))  # value descending, id ascending
    np.testing.assert_array_equal(ids[by_key], ids[by_rule])


def test_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(5)
    logits = torch.from_numpy(rng.standard_normal((6, 100_000)).astype(np.float32))
    bitmask = pack_rows(rng.random((2, 100_000)) < 0.5, rng)
    row_state = torch.tensor([0, 1, 0, 1, 1, 0])
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = cpu_fast.masked_topk(logits, bitmask, row_state, torch.zeros(6), 10, allowed_lse=True)
        torch.set_num_threads(max(2, before))
        many = cpu_fast.masked_topk(logits, bitmask, row_state, torch.zeros(6), 10, allowed_lse=True)
    finally:
        torch.set_num_threads(before)
    for a, b in zip(one, many):
        assert torch.equal(a, b)  # bit-identical: the work split never changes the arithmetic


@pytest.mark.parametrize("vocab", [cpu_fast.CHUNK * cpu_fast.GROUP - 1, cpu_fast.CHUNK * cpu_fast.GROUP + 1,
                                   2 * cpu_fast.CHUNK * cpu_fast.GROUP + 7])
def test_chunk_and_group_boundaries(vocab):
    rng = np.random.default_rng(vocab)
    logits = torch.from_numpy(rng.standard_normal((3, vocab)).astype(np.float32))
    logits[0, -1] = 50.0  # the best token is the very last one (a scalar tail element)
    allowed = rng.random((3, vocab)) < 0.5
    allowed[0, -1] = True
    bitmask = pack_rows(allowed, rng)
    result = cpu_fast.masked_topk(logits, bitmask, torch.arange(3), torch.zeros(3), 5, allowed_lse=True)
    oracle = oracle_masked_topk(exact64(logits), allowed, np.zeros(3), 5)
    assert_matches_oracle(result, oracle)
    assert result.tokens[0, 0].item() == vocab - 1


def test_chunks_with_uniform_masks():
    # Real masks leave whole regions of the vocabulary allowed or blocked (e.g. every token
    # of another script). Chunks whose 128 mask bytes are all 0 / all 1 take a path without
    # per-token masking; mix them with ordinary chunks and put the winners in a full chunk.
    rng = np.random.default_rng(9)
    vocab = 20 * cpu_fast.CHUNK + 300
    logits = torch.from_numpy(rng.standard_normal((2, vocab)).astype(np.float32))
    allowed = rng.random((2, vocab)) < 0.3
    allowed[:, : 4 * cpu_fast.CHUNK] = False  # 4 blocked chunks
    allowed[:, 6 * cpu_fast.CHUNK : 9 * cpu_fast.CHUNK] = True  # 3 fully allowed chunks
    logits[0, 7 * cpu_fast.CHUNK + 5] = 9.0  # the best token sits in a fully allowed chunk
    logits[1, 2 * cpu_fast.CHUNK + 5] = 9.0  # a blocked chunk holds the row max (lse only)
    bitmask = pack_rows(allowed, rng)
    result = cpu_fast.masked_topk(logits, bitmask, torch.arange(2), torch.zeros(2), 12, allowed_lse=True)
    oracle = oracle_masked_topk(exact64(logits), allowed, np.zeros(2), 12)
    assert_matches_oracle(result, oracle)
    assert result.tokens[0, 0].item() == 7 * cpu_fast.CHUNK + 5


@pytest.mark.slow  # a full-size vocabulary of ties: CI runs it (-m slow)
def test_many_ties_at_the_threshold_stay_exact():
    # All logits equal: every chunk ties at the threshold, so every allowed token is a
    # candidate. The answer is the k lowest allowed ids.
    rng = np.random.default_rng(10)
    logits = torch.zeros(2, 50_000).to(torch.bfloat16)
    allowed = rng.random((2, 50_000)) < 0.5
    bitmask = pack_rows(allowed, rng)
    result = cpu_fast.masked_topk(logits, bitmask, torch.arange(2), torch.zeros(2), 100)
    for r in range(2):
        assert result.tokens[r].tolist() == np.flatnonzero(allowed[r])[:100].tolist()


def test_reused_buffers_and_table_view_follow_the_inputs():
    # The host side reuses scratch buffers per shape and the byte view of the last table;
    # a different table, an edited table and a new shape must all be honoured.
    rng = np.random.default_rng(11)
    logits = torch.from_numpy(rng.standard_normal((3, 5000)).astype(np.float32))
    first = pack_rows(rng.random((3, 5000)) < 0.5, rng)
    second = pack_rows(rng.random((3, 5000)) < 0.5, rng)

    def run(table, rows=3):
        got = cpu_fast.masked_topk(logits[:rows], table, torch.arange(rows), torch.zeros(rows), 6)
        want = reference.masked_topk(logits[:rows], table, torch.arange(rows), torch.zeros(rows), 6)
        assert torch.equal(got.tokens, want.tokens)
        return got.tokens

    a = run(first)
    b = run(second)
    assert not torch.equal(a, b)
    first[0].zero_()  # edited in place: the cached view sees the new words
    assert run(first)[0].eq(-1).all()
    run(second, rows=2)  # a new shape
