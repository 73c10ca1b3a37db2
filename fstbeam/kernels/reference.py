"""Pure-torch reference: the executable specification of the kernel contract.

Every backend (`cpu_fast`, `triton_masked_topk`) implements these signatures and is tested
against these functions and against an independent float64 numpy oracle. The reference is
written for clarity, not speed: it upcasts the logits to float32, unpacks the masks and runs a
full stable sort. Call it through `fstbeam.kernels.dispatch` (`backend="torch"`) to get the
argument checks.

Contract of `masked_topk`, row r (state s = row_state[r], x = logits[r] read as float32):
  lse[r]          log(sum_t exp(x[t])) over the FULL vocabulary, in float32 (-inf if all -inf).
  selectable      token t with bit t of bitmask[s] set (t < V; bits >= V are ignored) and
                  x[t] > -inf. A -inf logit is never selected, even when allowed.
  order           selectable tokens by descending x[t]; equal x[t] -> lower token id first
                  (-0.0 == +0.0). The score below is monotone in x[t], so the order is also
                  by descending score; when two different logits round to the same float32
                  score, the higher logit comes first (a tie-break on the logit, not on the
                  rounded score, is the only one every backend can reproduce exactly).
  tokens[r, i]    the i-th selectable token (int64), -1 past the last one.
  logprobs[r, i]  x[token] - lse[r] (float32), -inf in padding.
  scores[r, i]    scores[r] + logprobs[r, i] (float32), -inf in padding.
  all_masked[r]   no selectable token (tokens[r, 0] == -1).
  allowed_lse[r]  log-sum-exp over the allowed tokens only (-inf logits included as 0 terms;
                  -inf if none allowed), when requested; None otherwise.
NaN and +inf logits are outside the contract: the results are unspecified and may differ
between backends. `dispatch.masked_topk(..., debug=True)` rejects them.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import torch

from .bitmask import unpack_bitmask_torch

__all__ = ["MaskedTopK", "best_in_sets", "masked_topk"]

_NEG_INF = float("-inf")


class MaskedTopK(NamedTuple):
    """Result of `masked_topk` for R rows and k slots (see the module docstring)."""

    lse: torch.Tensor  # [R] float32
    tokens: torch.Tensor  # [R, k] int64, -1 = padding
    scores: torch.Tensor  # [R, k] float32, -inf = padding
    logprobs: torch.Tensor  # [R, k] float32, -inf = padding
    all_masked: torch.Tensor  # [R] bool
    allowed_lse: Optional[torch.Tensor]  # [R] float32 or None


def masked_topk(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    row_state: torch.Tensor,
    scores: torch.Tensor,
    k: int,
    *,
    allowed_lse: bool = False,
) -> MaskedTopK:
    """Masked log-softmax + top-k of each row (see the module docstring for the contract).

    logits [R, V] float32/bfloat16/float16 (any strides); bitmask [S, ceil(V/32)] int32;
    row_state [R] int64 in [0, S); scores [R] float32; k >= 0.
    """
    num_rows, vocab = logits.shape
    x = logits.float()  # [R, V]
    lse = torch.logsumexp(x, dim=-1)  # [R]
    allowed = unpack_bitmask_torch(bitmask[row_state], vocab)  # [R, V]
    selectable = allowed & (x > _NEG_INF)  # [R, V]
    keyed = x.masked_fill(~selectable, _NEG_INF)  # [R, V]
    # Stable descending sort: equal values keep ascending token order.
    values, order = torch.sort(keyed, dim=-1, descending=True, stable=True)
    kept = min(k, vocab)
    values, order = values[:, :kept], order[:, :kept]  # [R, kept]
    valid = values > _NEG_INF  # selectable tokens sort before all the -inf ones
    tokens = torch.where(valid, order, torch.full_like(order, -1))
    logprobs = torch.where(valid, values - lse[:, None], torch.full_like(values, _NEG_INF))
    out_scores = torch.where(valid, scores[:, None] + logprobs, torch.full_like(values, _NEG_INF))
    if kept < k:  # k > V: pad the missing slots
        pad = k - kept
        tokens = torch.nn.functional.pad(tokens, (0, pad), value=-1)
        logprobs = torch.nn.functional.pad(logprobs, (0, pad), value=_NEG_INF)
        out_scores = torch.nn.functional.pad(out_scores, (0, pad), value=_NEG_INF)
    allowed_lse_out = None
    if allowed_lse:
        allowed_lse_out = torch.logsumexp(x.masked_fill(~allowed, _NEG_INF), dim=-1)
    return MaskedTopK(
        lse=lse,
        tokens=tokens,
        scores=out_scores,
        logprobs=logprobs,
        all_masked=~selectable.any(dim=-1),
        allowed_lse=allowed_lse_out,
    )


def best_in_sets(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    row_state: torch.Tensor,
    token_sets: torch.Tensor,
    lse: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Best allowed token of each candidate set: Dynamic Beam Allocation's "best token that
    advances each unmet phrase".

    logits [R, V]; bitmask [S, ceil(V/32)] int32; row_state [R] int64; token_sets [R, P, C]
    int64 token ids, -1 = padding; lse [R] float32 (from `masked_topk`).
    Returns tokens [R, P] int64 (-1 when no token of the set is selectable, with the same
    selectability rule as `masked_topk`: allowed and logit > -inf; ties -> lower id) and
    logprobs [R, P] float32 (logit - lse, -inf when none). Reads only the R*P*C gathered
    logits, never the whole row.
    """
    num_rows, vocab = logits.shape
    _, num_sets, set_size = token_sets.shape
    present = token_sets >= 0  # [R, P, C]
    ids = token_sets.clamp(min=0)  # [R, P, C]
    flat_ids = ids.reshape(num_rows, num_sets * set_size)  # [R, P*C]
    values = logits.gather(1, flat_ids).float().reshape(num_rows, num_sets, set_size)  # [R, P, C]
    words = bitmask[row_state].gather(1, flat_ids >> 5).reshape(num_rows, num_sets, set_size)
    allowed = ((words >> (ids & 31).to(torch.int32)) & 1).bool()  # [R, P, C]
    ok = present & allowed & (values > _NEG_INF)  # [R, P, C]
    keyed = values.masked_fill(~ok, _NEG_INF)
    if set_size == 0:
        best = torch.full((num_rows, num_sets), _NEG_INF, dtype=torch.float32, device=logits.device)
        best_id = torch.full((num_rows, num_sets), vocab, dtype=torch.int64, device=logits.device)
    else:
        best = keyed.amax(dim=-1)  # [R, P]
        at_best = ok & (keyed == best[..., None])
        best_id = torch.where(at_best, ids, torch.full_like(ids, vocab)).amin(dim=-1)  # [R, P]
    found = ok.any(dim=-1) if set_size else torch.zeros_like(best, dtype=torch.bool)
    tokens = torch.where(found, best_id, torch.full_like(best_id, -1))
    logprobs = torch.where(found, best - lse[:, None], torch.full_like(best, _NEG_INF))
    return tokens, logprobs
