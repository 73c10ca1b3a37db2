"""Torch twins of the contract's bit packing (`fstbeam.contract.bitmask`, re-exported here).

Imports numpy only at import time; the `*_torch` functions import torch when they are called.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..contract.bitmask import (  # noqa: F401  re-exported: one bit convention
    WORD_BITS,
    bitmask_width,
    pack_bool_mask,
    pack_ids,
    set_bits,
    tokens_in_bitmask,
    unpack_bitmask,
)

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = [
    "WORD_BITS",
    "bitmask_width",
    "pack_bool_mask",
    "pack_bool_mask_torch",
    "or_bits_torch",
    "pack_ids",
    "set_bits",
    "tokens_in_bitmask",
    "unpack_bitmask",
    "unpack_bitmask_torch",
]


# ---------------------------------------------------------------- torch twins (lazy torch)


def pack_bool_mask_torch(mask: "torch.Tensor") -> "torch.Tensor":
    """torch twin of `pack_bool_mask`: bool [..., V] -> int32 [..., ceil(V/32)], same device."""
    import torch

    if mask.dtype != torch.bool or mask.dim() == 0:
        raise ValueError(f"mask must be a bool tensor [..., V], got {mask.dtype} {list(mask.shape)}")
    vocab = mask.shape[-1]
    width = bitmask_width(vocab)
    padded = torch.nn.functional.pad(mask, (0, width * WORD_BITS - vocab)) if width * WORD_BITS != vocab else mask
    bits = padded.reshape(*mask.shape[:-1], width, WORD_BITS).to(torch.int64)
    shifts = torch.arange(WORD_BITS, device=mask.device, dtype=torch.int64)
    unsigned = (bits << shifts).sum(-1)  # [..., W] in [0, 2**32)
    signed = torch.where(unsigned >= 2**31, unsigned - 2**32, unsigned)
    return signed.to(torch.int32)


def unpack_bitmask_torch(words: "torch.Tensor", vocab_size: int) -> "torch.Tensor":
    """torch twin of `unpack_bitmask`: int32 [..., ceil(V/32)] -> bool [..., V], same device."""
    import torch

    width = bitmask_width(vocab_size)
    if words.dtype != torch.int32 or words.dim() == 0 or words.shape[-1] != width:
        raise ValueError(
            f"words must be int32 [..., ceil(V/32)] = [..., {width}] for V={vocab_size}, "
            f"got {words.dtype} {list(words.shape)}"
        )
    shifts = torch.arange(WORD_BITS, device=words.device, dtype=torch.int32)
    bits = (words.unsqueeze(-1) >> shifts) & 1  # arithmetic shift; & 1 keeps the right bit
    return bits.reshape(*words.shape[:-1], width * WORD_BITS)[..., :vocab_size].bool()


def or_bits_torch(m: "torch.Tensor", rows: "torch.Tensor", toks: "torch.Tensor", *, set_: bool) -> None:
    """Set (or clear) bit ``toks`` of row ``rows`` in the int32 mask ``m`` in place; (row, tok)
    pairs distinct."""
    import torch

    if rows.numel() == 0:
        return
    W = m.shape[1]
    flat = rows * W + (toks >> 5)
    bits = torch.ones_like(toks) << (toks & 31)  # int64, distinct bits per word: sum == OR
    uw, inv = torch.unique(flat, return_inverse=True)
    acc = torch.zeros(uw.shape[0], dtype=torch.int64, device=m.device).index_add_(0, inv, bits)
    acc32 = ((acc + (1 << 31)) % (1 << 32) - (1 << 31)).to(torch.int32)
    mv = m.view(-1)
    if set_:
        mv[uw] = mv[uw] | acc32
    else:
        mv[uw] = mv[uw] & ~acc32
