"""The minimal acyclic DFA of a finite set of byte strings, built with numpy in linear passes.

A word list of a million forms must compile in seconds, so nothing here runs Python per word or
per character. The construction is Revuz's (1992) minimization of the trie by height, the
vectorizable twin of Daciuk et al.'s (2000) incremental algorithm: both give the unique minimal
DFA of the set, Daciuk by registering states during one pass over the sorted words, Revuz by
registering all states of one height at once.

1. Sort the forms (fixed-width ``S`` array, NUL padded: sorts as bytes do) and compute each
   form's longest common prefix with its predecessor.
2. Trie nodes depth by depth: form ``i`` opens a new node at depth ``d`` iff ``lcp[i] < d``.
   Nodes get breadth-first ids, so each node's children are one id range sorted by byte.
3. Heights (longest path to a leaf), then classes height by height: two nodes of one height
   are equivalent iff they agree on finality and on the (byte, child class) list. The lists are
   compared exactly by ranking them one child position at a time with ``np.unique``.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

log = logging.getLogger("fstbeam.fst")

__all__ = ["AcyclicDFA", "forms_array", "minimal_acyclic_dfa"]


@dataclass(frozen=True, eq=False)
class AcyclicDFA:
    """Arcs in CSR by state, sorted by byte within a state."""

    ptr: np.ndarray  # int64 [S+1]
    byte: np.ndarray  # uint8 [A]
    next: np.ndarray  # int64 [A]
    final: np.ndarray  # bool [S]
    start: int

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def num_arcs(self) -> int:
        return len(self.byte)

    def step(self, state: int, byte: int) -> int:
        """Next state on ``byte`` (-1 if none)."""
        lo, hi = self.ptr[state], self.ptr[state + 1]
        i = lo + int(np.searchsorted(self.byte[lo:hi], byte))
        return int(self.next[i]) if i < hi and self.byte[i] == byte else -1


def forms_array(forms) -> np.ndarray:
    """Encoded forms (an iterable of ``bytes``) as a fixed-width ``S`` array (not yet sorted)."""
    arr = np.array(list(forms), dtype=np.bytes_)
    return arr if len(arr) else np.zeros(0, "S1")


def _lcp(mat: np.ndarray) -> np.ndarray:
    """Common prefix length of each row with the row before it (0 for the first row)."""
    n, width = mat.shape
    lcp = np.zeros(n, np.int64)
    step = 1 << 18  # bounded temporaries: a million forms must stay within a few hundred MB
    for lo in range(1, n, step):
        hi = min(n, lo + step)
        diff = mat[lo:hi] != mat[lo - 1:hi - 1]
        lcp[lo:hi] = np.where(diff.any(axis=1), diff.argmax(axis=1), width)
    return lcp


def _trie(mat: np.ndarray, lens: np.ndarray, lcp: np.ndarray):
    """(parent, byte, final, level starts) of the trie's nodes in breadth-first order; node 0 is
    the root, and nodes ``levels[d]..levels[d+1]-1`` are those at depth ``d``."""
    n = len(lens)
    cur = np.zeros(n, np.int64)  # each row's node at the previous depth
    parents, bytes_, finals = [np.full(1, -1, np.int64)], [np.zeros(1, np.uint8)], []
    next_id = 1
    levels = [0, 1]
    if n and lens.min() == 0:
        finals.append(np.zeros(1, np.int64))
    for d in range(1, mat.shape[1] + 1):
        live = np.flatnonzero(lens >= d)
        if not len(live):
            break
        new = lcp[live] < d
        ids = next_id + np.cumsum(new) - 1  # a row that opens no node shares its predecessor's
        fresh = live[new]
        parents.append(cur[fresh])
        bytes_.append(mat[fresh, d - 1])
        cur[live] = ids
        finals.append(ids[lens[live] == d])
        next_id += len(fresh)
        levels.append(next_id)
    final = np.zeros(next_id, bool)
    final[np.concatenate(finals)] = True
    return np.concatenate(parents), np.concatenate(bytes_), final, levels


def _heights(parent: np.ndarray, levels: list[int]) -> np.ndarray:
    """Longest path from each node to a leaf; ``levels`` are the first ids of each depth."""
    height = np.zeros(len(parent), np.int64)
    for lo, hi in zip(levels[-2:0:-1], levels[:1:-1]):  # deepest level first; the root has no parent
        par = parent[lo:hi]  # non-decreasing within a level
        starts = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
        height[par[starts]] = np.maximum.reduceat(height[lo:hi] + 1, starts)
    return height


def _children(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first child, number of children) per node: children are contiguous, ordered by parent."""
    deg = np.bincount(parent[1:], minlength=len(parent))
    child_lo = np.cumsum(deg) - deg + 1
    return child_lo, deg


def _classes(parent, byte, final, height, child_lo, deg) -> tuple[np.ndarray, int]:
    """Equivalence class of every trie node (= state of the minimal DFA) and the class count."""
    n = len(parent)
    cls = np.empty(n, np.int64)  # every node gets its class below (each has a height)
    order = np.argsort(height.astype(np.int16), kind="stable")  # radix sort
    ends = np.cumsum(np.bincount(height)).tolist()  # nodes of height h: order[ends[h-1]:ends[h]]
    total = 0
    for lo, hi in zip([0] + ends[:-1], ends):
        if lo == hi:
            continue
        nodes = order[lo:hi]
        d = deg[nodes]
        rank, _ = dense_rank(final[nodes].astype(np.int64) * (int(d.max()) + 1) + d)
        m = 256 * total + 1  # keys (rank, byte, child class) packed below rank * m
        for j in range(int(d.max())):
            has = np.flatnonzero(d > j)
            c = child_lo[nodes[has]] + j
            key = rank[has] * m + byte[c].astype(np.int64) * total + cls[c]
            inv, _ = dense_rank(key)
            rank[has] = int(rank.max()) + 1 + inv
        rank, k = dense_rank(rank)
        cls[nodes] = total + rank
        total += k
    return cls, total


def dense_rank(v: np.ndarray) -> tuple[np.ndarray, int]:
    """(rank of each value among the distinct values, their count): ``np.unique``'s inverse,
    without its stable argsort where it can: a table lookup when the values span little more
    than their count, else one sort of packed (value, position) words when they fit 63 bits."""
    n = len(v)
    if n == 0:
        return np.zeros(0, np.int64), 0
    lo = int(v.min())
    v = v.astype(np.int64) - lo
    span = int(v.max()) + 1
    if span <= 4 * n + 4096:
        present = np.zeros(span, bool)
        present[v] = True
        remap = np.cumsum(present) - 1
        return remap[v], int(remap[-1]) + 1
    ib = (n - 1).bit_length()
    if (span - 1).bit_length() + ib > 63:
        _, inv = np.unique(v, return_inverse=True)
        return inv.reshape(-1).astype(np.int64), int(inv.max()) + 1
    packed = np.sort((v << ib) | np.arange(n))
    k = packed >> ib
    r = np.empty(n, np.int64)
    r[0] = 0
    np.cumsum(k[1:] != k[:-1], out=r[1:])
    inv = np.empty(n, np.int64)
    inv[packed & ((1 << ib) - 1)] = r
    return inv, int(r[-1]) + 1


def minimal_acyclic_dfa(forms: np.ndarray) -> AcyclicDFA:
    """Minimal DFA accepting exactly ``forms`` (an ``S`` array; no form may contain a NUL byte)."""
    t0 = time.perf_counter()
    forms = np.sort(forms, kind="stable")  # timsort: fast on the sorted runs callers pass
    if len(forms) > 1:
        forms = forms[np.r_[True, forms[1:] != forms[:-1]]]
    n = len(forms)
    if n == 0:
        return AcyclicDFA(np.zeros(2, np.int64), np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(1, bool), 0)
    mat = forms.view(np.uint8).reshape(n, forms.dtype.itemsize)
    lens = np.count_nonzero(mat, axis=1)
    parent, byte, final, levels = _trie(mat, lens, _lcp(mat))
    del mat
    child_lo, deg = _children(parent)
    cls, k = _classes(parent, byte, final, _heights(parent, levels), child_lo, deg)
    rep = np.zeros(k, np.int64)
    rep[cls] = np.arange(len(cls))
    lo, counts = child_lo[rep], deg[rep]
    ptr = np.zeros(k + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    kids = np.repeat(lo, counts) + (np.arange(int(ptr[-1])) - np.repeat(ptr[:-1], counts))
    dfa = AcyclicDFA(ptr, byte[kids].copy(), cls[kids], final[rep], int(cls[0]))
    log.info(
        "word forms: %d forms, %d trie nodes -> %d states, %d arcs in %.3f s",
        n, len(parent), dfa.num_states, dfa.num_arcs, time.perf_counter() - t0,
    )
    return dfa
