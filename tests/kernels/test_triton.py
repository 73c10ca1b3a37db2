"""Triton backend against the oracle and the reference.

Without CUDA these run on CPU tensors under the Triton interpreter (conftest.py sets
TRITON_INTERPRET=1), which is ~1000x slower than a GPU: sizes stay at V <= 4097, R <= 8.
The `gpu`-marked tests run the compiled kernels at full vocabulary sizes and skip cleanly
without CUDA.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch
from kernel_oracle import assert_matches_oracle, assert_same_result, exact64, make_mask, oracle_masked_topk, pack_rows

from fstbeam.kernels import masked_topk, reference, triton_masked_topk

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

pytestmark = pytest.mark.skipif(
    not triton_masked_topk.available(DEVICE),
    reason="triton missing, or no CUDA and TRITON_INTERPRET unset",
)


def check(logits, allowed, row_state, scores, k, rng, *, splits=None, block=None, allowed_lse=True):
    bitmask = pack_rows(allowed, rng)
    dev = lambda t: t.to(DEVICE)  # noqa: E731
    got = triton_masked_topk.masked_topk(
        dev(logits), dev(bitmask), dev(row_state), dev(scores), k,
        allowed_lse=allowed_lse, _splits=splits, _block=block,
    )
    oracle = oracle_masked_topk(exact64(logits), allowed[row_state.numpy()], scores.double().numpy(), k)
    assert_matches_oracle(got, oracle, allowed_lse=allowed_lse)
    want = reference.masked_topk(logits, bitmask, row_state, scores, k, allowed_lse=allowed_lse)
    assert_same_result(got, want)
    return got


def inputs(num_rows, vocab, dname, mask_kind, seed):
    rng = np.random.default_rng(seed)
    logits = torch.from_numpy((rng.standard_normal((num_rows, vocab)) * 3).astype(np.float32)).to(DTYPES[dname])
    allowed = make_mask(mask_kind, 3, vocab, rng)
    row_state = torch.from_numpy(rng.integers(0, 3, num_rows))
    scores = torch.from_numpy((rng.standard_normal(num_rows) * 10).astype(np.float32))
    return logits, allowed, row_state, scores, rng


# (R, V, dtype, mask, k, splits, block): splits > 1 exercises the cross-program merge
CASES = [
    (1, 1, "fp32", "rand90", 3, None, None),
    (8, 33, "fp32", "rand10", 40, None, None),  # k > V
    (8, 33, "bf16", "almost_full", 5, None, 256),
    (4, 1000, "fp16", "rand90", 8, 1, 256),
    (4, 1000, "bf16", "single", 8, 3, 256),
    (4, 1000, "fp32", "empty", 4, 2, 256),
    (2, 4097, "fp32", "rand10", 16, 3, 512),  # V not a multiple of 32 or of the tile
    (2, 4097, "bf16", "almost_full", 8, None, None),
]


@pytest.mark.parametrize("num_rows,vocab,dname,mask_kind,k,splits,block", CASES)
def test_against_oracle(num_rows, vocab, dname, mask_kind, k, splits, block):
    logits, allowed, row_state, scores, rng = inputs(num_rows, vocab, dname, mask_kind, vocab + k)
    check(logits, allowed, row_state, scores, k, rng, splits=splits, block=block)


@pytest.mark.parametrize("splits", [1, 4])
def test_ties_signed_zeros_and_minus_inf(splits):
    rng = np.random.default_rng(0)
    logits = torch.from_numpy(rng.integers(-2, 3, (3, 2048)).astype(np.float32))
    logits[0, 5], logits[0, 9] = -0.0, 0.0
    logits[1, :] = -math.inf  # nothing selectable, lse = -inf
    logits[2, :1500] = -math.inf
    allowed = rng.random((3, 2048)) < 0.6
    got = check(logits, allowed, torch.arange(3), torch.zeros(3), 64, rng, splits=splits, block=256)
    assert got.all_masked.tolist() == [False, True, False]
    assert got.lse[1].item() == -math.inf


@pytest.mark.parametrize("layout", ["slice_of_wider", "every_other_column"])
def test_strided_logits(layout):
    rng = np.random.default_rng(1)
    base = torch.from_numpy(rng.standard_normal((4, 2100)).astype(np.float32)).to(torch.bfloat16)
    logits = base[:, 5:1005] if layout == "slice_of_wider" else base[:, 1:2001:2]
    check(logits, rng.random((2, 1000)) < 0.4, torch.tensor([0, 1, 1, 0]), torch.randn(4), 6, rng,
          splits=2, block=256)


def test_k_zero_and_allowed_lse_off():
    logits, allowed, row_state, scores, rng = inputs(3, 300, "fp32", "rand10", 3)
    got = check(logits, allowed, row_state, scores, 0, rng, allowed_lse=False)
    assert got.tokens.shape == (3, 0)


def test_through_dispatch():
    logits, allowed, row_state, scores, rng = inputs(2, 500, "fp32", "rand90", 4)
    bitmask = pack_rows(allowed, rng)
    args = [t.to(DEVICE) for t in (logits, bitmask, row_state, scores)]
    got = masked_topk(*args, 5, backend="triton")
    want = masked_topk(logits, bitmask, row_state, scores, 5, backend="torch")
    assert_same_result(got, want)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("num_rows,vocab,dname", [(1, 262144, "fp32"), (64, 128001, "bf16"), (320, 32000, "fp16")])
def test_gpu_full_size(num_rows, vocab, dname):
    for mask_kind in ("rand10", "rand90", "single"):
        logits, allowed, row_state, scores, rng = inputs(num_rows, vocab, dname, mask_kind, vocab)
        check(logits, allowed, row_state, scores, 8, rng)
        bitmask = pack_rows(allowed, rng).cuda()
        auto = masked_topk(logits.cuda(), bitmask, row_state.cuda(), scores.cuda(), 8)  # auto -> triton
        want = reference.masked_topk(logits.cuda(), bitmask, row_state.cuda(), scores.cuda(), 8)
        assert_same_result(auto, want)


_COMPILE_SCRIPT = r"""
import os
os.environ.pop("TRITON_INTERPRET", None)
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile
from fstbeam.kernels import triton_masked_topk as tk

def build(fn, types, consts):
    sig = dict(types)
    sig.update({name: "constexpr" for name in consts})
    names = list(sig)
    return ASTSource(fn, sig, constexprs={(names.index(n),): v for n, v in consts.items()})

target = GPUTarget("cuda", 90, 32)
partial = [("logits_ptr", "*bf16"), ("stride_row", "i32"), ("stride_col", "i32"), ("mask_ptr", "*i32"),
           ("mask_stride", "i32"), ("state_ptr", "*i64"), ("part_m_ptr", "*fp32"), ("part_s_ptr", "*fp32"),
           ("part_am_ptr", "*fp32"), ("part_as_ptr", "*fp32"), ("part_key_ptr", "*i64"), ("vocab", "i32"),
           ("split_len", "i32")]
compile(build(tk._partial_kernel, partial, dict(NSPLIT=4, BLOCK=1024, KP=8, WANT_ALLOWED=True,
                                                 MASKED=tk._MASKED_KEY)), target=target)
merge = [(n, "*fp32") for n in ("part_m_ptr", "part_s_ptr", "part_am_ptr", "part_as_ptr")]
merge += [("part_key_ptr", "*i64"), ("scores_ptr", "*fp32"), ("lse_ptr", "*fp32"), ("tokens_ptr", "*i64"),
          ("out_scores_ptr", "*fp32"), ("logprobs_ptr", "*fp32"), ("all_masked_ptr", "*i1"),
          ("allowed_lse_ptr", "*fp32"), ("k", "i32")]
compile(build(tk._merge_kernel, merge, dict(NSPLIT=3, NSPLIT_P2=4, KP=8, WANT_ALLOWED=True,
                                             MASKED=tk._MASKED_KEY, REAL_MIN=tk._REAL_KEY_MIN)), target=target)
print("compiled")
"""


@pytest.mark.slow  # compiles every kernel for a GPU target: CI runs it (-m slow)
def test_kernels_compile_for_a_gpu_target():
    # The interpreter does not type-check like the compiler does: compile both kernels
    # ahead of time for sm_90 (no GPU needed) in a process without TRITON_INTERPRET.
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("triton.backends.nvidia")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT], cwd=Path(__file__).resolve().parents[2],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
