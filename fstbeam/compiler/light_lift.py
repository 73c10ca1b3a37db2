"""Lifting a light automaton's character DFA to tokens in time near-linear in the phrase length.

The direct way runs every candidate token from every state: a ``[Q, C]`` matrix, where both the
number of states Q and the number of candidate tokens C grow with the phrase (a 10,000-character
avoid phrase: 10,000 states x ~15,000 tokens, and a ``[Q, Q]`` reachability matrix on top).

Here tokens are grouped by their first symbol ``s``. After reading ``s`` every state lands in one
of a few states ``delta[:, s]`` (one per partial match that ``s`` extends, plus the few states
where nothing is extended), so the rest of each token is run only from those distinct states,
paired with the distinct class-default rows (docs/tables.md). Exceptions are the (state, token)
pairs whose result differs from the class default, expanded back to states only where they
exist. Reachability is a breadth-first search over the edge list.
"""
from __future__ import annotations

import numpy as np

__all__ = ["token_exceptions", "reach"]


def _run(delta: np.ndarray, starts: np.ndarray, syms: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """int32 ``[len(starts), T]``: the state after each token's symbols ``syms[t, :lengths[t]]``."""
    t = len(lengths)
    cur = np.repeat(starts[:, None].astype(np.int64), t, axis=1)
    if t == 0:
        return cur.astype(np.int32)
    order = np.argsort(-lengths, kind="stable")  # longest first: the tokens still running are a prefix
    lens, syms = lengths[order], syms[order]
    cur = cur[:, order]
    nsym = delta.shape[1]
    flat = delta.ravel().astype(np.int64)
    for pos in range(int(lens[0])):
        k = int(np.searchsorted(-lens, -pos, side="left"))  # tokens with length > pos
        if k == 0:
            break
        cur[:, :k] = flat[cur[:, :k] * nsym + syms[:k, pos]]
    out = np.empty_like(cur)
    out[:, order] = cur
    return out.astype(np.int32)


def token_exceptions(delta: np.ndarray, sym_of_byte: np.ndarray, padded: np.ndarray, lengths: np.ndarray,
                     cls: np.ndarray, default: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(state, candidate index, next state) for every pair whose next state differs from
    ``default[state, cls[candidate]]``; sorted by state, then candidate."""
    lengths = np.asarray(lengths, np.int64)
    syms = sym_of_byte[padded].astype(np.int64)  # [C, L]
    drows, drow_of_q = np.unique(default, axis=0, return_inverse=True)
    drow_of_q = drow_of_q.reshape(-1)
    nd = len(drows)
    out_q, out_k, out_n = [], [], []
    first = syms[:, 0] if len(lengths) else np.zeros(0, np.int64)
    for s0 in np.unique(first):
        ks = np.flatnonzero(first == s0)
        # Distinct (state after s0, default row) pairs: every state of a pair behaves the same.
        key = delta[:, s0].astype(np.int64) * nd + drow_of_q
        pairs, p_of_q = np.unique(key, return_inverse=True)
        res = _run(delta, pairs // nd, syms[ks, 1:], lengths[ks] - 1)  # [P, K]
        dflt = drows[pairs % nd][:, cls[ks]]  # [P, K]
        pi, ki = np.nonzero(res != dflt)
        if not len(pi):
            continue
        # Expand each exceptional pair to the states that map to it.
        by_pair = np.argsort(p_of_q, kind="stable")
        start = np.searchsorted(p_of_q[by_pair], np.arange(len(pairs) + 1))
        size = np.diff(start)[pi]
        q = by_pair[np.repeat(start[pi], size) + _ramp(size)]
        out_q.append(q)
        out_k.append(np.repeat(ks[ki], size))
        out_n.append(np.repeat(res[pi, ki], size))
    if not out_q:
        z = np.zeros(0, np.int64)
        return z, z, z.astype(np.int32)
    q, k, n = np.concatenate(out_q), np.concatenate(out_k), np.concatenate(out_n)
    order = np.lexsort((k, q))
    return q[order].astype(np.int64), k[order].astype(np.int64), n[order].astype(np.int32)


def _ramp(sizes: np.ndarray) -> np.ndarray:
    """[0..s0-1, 0..s1-1, ...] for the given sizes."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    starts = np.cumsum(sizes) - sizes
    return np.arange(total) - np.repeat(starts, sizes)


def reach(n: int, src: np.ndarray, dst: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """bool ``[n]``: states reachable from ``seeds`` (bool [n]) over the edges ``src -> dst``."""
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    ptr = np.searchsorted(src, np.arange(n + 1))
    seen = seeds.copy()
    frontier = np.flatnonzero(seeds)
    while len(frontier):
        lo, hi = ptr[frontier], ptr[frontier + 1]
        nxt = dst[np.repeat(lo, hi - lo) + _ramp(hi - lo)]
        nxt = np.unique(nxt[~seen[nxt]])
        seen[nxt] = True
        frontier = nxt
    return seen
