"""Array helpers shared by the light pipeline's modules (DFA minimization, CSR walks, ramps)."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

__all__ = ["read_only", "minimize", "renumber_rows", "renumber", "distinct_rows", "csr_entries", "ramp"]


def read_only(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def minimize(delta: np.ndarray, labels: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Moore partition refinement starting from ``labels``; returns (new delta, old->new map).
    Blocks are numbered by their first state, so state 0 stays state 0."""
    if delta.size <= SMALL_ROWS:
        return minimize_small(delta, labels)
    block = renumber(labels)
    while True:
        new = renumber_rows(np.column_stack([block, block[delta]]))
        if new.max() == block.max():
            break
        block = new
    _, rep = np.unique(block, return_index=True)  # first state of each block
    return block[delta[rep]].astype(np.int32), block


def minimize_small(delta: np.ndarray, labels: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """`minimize` in plain Python: a phrase's few dozen states cost less than numpy's calls."""
    rows = delta.tolist()
    seen: dict[Any, int] = {}
    block = [seen.setdefault(k, len(seen)) for k in labels]
    count = len(seen)
    while True:
        seen = {}
        new = [seen.setdefault((b, *[block[t] for t in row]), len(seen)) for b, row in zip(block, rows)]
        if len(seen) == count:  # refinement only splits blocks: the same count is the same partition
            break
        block, count = new, len(seen)
    if count == len(rows):  # already minimal (most phrases): every state is its own block, in order
        return delta.astype(np.int32), np.arange(count, dtype=np.int64)
    rep: dict[int, int] = {}
    for q, b in enumerate(block):
        rep.setdefault(b, q)  # first state of each block (blocks are numbered in that order)
    out = np.array([[block[t] for t in rows[q]] for q in rep.values()], dtype=np.int32).reshape(count, delta.shape[1])
    return out, np.array(block, dtype=np.int64)


def renumber_rows(rows: np.ndarray) -> np.ndarray:
    """Block id of each row, blocks numbered in order of their first row (as ``renumber``)."""
    if rows.size <= SMALL_ROWS:  # a dict of tuples beats np.unique(axis=0) ~10x on small tables
        return renumber(map(tuple, rows.tolist()))
    _, first, inv = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inv.reshape(-1)]


SMALL_ROWS = 1 << 16


def renumber(keys: Iterable[Any]) -> np.ndarray:
    seen: dict[Any, int] = {}
    return np.array([seen.setdefault(k, len(seen)) for k in keys], dtype=np.int64)


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows, row index of each row) of a small non-negative int matrix; each row read as
    one number (``np.unique(axis=0)`` costs ~10x more on the few rows of a phrase)."""
    base = int(rows.max()) + 1 if rows.size else 1
    if rows.shape[1] * base.bit_length() > 62:
        drows, inv = np.unique(rows, axis=0, return_inverse=True)
        return drows, inv.reshape(-1)
    code = rows.astype(np.int64) @ (base ** np.arange(rows.shape[1] - 1, -1, -1, dtype=np.int64))
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return rows[first], inv.reshape(-1)


def csr_entries(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position in ``rows``, entry index) of every entry of the CSR ``rows`` (``ptr``: row
    starts), in row order."""
    count = ptr[rows + 1] - ptr[rows]
    return np.repeat(np.arange(len(rows)), count), np.repeat(ptr[rows], count) + ramp(count)


def ramp(sizes: np.ndarray) -> np.ndarray:
    """[0..s0-1, 0..s1-1, ...] for the given sizes."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    starts = np.cumsum(sizes) - sizes
    out: np.ndarray = np.arange(total) - np.repeat(starts, sizes)
    return out
