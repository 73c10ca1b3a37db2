"""masked_topk: every CPU backend (the reference included) against the float64 oracle.

The Triton backend runs the same checks at interpreter-friendly sizes in test_triton.py.
"""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernel_oracle import (
    MASK_KINDS,
    assert_matches_oracle,
    assert_same_result,
    exact64,
    make_mask,
    oracle_masked_topk,
    pack_rows,
)

from fstbeam.kernels import masked_topk

BACKENDS = ("torch", "cpu-fast")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def run_case(logits, allowed_states, row_state, scores, k, rng, *, allowed_lse=True, backends=BACKENDS, what=""):
    """Check each backend against the oracle and against each other."""
    bitmask = pack_rows(allowed_states, rng)
    allowed_rows = allowed_states[row_state.numpy()]
    oracle = oracle_masked_topk(exact64(logits), allowed_rows, scores.double().numpy(), k)
    results = {}
    for backend in backends:
        results[backend] = masked_topk(logits, bitmask, row_state, scores, k, allowed_lse=allowed_lse, backend=backend)
        assert_matches_oracle(results[backend], oracle, allowed_lse=allowed_lse, what=f"{what} {backend}")
    first = results[backends[0]]
    for backend in backends[1:]:
        assert_same_result(results[backend], first, what=f"{what} {backend} vs {backends[0]}")
    return results


def random_inputs(num_rows, vocab, dtype, mask_kind, seed, *, num_states=None, neg_inf_fraction=0.0):
    rng = np.random.default_rng(seed)
    logits = torch.from_numpy(rng.standard_normal((num_rows, vocab)).astype(np.float32) * 3)
    if neg_inf_fraction:
        logits[torch.from_numpy(rng.random((num_rows, vocab)) < neg_inf_fraction)] = -math.inf
    logits = logits.to(dtype)
    num_states = num_states or min(num_rows, 7)
    allowed = make_mask(mask_kind, num_states, vocab, rng)
    row_state = torch.from_numpy(rng.integers(0, num_states, num_rows).astype(np.int64))
    scores = torch.from_numpy((rng.standard_normal(num_rows) * 10).astype(np.float32))
    return logits, allowed, row_state, scores, rng


def _matrix():
    shapes = [(1, 1), (320, 1), (1, 31), (320, 31), (1, 33), (320, 33), (2, 32000), (2, 128001), (2, 262144)]
    for num_rows, vocab in shapes:
        for dname in DTYPES:
            for mask_kind in MASK_KINDS:
                big = vocab >= 128001
                if big and (dname == "fp16" or mask_kind in ("empty", "rand90")):
                    continue  # keep the big vocabularies to a few rows of cases
                yield pytest.param(num_rows, vocab, dname, mask_kind, id=f"R{num_rows}-V{vocab}-{dname}-{mask_kind}")


@pytest.mark.parametrize("num_rows,vocab,dname,mask_kind", list(_matrix()))
def test_matrix_against_oracle(num_rows, vocab, dname, mask_kind):
    seed = zlib.crc32(f"{num_rows}-{vocab}-{dname}-{mask_kind}".encode())  # stable across runs
    logits, allowed, row_state, scores, rng = random_inputs(num_rows, vocab, DTYPES[dname], mask_kind, seed)
    k = 40 if vocab <= 33 else 8  # k > V for the tiny vocabularies: padding
    run_case(logits, allowed, row_state, scores, k, rng, what=f"R{num_rows} V{vocab} {dname} {mask_kind}")


@pytest.mark.parametrize("dname", ["fp32", "bf16"])
def test_ties_go_to_the_lower_token_id(dname):
    # Logits from five integer values: every k-th place is a tie among hundreds of tokens.
    rng = np.random.default_rng(7)
    logits = torch.from_numpy(rng.integers(-2, 3, (4, 5000)).astype(np.float32)).to(DTYPES[dname])
    allowed = rng.random((4, 5000)) < 0.5
    results = run_case(logits, allowed, torch.arange(4), torch.zeros(4), 300, rng)
    tokens = results["torch"].tokens
    first_value = logits.float().gather(1, tokens.clamp(min=0))
    for r in range(4):  # within a run of equal values the ids ascend
        same = first_value[r, 1:] == first_value[r, :-1]
        assert bool((tokens[r, 1:][same] > tokens[r, :-1][same]).all())


def test_signed_zeros_are_equal():
    # -0.0 and +0.0 are the same logit: ids 1 (-0.0), 3 (+0.0), 7 (+0.0) in id order.
    logits = torch.full((1, 40), -5.0)
    logits[0, 1], logits[0, 3], logits[0, 7] = -0.0, 0.0, 0.0
    rng = np.random.default_rng(0)
    results = run_case(logits, np.ones((1, 40), bool), torch.zeros(1, dtype=torch.int64), torch.zeros(1), 3, rng)
    assert results["cpu-fast"].tokens.tolist() == [[1, 3, 7]]


def test_neg_inf_logits_are_never_selected():
    rng = np.random.default_rng(1)
    logits = torch.randn(3, 3000)
    logits[0, :2000] = -math.inf  # allowed but -inf: skipped even though k exceeds the rest
    logits[1, :] = -math.inf  # an all -inf row: lse = -inf, nothing selectable
    logits[2, ::3] = -math.inf
    allowed = np.ones((3, 3000), bool)
    results = run_case(logits, allowed, torch.arange(3), torch.zeros(3), 1500, rng)
    for result in results.values():
        assert result.lse[1].item() == -math.inf
        assert result.all_masked.tolist() == [False, True, False]
        assert (result.tokens[0] >= 0).sum().item() == 1000
        assert result.tokens[1].eq(-1).all()


@pytest.mark.parametrize("vocab", [33, 40000])
@pytest.mark.parametrize("layout", ["slice_of_wider", "every_other_column", "transposed", "expanded_rows"])
@pytest.mark.parametrize("dname", ["fp32", "bf16"])
def test_strided_logits(vocab, layout, dname):
    rng = np.random.default_rng(3)
    num_rows = 5
    base = torch.from_numpy(rng.standard_normal((num_rows, 2 * vocab + 7)).astype(np.float32)).to(DTYPES[dname])
    if layout == "slice_of_wider":
        logits = base[:, 7 : 7 + vocab]  # row stride 2V + 7, unit column stride
    elif layout == "every_other_column":
        logits = base[:, 1 : 1 + 2 * vocab : 2]  # column stride 2
    elif layout == "transposed":
        logits = base[:, :vocab].t().contiguous().t()  # column stride R
    else:
        logits = base[:1, :vocab].expand(num_rows, vocab)  # row stride 0
    assert not logits.is_contiguous()
    allowed = rng.random((3, vocab)) < 0.3
    row_state = torch.tensor([0, 1, 2, 1, 0])
    run_case(logits, allowed, row_state, torch.randn(num_rows), 9, rng)


@pytest.mark.parametrize("k", [0, 1, 7])
def test_k_edges(k):
    logits, allowed, row_state, scores, rng = random_inputs(6, 100, torch.float32, "rand10", 11)
    results = run_case(logits, allowed, row_state, scores, k, rng)
    assert results["cpu-fast"].tokens.shape == (6, k)


def test_k_larger_than_the_allowed_count_pads():
    logits, _, row_state, scores, rng = random_inputs(2, 5000, torch.float32, "rand10", 5)
    allowed = np.zeros((2, 5000), bool)
    allowed[0, [10, 4000, 4999]] = True
    results = run_case(logits, allowed, torch.tensor([0, 1]), scores, 6, rng)
    result = results["cpu-fast"]
    assert sorted(result.tokens[0, :3].tolist()) == [10, 4000, 4999]
    assert result.tokens[0, 3:].eq(-1).all() and result.scores[0, 3:].eq(-math.inf).all()
    assert result.all_masked.tolist() == [False, True]
    assert result.allowed_lse[1].item() == -math.inf


def test_bits_beyond_the_vocabulary_are_ignored():
    rng = np.random.default_rng(2)
    vocab = 70  # last word holds tokens 64..69 and 26 unused bits
    bitmask = torch.tensor([[0, 0, -64]], dtype=torch.int32)  # bits 6..31 of word 2: tokens >= 70
    logits = torch.randn(1, vocab)
    for backend in BACKENDS:
        result = masked_topk(logits, bitmask, torch.zeros(1, dtype=torch.int64), torch.zeros(1), 4,
                             allowed_lse=True, backend=backend)
        assert result.all_masked.tolist() == [True], backend
        assert result.tokens.eq(-1).all() and result.allowed_lse.item() == -math.inf
    allowed = np.zeros((1, vocab), bool)
    run_case(logits, allowed, torch.zeros(1, dtype=torch.int64), torch.zeros(1), 4, rng)


def test_wide_dynamic_range_rescales_exactly():
    # The first chunks hold small logits and later ones jump by hundreds: the CPU backend's
    # running reference must move up (and re-sum a chunk that would overflow float32).
    rng = np.random.default_rng(4)
    logits = torch.from_numpy(rng.standard_normal((3, 70000)).astype(np.float32))
    logits[0, 5000:6000] += 150.0
    logits[1, :20000] -= 300.0
    logits[2, 60000:] += 80.0
    allowed = rng.random((3, 70000)) < 0.2
    run_case(logits, allowed, torch.arange(3), torch.zeros(3), 16, rng)


def test_allowed_lse_off_returns_none():
    logits, allowed, row_state, scores, rng = random_inputs(3, 500, torch.float32, "rand90", 8)
    run_case(logits, allowed, row_state, scores, 4, rng, allowed_lse=False)


_VALUES = st.sampled_from([-math.inf, -7.5, -3.0, -1.0, -0.0, 0.0, 0.25, 1.0, 2.5, 9.0])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    num_rows=st.integers(1, 3),
    vocab=st.integers(1, 80),
    k=st.integers(0, 12),
    dname=st.sampled_from(["fp32", "bf16"]),
)
def test_property_small_vocabularies(data, num_rows, vocab, k, dname):
    values = data.draw(st.lists(st.one_of(_VALUES, st.floats(-20, 20, width=32)),
                                min_size=num_rows * vocab, max_size=num_rows * vocab))
    bits = data.draw(st.lists(st.booleans(), min_size=num_rows * vocab, max_size=num_rows * vocab))
    logits = torch.tensor(values, dtype=torch.float32).reshape(num_rows, vocab).to(DTYPES[dname])
    allowed = np.array(bits, bool).reshape(num_rows, vocab)
    rng = np.random.default_rng(0)
    run_case(logits, allowed, torch.arange(num_rows), torch.zeros(num_rows), k, rng)
