"""numba twin of the shortlist's column remap (``runtime.shortlist.sub_mask_torch``): the bits of
a bitmask ``[R, W]`` at columns ``ids`` (sorted token ids), packed into ``[R, ceil(M/32)]``.

The torch version builds ``[R, M]`` int64 temporaries (gather, shift, pack); this one reads each
needed mask word once per column and writes each output word once: about a millisecond at
``R=40, M=21,000`` against several for torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

if TYPE_CHECKING:  # `fill_state_row` works on numpy alone: a compile and its first mask never load torch
    import torch

__all__ = ["fill_state_row", "select_bits"]


@njit(nogil=True, cache=True)
def _select_bits(mask, words, shifts, out):  # pragma: no cover - compiled
    R, M = mask.shape[0], words.shape[0]
    for r in range(R):
        for j in range(out.shape[1]):
            base = j * 32
            n = min(32, M - base)
            acc = np.int64(0)
            for b in range(n):
                c = base + b
                acc |= np.int64((mask[r, words[c]] >> shifts[c]) & 1) << b
            if acc >= 2147483648:
                acc -= 4294967296
            out[r, j] = np.int32(acc)


def select_bits(mask: torch.Tensor, words: torch.Tensor, shifts: torch.Tensor) -> torch.Tensor:
    """int32 ``[R, ceil(M/32)]``: bit ``shifts[c]`` of word ``words[c]`` of each row of ``mask``
    (int32 ``[R, W]``, CPU) at bit ``c``; ``words``/``shifts`` int64 ``[M]`` (``ids >> 5``, ``ids & 31``)."""
    import torch

    M = int(words.shape[0])
    out = torch.empty((mask.shape[0], -(-M // 32)), dtype=torch.int32)
    _select_bits(mask.contiguous().numpy(), words.numpy(), shifts.numpy(), out.numpy())
    return out


@njit(nogil=True, cache=True)
def _fill_state_row(dense_masks, state_dense_row, sparse_ptr, sparse_tokens, state, out):  # pragma: no cover - compiled
    row = dense_masks[state_dense_row[state]]
    for j in range(out.shape[0]):
        out[j] = row[j]
    for i in range(sparse_ptr[state], sparse_ptr[state + 1]):
        t = sparse_tokens[i]
        out[t >> 5] |= np.int32(np.uint32(1) << np.uint32(t & 31))


def fill_state_row(hard, state: int, out: np.ndarray) -> np.ndarray:
    """The mask of hard automaton state ``state`` written into ``out`` (int32 ``[ceil(V/32)]``):
    its dense row with its sparse tokens' bits set, the host-side twin of the decoder's gather;
    one compiled pass (copy, then one OR per sparse token) instead of a copy and ``np.bitwise_or.at``."""
    _fill_state_row(hard.dense_masks, hard.state_dense_row, hard.state_sparse_ptr, hard.state_sparse_tokens,
                    int(state), out)
    return out
