"""The kernel calls the search step makes, with a local torch fallback.

The search step calls ``masked_topk`` and ``best_in_sets`` with the signatures of
``fstbeam.kernels.dispatch``. When that module is importable it is used (it picks the fused
Triton kernel on GPU and the fast CPU path elsewhere); otherwise the plain-torch functions below
run, with the same contract:

- ``masked_topk(logits [R, V], bitmask [S, W] int32, row_state [R] int64, scores [R] f32, k,
  *, allowed_lse=False)`` -> ``MaskedTopK(lse [R], tokens [R, k] int64 (-1 pad),
  scores [R, k] (= scores + logprob, -inf pad), logprobs [R, k], all_masked [R] bool,
  allowed_lse [R] | None)``; log-probs are under the full softmax, ties go to the lower token id.
- ``best_in_sets(logits, bitmask, row_state, token_sets [R, P, C] int64 (-1 pad), lse)`` ->
  ``(tokens [R, P] (-1 when no allowed token in the set), logprobs [R, P] (-inf))``.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["MaskedTopK", "masked_topk", "best_in_sets", "backend_name", "unpack_bits"]


class MaskedTopK(NamedTuple):
    lse: torch.Tensor
    tokens: torch.Tensor
    scores: torch.Tensor
    logprobs: torch.Tensor
    all_masked: torch.Tensor
    allowed_lse: torch.Tensor | None = None


_SHIFTS = None


def unpack_bits(words: torch.Tensor, width: int) -> torch.Tensor:
    """bool ``[..., width]`` from int32 ``[..., ceil(width/32)]`` (bit j of word i = id 32*i+j)."""
    global _SHIFTS
    if _SHIFTS is None or _SHIFTS.device != words.device:
        _SHIFTS = torch.arange(32, dtype=torch.int32, device=words.device)
    bits = (words.unsqueeze(-1) >> _SHIFTS) & 1  # [..., W, 32]
    return bits.reshape(*words.shape[:-1], -1)[..., :width].bool()


def _torch_masked_topk(logits, bitmask, row_state, scores, k, *, allowed_lse=False, backend="torch"):
    R, V = logits.shape
    x = logits.float()
    lse = torch.logsumexp(x, dim=-1)  # [R]
    allowed = unpack_bits(bitmask.index_select(0, row_state), V)  # [R, V]
    masked = x.masked_fill(~allowed, float("-inf"))
    a_lse = torch.logsumexp(masked, dim=-1) if allowed_lse else None
    kk = min(k, V)
    vals, idx = torch.topk(masked, kk, dim=-1, sorted=True)  # [R, kk]
    # Deterministic order among equal values: lower id first.
    order = torch.argsort(idx, dim=-1, stable=True)
    idx = idx.gather(1, order)
    vals = vals.gather(1, order)
    order = torch.argsort(-vals, dim=-1, stable=True)
    idx, vals = idx.gather(1, order), vals.gather(1, order)
    ok = torch.isfinite(vals)
    lp = torch.where(ok, vals - lse[:, None], torch.full_like(vals, float("-inf")))
    tokens = torch.where(ok, idx, torch.full_like(idx, -1))
    sc = torch.where(ok, scores.float()[:, None] + lp, lp)
    if kk < k:
        pad = k - kk
        tokens = torch.cat([tokens, tokens.new_full((R, pad), -1)], 1)
        lp = torch.cat([lp, lp.new_full((R, pad), float("-inf"))], 1)
        sc = torch.cat([sc, sc.new_full((R, pad), float("-inf"))], 1)
    return MaskedTopK(lse, tokens, sc, lp, ~allowed.any(-1), a_lse)


def _torch_best_in_sets(logits, bitmask, row_state, token_sets, lse, backend="torch"):
    R, P, C = token_sets.shape
    V = logits.shape[1]
    if C == 0 or P == 0:
        return token_sets.new_full((R, P), -1), logits.new_full((R, P), float("-inf"), dtype=torch.float32)
    valid = token_sets >= 0
    t = token_sets.clamp(min=0)  # [R, P, C]
    words = bitmask.index_select(0, row_state)  # [R, W]
    w = words.gather(1, (t >> 5).reshape(R, -1)).reshape(R, P, C)
    bit = ((w >> (t & 31).to(torch.int32)) & 1).bool() & valid
    vals = logits.float().gather(1, t.reshape(R, -1)).reshape(R, P, C)
    vals = vals.masked_fill(~bit, float("-inf"))
    # Lower id first among ties: sort each set by id, then take the first max.
    t_sorted, order = torch.sort(torch.where(bit, t, torch.full_like(t, V)), dim=-1, stable=True)
    v_sorted = vals.gather(-1, order)
    best = v_sorted.argmax(-1, keepdim=True)  # first maximum
    bv = v_sorted.gather(-1, best).squeeze(-1)
    bt = t_sorted.gather(-1, best).squeeze(-1)
    ok = torch.isfinite(bv)
    tokens = torch.where(ok, bt, torch.full_like(bt, -1))
    lp = torch.where(ok, bv - lse.float()[:, None], torch.full_like(bv, float("-inf")))
    return tokens, lp


def _load():
    try:  # the kernels package (fused / fast CPU) when it exists in this checkout
        from ..kernels import dispatch as d  # type: ignore[attr-defined]

        return d.masked_topk, d.best_in_sets, "fstbeam.kernels"
    except Exception:  # noqa: BLE001 - any import problem means: use the local fallback
        return _torch_masked_topk, _torch_best_in_sets, "runtime-fallback"


_MASKED_TOPK, _BEST_IN_SETS, _BACKEND = _load()


def backend_name() -> str:
    """Which implementation the search step calls: ``fstbeam.kernels`` or ``runtime-fallback``."""
    return _BACKEND


def masked_topk(logits, bitmask, row_state, scores, k, *, allowed_lse=False, backend="auto") -> MaskedTopK:
    out = _MASKED_TOPK(logits, bitmask, row_state, scores, k, allowed_lse=allowed_lse, backend=backend)
    if not isinstance(out, MaskedTopK):  # the kernels package has its own named tuple
        out = MaskedTopK(
            out.lse, out.tokens, out.scores, out.logprobs, out.all_masked, getattr(out, "allowed_lse", None)
        )
    return out


def best_in_sets(logits, bitmask, row_state, token_sets, lse, *, backend="auto"):
    return _BEST_IN_SETS(logits, bitmask, row_state, token_sets, lse, backend=backend)
