"""Independent float64 numpy oracle for the kernel contract, and test-case builders.

Shares no code with fstbeam.kernels: masks are bool arrays here, the top-k is a lexsort,
and the log-sum-exp is computed in float64.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch


@dataclasses.dataclass
class OracleTopK:
    lse: np.ndarray  # [R] float64
    tokens: np.ndarray  # [R, k] int64, -1 padding
    logprobs: np.ndarray  # [R, k] float64, -inf padding
    scores: np.ndarray  # [R, k] float64
    all_masked: np.ndarray  # [R] bool
    allowed_lse: np.ndarray  # [R] float64


def logsumexp64(x: np.ndarray) -> np.ndarray:
    """log(sum(exp(x))) over the last axis in float64; -inf for empty or all -inf."""
    if x.shape[-1] == 0:
        return np.full(x.shape[:-1], -np.inf)
    top = x.max(axis=-1, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return (np.log(np.exp(x - safe).sum(axis=-1, keepdims=True)) + safe)[..., 0]


def oracle_masked_topk(x64: np.ndarray, allowed: np.ndarray, scores: np.ndarray, k: int) -> OracleTopK:
    """x64 [R, V] float64 (the exact values of the logits), allowed [R, V] bool per row."""
    num_rows, vocab = x64.shape
    lse = logsumexp64(x64)
    tokens = np.full((num_rows, k), -1, np.int64)
    logprobs = np.full((num_rows, k), -np.inf)
    out_scores = np.full((num_rows, k), -np.inf)
    all_masked = np.zeros(num_rows, bool)
    for r in range(num_rows):
        ids = np.flatnonzero(allowed[r] & (x64[r] > -np.inf))
        all_masked[r] = ids.size == 0
        order = np.lexsort((ids, -x64[r, ids]))  # value descending, then id ascending
        best = ids[order][:k]
        tokens[r, : best.size] = best
        logprobs[r, : best.size] = x64[r, best] - lse[r]
        out_scores[r, : best.size] = scores[r] + logprobs[r, : best.size]
    allowed_lse = logsumexp64(np.where(allowed, x64, -np.inf))
    return OracleTopK(lse, tokens, logprobs, out_scores, all_masked, allowed_lse)


def oracle_best_in_sets(x64, allowed, token_sets, lse64):
    """Best selectable token per set: max value, ties to the lower id; -1 / -inf if none."""
    num_rows, num_sets, _ = token_sets.shape
    tokens = np.full((num_rows, num_sets), -1, np.int64)
    logprobs = np.full((num_rows, num_sets), -np.inf)
    for r in range(num_rows):
        for p in range(num_sets):
            best = None
            for t in token_sets[r, p]:
                if t < 0 or not allowed[r, t] or x64[r, t] == -np.inf:
                    continue
                if best is None or x64[r, t] > x64[r, best] or (x64[r, t] == x64[r, best] and t < best):
                    best = int(t)
            if best is not None:
                tokens[r, p] = best
                logprobs[r, p] = x64[r, best] - lse64[r]
    return tokens, logprobs


def pack_rows(allowed: np.ndarray, rng: np.random.Generator, garbage_beyond_v: bool = True) -> torch.Tensor:
    """Pack bool rows [S, V] bit by bit (deliberately not via fstbeam), with random bits past V."""
    num_states, vocab = allowed.shape
    width = (vocab + 31) // 32
    padded = np.zeros((num_states, width * 32), np.uint64)
    padded[:, :vocab] = allowed
    weights = np.uint64(1) << np.arange(32, dtype=np.uint64)  # bit j of a word = token 32*i + j
    words = (padded.reshape(num_states, width, 32) * weights).sum(axis=-1, dtype=np.uint64).astype(np.uint32)
    if garbage_beyond_v and vocab % 32:
        high = np.uint32(0xFFFFFFFF) << np.uint32(vocab % 32)
        words[:, -1] |= rng.integers(0, 2**32, num_states, dtype=np.uint64).astype(np.uint32) & high
    return torch.from_numpy(words.view(np.int32).copy())


MASK_KINDS = ("empty", "single", "almost_full", "rand10", "rand90")


def make_mask(kind: str, num_states: int, vocab: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "empty":
        return np.zeros((num_states, vocab), bool)
    if kind == "single":
        mask = np.zeros((num_states, vocab), bool)
        mask[np.arange(num_states), rng.integers(0, vocab, num_states)] = True
        return mask
    if kind == "almost_full":
        mask = np.ones((num_states, vocab), bool)
        for s in range(num_states):
            mask[s, rng.integers(0, vocab, min(3, vocab - 1) if vocab > 1 else 0)] = False
        return mask
    density = {"rand10": 0.1, "rand90": 0.9}[kind]
    return rng.random((num_states, vocab)) < density


def exact64(logits: torch.Tensor) -> np.ndarray:
    """The exact values of float32/bfloat16/float16 logits as float64."""
    return logits.float().double().numpy()


def assert_matches_oracle(result, oracle: OracleTopK, *, allowed_lse: bool = True, what: str = "") -> None:
    """Tokens, padding and flags exactly; floats within float32 rounding of the oracle."""
    num_rows, k = oracle.tokens.shape
    assert result.tokens.dtype == torch.int64 and tuple(result.tokens.shape) == (num_rows, k), what
    for name in ("scores", "logprobs"):
        assert getattr(result, name).dtype == torch.float32 and tuple(getattr(result, name).shape) == (num_rows, k)
    assert result.lse.dtype == torch.float32 and tuple(result.lse.shape) == (num_rows,), what
    assert result.all_masked.dtype == torch.bool and tuple(result.all_masked.shape) == (num_rows,), what
    tokens = result.tokens.cpu().numpy()
    np.testing.assert_array_equal(tokens, oracle.tokens, err_msg=f"{what} tokens")
    np.testing.assert_array_equal(result.all_masked.cpu().numpy(), oracle.all_masked, err_msg=f"{what} all_masked")
    np.testing.assert_allclose(result.lse.cpu().numpy(), oracle.lse, rtol=1e-6, atol=2e-6, err_msg=f"{what} lse")
    np.testing.assert_allclose(result.logprobs.cpu().numpy(), oracle.logprobs, rtol=1e-6, atol=4e-6,
                               err_msg=f"{what} logprobs")
    np.testing.assert_allclose(result.scores.cpu().numpy(), oracle.scores, rtol=1e-6, atol=8e-6,
                               err_msg=f"{what} scores")
    if allowed_lse:
        np.testing.assert_allclose(result.allowed_lse.cpu().numpy(), oracle.allowed_lse, rtol=1e-6, atol=2e-6,
                                   err_msg=f"{what} allowed_lse")
    else:
        assert result.allowed_lse is None


def assert_same_result(a, b, what: str = "") -> None:
    """Two backends agree: integers exactly, floats within float32 rounding."""
    for name in ("tokens", "all_masked"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, f"{what} {name}: {x.dtype} {x.shape} vs {y.dtype} {y.shape}"
        np.testing.assert_array_equal(x.cpu().numpy(), y.cpu().numpy(), err_msg=f"{what} {name}")
    for name in ("lse", "logprobs", "scores", "allowed_lse"):
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, f"{what} {name}"
            continue
        assert x.dtype == y.dtype == torch.float32 and x.shape == y.shape, f"{what} {name}"
        np.testing.assert_allclose(x.cpu().numpy(), y.cpu().numpy(), rtol=1e-6, atol=4e-6, err_msg=f"{what} {name}")
