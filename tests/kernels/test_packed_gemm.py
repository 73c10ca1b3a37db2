"""MKL's packed GEMM (:mod:`fstbeam.kernels.packed_gemm`) against ``torch.nn.functional.linear``:
the packing policy (when it packs, pads, repacks, falls back) never changes the numbers beyond
float32 rounding, and an in-place weight change is never served from a stale packing."""
from __future__ import annotations

import pytest
import torch

from fstbeam.kernels.packed_gemm import SHRINK_AFTER, PackedLinear, mkl_packing_available

needs_mkl = pytest.mark.skipif(not mkl_packing_available(), reason="no MKL packed GEMM in this PyTorch build")


def _weights(N=96, d=48, seed=0, bias=True):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(N, d, generator=g), (torch.randn(N, generator=g) if bias else None)


def _check(lin, x):
    want = torch.nn.functional.linear(x, lin.weight, lin.bias)
    got = lin(x)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@needs_mkl
@pytest.mark.parametrize("bias", [True, False])
def test_row_counts_pack_pad_and_repack(bias):
    assert SHRINK_AFTER == 16  # the plan below counts on it
    w, b = _weights(bias=bias)
    lin = PackedLinear(w, b)
    g = torch.Generator().manual_seed(1)
    # (rows, packing row count expected after the call)
    plan = [(144, 0), (40, 0), (40, 40), (40, 40), (33, 40), (20, 40), (19, 40), (19, 40)] + [(19, 40)] * 13 + [
        (19, 19), (19, 19), (40, 19), (40, 40), (64, 40), (1, 40), (1, 40)]
    for rows, packed_rows in plan:
        _check(lin, torch.randn(rows, w.shape[1], generator=g))
        assert lin._rows == packed_rows, (rows, lin._rows)


@needs_mkl
def test_leading_dimensions_and_padding_keep_each_row():
    w, b = _weights(N=70, d=33)
    lin = PackedLinear(w, b)
    x = torch.randn(8, 5, 1, 33)  # 40 rows as a decoder's [batch, beam, 1, d]
    for _ in range(3):
        _check(lin, x)
    assert lin._rows == 40
    part = x.reshape(40, 33)[:36]  # padded to 40: row i's result is row i's alone
    torch.testing.assert_close(lin(part), lin(x).reshape(40, 70)[:36], rtol=0, atol=0)
    assert lin._rows == 40


@needs_mkl
def test_far_fewer_rows_run_unpacked_not_padded():
    """A padding row costs as much as a real one: 25 rows are not padded to a packing for 40."""
    w, b = _weights(N=70, d=33)
    lin = PackedLinear(w, b)
    x = torch.randn(40, 33)
    for _ in range(3):
        lin(x)
    assert lin._rows == 40
    calls = []
    real = torch.ops.mkl._mkl_linear
    try:
        torch.ops.mkl._mkl_linear = lambda *a: calls.append(a[-1]) or real(*a)
        _check(lin, x[:25])
        _check(lin, x[:36])
    finally:
        torch.ops.mkl._mkl_linear = real
    assert calls == [40]  # 36 rows padded to 40; 25 rows ran unpacked


@needs_mkl
def test_in_place_weight_change_is_never_served_stale():
    w, b = _weights()
    lin = PackedLinear(w, b)
    x = torch.randn(12, w.shape[1])
    for _ in range(3):
        lin(x)
    assert lin._rows == 12
    with torch.no_grad():
        w.mul_(-2.0)
    _check(lin, x)  # the packing of the old weight is dropped
    assert lin._packed is None or lin._rows == 12
    for _ in range(2):
        _check(lin, x)


def test_other_dtypes_and_inputs_run_unpacked():
    w, b = _weights()
    lin = PackedLinear(w.double(), b.double())
    assert not lin.enabled
    for _ in range(3):
        _check(lin, torch.randn(10, w.shape[1], dtype=torch.float64))
    lin32 = PackedLinear(w, b)
    for _ in range(3):
        _check(lin32, torch.randn(10, w.shape[1]).double().float())
