"""Bit-packed allowed-token masks: the one place that knows the bit convention.

A mask row over a vocabulary of V tokens is `bitmask_width(V) = ceil(V / 32)` int32 words.
Token t is allowed iff bit (t % 32) of word (t // 32) is set, reading the word as a uint32
bit pattern where bit j has value `1 << j` (little-endian bit order inside the word). Words
are stored as int32, so a word with bit 31 set is negative. Bits at positions >= V in the last
word carry no meaning: every reader ignores them and `pack_bool_mask` writes them as 0.

Because the words are little-endian in memory, byte b of a row holds the bits of tokens
8b .. 8b+7 (bit j = token 8b+j); `cpu_fast` relies on that to read a row as bytes.

Part of the compiler-runtime contract (numpy only): the compiler packs tables with it, the
runtime reads them; the torch twins live in `fstbeam.kernels.bitmask`.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "WORD_BITS",
    "bitmask_width",
    "pack_bool_mask",
    "pack_ids",
    "set_bits",
    "tokens_in_bitmask",
    "unpack_bitmask",
]

WORD_BITS = 32
_LITTLE_I32 = np.dtype("<i4")


def bitmask_width(vocab_size: int) -> int:
    """Number of int32 words per mask row: ceil(vocab_size / 32)."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 0:
        raise ValueError(f"vocab_size must be a non-negative int, got {vocab_size!r}")
    return (int(vocab_size) + WORD_BITS - 1) // WORD_BITS


def pack_bool_mask(mask: np.ndarray) -> np.ndarray:
    """Pack a bool array [..., V] into int32 words [..., ceil(V/32)] (bits beyond V are 0)."""
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(f"mask must be a bool array [..., V], got dtype {mask.dtype}")
    if mask.ndim == 0:
        raise ValueError("mask must have at least one dimension [..., V], got a scalar")
    vocab = mask.shape[-1]
    width = bitmask_width(vocab)
    packed = np.packbits(mask, axis=-1, bitorder="little")  # [..., ceil(V/8)] uint8
    pad = width * 4 - packed.shape[-1]
    if pad:
        packed = np.concatenate([packed, np.zeros(packed.shape[:-1] + (pad,), np.uint8)], axis=-1)
    words = np.ascontiguousarray(packed).view(_LITTLE_I32)  # [..., W]
    return words.astype(np.int32, copy=False)  # native byte order (a no-op on little-endian)


def unpack_bitmask(words: np.ndarray, vocab_size: int) -> np.ndarray:
    """Unpack int32 words [..., ceil(V/32)] into a bool array [..., V] (bits beyond V dropped)."""
    words = np.asarray(words)
    width = bitmask_width(vocab_size)
    if words.dtype != np.int32 or words.ndim == 0 or words.shape[-1] != width:
        raise ValueError(
            f"words must be int32 [..., ceil(V/32)] = [..., {width}] for V={vocab_size}, "
            f"got {words.dtype} {list(words.shape)}"
        )
    as_bytes = np.ascontiguousarray(words.astype(_LITTLE_I32, copy=False)).view(np.uint8)
    bits = np.unpackbits(as_bytes, axis=-1, bitorder="little")  # [..., 32 * W]
    return bits[..., :vocab_size].astype(bool)


def set_bits(words_row: np.ndarray, token_ids: ArrayLike) -> np.ndarray:
    """Set the bits of `token_ids` in one int32 row [W], in place; returns the row."""
    if not isinstance(words_row, np.ndarray) or words_row.dtype != np.int32 or words_row.ndim != 1:
        raise ValueError(f"words_row must be a 1-D int32 array [W], got {type(words_row).__name__} "
                         f"{getattr(words_row, 'dtype', '')} {list(getattr(words_row, 'shape', []))}")
    ids = np.asarray(token_ids, dtype=np.int64).reshape(-1)
    limit = words_row.shape[0] * WORD_BITS
    if ids.size and (ids.min() < 0 or ids.max() >= limit):
        bad = ids[(ids < 0) | (ids >= limit)][0]
        raise ValueError(f"token id {bad} is outside the row's {limit} bits (0 <= id < 32 * W)")
    unsigned = words_row.view(np.uint32)
    np.bitwise_or.at(unsigned, ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
    return words_row


def pack_ids(token_ids: ArrayLike, vocab_size: int) -> np.ndarray:
    """A new int32 row [ceil(vocab_size/32)] with exactly the bits of ``token_ids`` set."""
    return set_bits(np.zeros(bitmask_width(vocab_size), dtype=np.int32), token_ids)


def tokens_in_bitmask(words_row: np.ndarray, vocab_size: int) -> np.ndarray:
    """Sorted int64 ids of the allowed tokens (< vocab_size) in one row [ceil(V/32)]."""
    words_row = np.asarray(words_row)
    if words_row.ndim != 1:
        raise ValueError(f"words_row must be 1-D [W], got shape {list(words_row.shape)}")
    return np.flatnonzero(unpack_bitmask(words_row, vocab_size)).astype(np.int64)
