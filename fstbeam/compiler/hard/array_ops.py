"""Array helpers of the lift and the tables: CSR pointers, packed sorts, concatenated ranges."""
from __future__ import annotations

import numpy as np


def csr(keys: np.ndarray, n: int) -> np.ndarray:
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr


def order_by(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """``np.lexsort((minor, major))`` for non-negative ints; one argsort of a packed key when
    both fit in 63 bits (a third of lexsort's time on millions of arcs), none when the pairs
    are already in order."""
    if not len(major):
        return np.zeros(0, np.int64)
    shift = int(minor.max()).bit_length()
    if shift + int(major.max()).bit_length() > 63:
        return np.lexsort((minor, major))
    key = (major.astype(np.int64) << shift) | minor
    if not (key[1:] < key[:-1]).any():
        return np.arange(len(key))
    return np.argsort(key, kind="stable")


def grouped(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(``values`` ordered by ``keys``, ties by value; CSR pointers over keys ``0..n-1``), for
    non-negative ints. One unstable sort of packed (key, value) words where they fit in 63 bits:
    5x faster than a stable argsort plus a gather at ten million entries."""
    ptr = csr(keys, n)
    if not len(keys):
        return np.zeros(0, np.int64), ptr
    shift = int(values.max()).bit_length()
    if shift + int(n).bit_length() > 63:
        return values[np.lexsort((values, keys))].astype(np.int64), ptr
    packed = np.sort((keys.astype(np.int64) << shift) | values)
    return packed & ((1 << shift) - 1), ptr


def sorted_triples(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, c)`` reordered by ``(a, b)`` (non-negative ints, pairs distinct); one sort of a
    packed word when all three fit in 63 bits, else a lexsort."""
    if not len(a):
        return a, b, c
    sb, sc = int(b.max()).bit_length(), int(c.max()).bit_length()
    if sb + sc + int(a.max()).bit_length() > 63:
        o = np.lexsort((b, a))
        return a[o], b[o], c[o]
    packed = np.sort((((a.astype(np.int64) << sb) | b) << sc) | c)
    return packed >> (sb + sc), (packed >> sc) & ((1 << sb) - 1), packed & ((1 << sc) - 1)


def concat_ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(lo[i], hi[i])`` for every i, without a Python loop."""
    counts = hi - lo
    out = np.arange(int(counts.sum()), dtype=np.int64)
    out += np.repeat(lo - (np.cumsum(counts) - counts), counts)  # one repeat, added in place
    return out


def ranges(ptr: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of CSR rows ``ids`` in ``ptr``'s value arrays, concatenated."""
    return concat_ranges(ptr[ids], ptr[ids + 1])

