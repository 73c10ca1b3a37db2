"""Triton backend of `masked_topk`: one read of the logits, online softmax, fused masking.

Same signature and results as `reference.masked_topk`. The import is guarded: this module
imports without triton or CUDA, and `available(device)` says whether it can run there.
On CPU tensors it runs only under the Triton interpreter (`TRITON_INTERPRET=1` set before
triton is imported), which is how the tests exercise it without a GPU.

Kernel 1, grid (R, NSPLIT): program (r, j) streams tiles of BLOCK logits of its vocabulary
slice once. Per tile it loads the logits and the mask words covering them, then
  * updates the running (max, sum) pair: the blocked form of the online softmax of
    Hoang et al. 2018, Algorithm 4 (sum *= exp(old_max - new_max) once per tile),
  * the same pair over allowed tokens when `allowed_lse` is requested,
  * a KP-slot buffer of the best selectable tokens as int64 order keys
    (order-preserving float bits << 32 | (2**32 - 1 - token): one max gives the best value
    and, among equal values, the lowest token id). While the tile's best key beats the
    buffer's worst, it replaces it; after the first tiles this loop rarely runs.
The vocabulary is split across programs (NSPLIT > 1) when there are too few rows to fill
the GPU. Kernel 2, grid (R,), merges the NSPLIT partial pairs into lse (and allowed lse) and
extracts the k best keys in order, writing tokens, logprobs, scores and the all-masked flag.
"""
from __future__ import annotations

import math
import os
from typing import Optional

import torch

from .reference import MaskedTopK

__all__ = ["available", "interpreter_enabled", "masked_topk"]

try:  # guarded: the rest of fstbeam must import without triton
    import triton
    import triton.language as tl
except Exception as exc:  # pragma: no cover - depends on the environment
    triton = None
    tl = None
    _IMPORT_ERROR: Optional[BaseException] = exc
else:
    _IMPORT_ERROR = None

# Order keys (see the module docstring). MASKED sits below the key of any float (-inf
# included) and the buffer's sentinels MASKED + 1 + i stay below _REAL_KEY_MIN.
_MASKED_KEY = -(2**63) + 2**32
_REAL_KEY_MIN = -(2**63) + 2**40
_DEFAULT_BLOCK = 1024


def interpreter_enabled() -> bool:
    """Whether TRITON_INTERPRET is set (triton reads it when kernels are defined)."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "yes", "on")


def available(device: Optional[torch.device | str] = None) -> bool:
    """Whether this backend can run on `device` (default: on CUDA, or anywhere interpreted)."""
    if triton is None:
        return False
    if device is None:
        return torch.cuda.is_available() or interpreter_enabled()
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_available()
    return device.type == "cpu" and interpreter_enabled()


if triton is not None:

    @triton.jit
    def _order_key(x, idx):
        """int64 keys ordered by (x ascending, idx descending); -0.0 counts as +0.0."""
        bits = x.to(tl.int32, bitcast=True)
        bits = tl.where(bits == -2147483648, 0, bits)
        bits = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
        low = (~idx).to(tl.uint32).to(tl.int64)  # 2**32 - 1 - idx, zero-extended
        return (bits.to(tl.int64) << 32) | low

    @triton.jit
    def _partial_kernel(
        logits_ptr, stride_row, stride_col,
        mask_ptr, mask_stride, state_ptr,
        part_m_ptr, part_s_ptr, part_am_ptr, part_as_ptr, part_key_ptr,
        vocab, split_len,
        NSPLIT: tl.constexpr, BLOCK: tl.constexpr, KP: tl.constexpr, WANT_ALLOWED: tl.constexpr,
        MASKED: tl.constexpr,
    ):
        row = tl.program_id(0)
        split = tl.program_id(1)
        state = tl.load(state_ptr + row)
        row_ptr = logits_ptr + row.to(tl.int64) * stride_row
        mrow_ptr = mask_ptr + state * mask_stride
        lanes = tl.arange(0, BLOCK)
        neg_inf_tile = tl.full([BLOCK], float("-inf"), tl.float32)
        m = tl.max(neg_inf_tile, axis=0)  # running max (a float32 scalar)
        s = tl.sum(tl.zeros([BLOCK], tl.float32), axis=0)  # running sum of exp(x - m)
        am = m  # the same pair over allowed tokens
        asum = s
        buf = MASKED + 1 + tl.arange(0, KP).to(tl.int64)  # distinct sentinels, below any key
        worst = tl.min(buf, axis=0)
        begin = split * split_len
        end = tl.minimum(begin + split_len, vocab)
        for start in range(begin, end, BLOCK):
            idx = start + lanes
            inside = idx < end
            x = tl.load(row_ptr + idx * stride_col, mask=inside, other=float("-inf")).to(tl.float32)
            words = tl.load(mrow_ptr + (idx >> 5), mask=inside, other=0)
            allowed = inside & (((words >> (idx & 31)) & 1) != 0)
            # online softmax, one rescale per tile (Hoang et al. 2018, Algorithm 4, blocked)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
            s = s * tl.exp(m - m_ref) + tl.sum(tl.exp(x - m_ref), axis=0)
            m = m_new
            if WANT_ALLOWED:
                xa = tl.where(allowed, x, float("-inf"))
                am_new = tl.maximum(am, tl.max(xa, axis=0))
                am_ref = tl.where(am_new == float("-inf"), 0.0, am_new)
                asum = asum * tl.exp(am - am_ref) + tl.sum(tl.exp(xa - am_ref), axis=0)
                am = am_new
            # partial top-k: insert the tile's keys that beat the buffer's worst
            keys = tl.where(allowed & (x > float("-inf")), _order_key(x, idx), MASKED)
            best = tl.max(keys, axis=0)
            while best > worst:
                buf = tl.where(buf == worst, best, buf)
                keys = tl.where(keys == best, MASKED, keys)
                worst = tl.min(buf, axis=0)
                best = tl.max(keys, axis=0)
        part = row * NSPLIT + split
        tl.store(part_m_ptr + part, m)
        tl.store(part_s_ptr + part, s)
        if WANT_ALLOWED:
            tl.store(part_am_ptr + part, am)
            tl.store(part_as_ptr + part, asum)
        tl.store(part_key_ptr + part.to(tl.int64) * KP + tl.arange(0, KP), buf)

    @triton.jit
    def _merge_pair(m_ptr, s_ptr, offs, valid):
        pm = tl.load(m_ptr + offs, mask=valid, other=float("-inf"))
        ps = tl.load(s_ptr + offs, mask=valid, other=0.0)
        top = tl.max(pm, axis=0)
        ref = tl.where(top == float("-inf"), 0.0, top)
        total = tl.sum(ps * tl.exp(pm - ref), axis=0)
        total = tl.where(top == float("-inf"), 1.0, total)  # keep log() away from 0
        return tl.where(top == float("-inf"), float("-inf"), ref + tl.log(total))

    @triton.jit
    def _merge_kernel(
        part_m_ptr, part_s_ptr, part_am_ptr, part_as_ptr, part_key_ptr, scores_ptr,
        lse_ptr, tokens_ptr, out_scores_ptr, logprobs_ptr, all_masked_ptr, allowed_lse_ptr,
        k,
        NSPLIT: tl.constexpr, NSPLIT_P2: tl.constexpr, KP: tl.constexpr, WANT_ALLOWED: tl.constexpr,
        MASKED: tl.constexpr, REAL_MIN: tl.constexpr,
    ):
        row = tl.program_id(0)
        offs = tl.arange(0, NSPLIT_P2)
        valid = offs < NSPLIT
        lse = _merge_pair(part_m_ptr, part_s_ptr, row * NSPLIT + offs, valid)
        tl.store(lse_ptr + row, lse)
        if WANT_ALLOWED:
            tl.store(allowed_lse_ptr + row, _merge_pair(part_am_ptr, part_as_ptr, row * NSPLIT + offs, valid))
        slots = tl.arange(0, NSPLIT_P2 * KP)
        keys = tl.load(part_key_ptr + row.to(tl.int64) * NSPLIT * KP + slots, mask=slots < NSPLIT * KP, other=MASKED)
        best = tl.max(keys, axis=0)
        tl.store(all_masked_ptr + row, best < REAL_MIN)
        row_score = tl.load(scores_ptr + row)
        out = row.to(tl.int64) * k
        for i in range(0, k):
            best = tl.max(keys, axis=0)
            real = best >= REAL_MIN
            high = (best >> 32).to(tl.int32)
            bits = tl.where(high >= 0, high, high ^ 0x7FFFFFFF)
            value = bits.to(tl.float32, bitcast=True)
            token = ~best.to(tl.int32)  # low word = 2**32 - 1 - token, and token < 2**31
            logprob = value - lse
            tl.store(tokens_ptr + out + i, tl.where(real, token, -1))
            tl.store(logprobs_ptr + out + i, tl.where(real, logprob, float("-inf")))
            tl.store(out_scores_ptr + out + i, tl.where(real, row_score + logprob, float("-inf")))
            keys = tl.where(keys == best, MASKED, keys)


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _default_splits(num_rows: int, vocab: int, block: int, device: torch.device) -> int:
    """Enough programs to fill the GPU (~4 per SM) without slices shorter than a tile."""
    max_splits = max(1, -(-vocab // block))
    if device.type != "cuda":
        return min(2, max_splits)  # interpreter: exercise the split path, keep it cheap
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(max_splits, -(-4 * sms // max(num_rows, 1))))


def masked_topk(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    row_state: torch.Tensor,
    scores: torch.Tensor,
    k: int,
    *,
    allowed_lse: bool = False,
    _block: Optional[int] = None,
    _splits: Optional[int] = None,
) -> MaskedTopK:
    """`reference.masked_topk` with Triton kernels (arguments as validated by `dispatch`).

    `_block` (tile size, a power of 2) and `_splits` (programs per row) are tuning and
    testing knobs; the defaults pick them from the shape and the device.
    """
    if triton is None:
        raise RuntimeError(f"the triton backend needs triton, which failed to import: {_IMPORT_ERROR}")
    num_rows, vocab = logits.shape
    device = logits.device
    f32 = dict(dtype=torch.float32, device=device)
    lse = torch.empty(num_rows, **f32)
    tokens = torch.empty((num_rows, k), dtype=torch.int64, device=device)
    out_scores = torch.empty((num_rows, k), **f32)
    logprobs = torch.empty((num_rows, k), **f32)
    all_masked = torch.empty(num_rows, dtype=torch.bool, device=device)
    allowed = torch.empty(num_rows, **f32) if allowed_lse else None
    if num_rows == 0:
        return MaskedTopK(lse, tokens, out_scores, logprobs, all_masked, allowed)
    if vocab == 0:
        for t, v in ((lse, -math.inf), (tokens, -1), (out_scores, -math.inf), (logprobs, -math.inf),
                     (all_masked, True)):
            t.fill_(v)
        if allowed is not None:
            allowed.fill_(-math.inf)
        return MaskedTopK(lse, tokens, out_scores, logprobs, all_masked, allowed)

    block = _block or _DEFAULT_BLOCK
    splits = _splits or _default_splits(num_rows, vocab, block, device)
    per_split = -(-vocab // splits)  # ceil(V / splits)
    split_len = -(-per_split // block) * block  # ... in whole tiles
    splits = -(-vocab // split_len)
    kp = max(2, _next_pow2(max(k, 1)))
    parts = num_rows * splits
    part_m = torch.empty(parts, **f32)
    part_s = torch.empty(parts, **f32)
    part_am = torch.empty(parts if allowed_lse else 1, **f32)
    part_as = torch.empty(parts if allowed_lse else 1, **f32)
    part_key = torch.empty(parts * kp, dtype=torch.int64, device=device)
    _partial_kernel[(num_rows, splits)](
        logits, logits.stride(0), logits.stride(1),
        bitmask, bitmask.stride(0), row_state,
        part_m, part_s, part_am, part_as, part_key,
        vocab, split_len,
        NSPLIT=splits, BLOCK=block, KP=kp, WANT_ALLOWED=allowed_lse, MASKED=_MASKED_KEY,
        num_warps=8 if block >= 2048 else 4,
    )
    _merge_kernel[(num_rows,)](
        part_m, part_s, part_am, part_as, part_key, scores,
        lse, tokens, out_scores, logprobs, all_masked, allowed if allowed is not None else lse,
        k,
        NSPLIT=splits, NSPLIT_P2=_next_pow2(splits), KP=kp, WANT_ALLOWED=allowed_lse,
        MASKED=_MASKED_KEY, REAL_MIN=_REAL_KEY_MIN,
    )
    return MaskedTopK(lse, tokens, out_scores, logprobs, all_masked, allowed)
