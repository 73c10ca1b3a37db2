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


def token_exceptions(delta: np.ndarray, sym_of_byte: np.ndarray, padded: np.ndarray, lengths: np.ndarray,
                     cls: np.ndarray, default: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(state, candidate index, next state) for every pair whose next state differs from
    ``default[state, cls[candidate]]``; sorted by state, then candidate.

    Every first symbol is handled in the same numpy calls (one flat list of (pair, candidate)
    entries), not in a Python loop per symbol: a per-request phrase has ~20 first symbols, and the
    fixed cost of a dozen small numpy calls each was a third of its compile time."""
    lengths = np.asarray(lengths, np.int64)
    z = np.zeros(0, np.int64)
    if not len(lengths):
        return z, z, z.astype(np.int32)
    nq = delta.shape[0]
    if nq * len(lengths) <= _DENSE_ENTRIES:
        return _exceptions_dense(delta, sym_of_byte, padded, lengths, cls, default)
    syms = sym_of_byte[padded].astype(np.int64)  # [C, L]
    drows, drow_of_q = _distinct_rows(default)
    nd = len(drows)
    # Candidates grouped by first symbol (group g: candidates by_first[gptr[g]:gptr[g+1]]).
    first_syms, group_of_cand = np.unique(syms[:, 0], return_inverse=True)
    by_first = np.argsort(group_of_cand, kind="stable")
    gptr = np.zeros(len(first_syms) + 1, np.int64)
    np.cumsum(np.bincount(group_of_cand, minlength=len(first_syms)), out=gptr[1:])
    # Distinct (group, state after its symbol, default row) pairs: every state of a pair behaves
    # the same on every candidate of the group.
    ng = len(first_syms)
    key = (np.arange(ng)[None, :] * nq + delta[:, first_syms].astype(np.int64)) * nd + drow_of_q[:, None]  # [Q, G]
    pairs, pair_of_qg = np.unique(key.ravel(), return_inverse=True)
    p_group, p_state, p_drow = pairs // (nq * nd), (pairs // nd) % nq, pairs % nd
    # Entries: every candidate of each pair's group, longest tokens first (the still running
    # entries are a prefix at every position).
    size = gptr[p_group + 1] - gptr[p_group]
    e_pair = np.repeat(np.arange(len(pairs)), size)
    e_cand = by_first[_ramp(size) + np.repeat(gptr[p_group], size)]
    rest = lengths[e_cand] - 1
    order = np.argsort(-rest, kind="stable")
    e_pair, e_cand, rest = e_pair[order], e_cand[order], rest[order]
    # Run the rest of every entry's token; states are kept premultiplied by the symbol count so
    # each byte position is one add and one take.
    nsym = delta.shape[1]
    n_pos = int(rest[0]) if len(rest) else 0
    sym_t = np.ascontiguousarray(syms[e_cand, 1:n_pos + 1].T)  # [positions, entries]
    ends = np.searchsorted(-rest, -np.arange(1, n_pos + 1), side="right").tolist()  # entries with rest >= pos
    flat = delta.ravel().astype(np.int64) * nsym
    cur = p_state[e_pair] * nsym
    for pos, k in enumerate(ends):
        np.take(flat, cur[:k] + sym_t[pos, :k], out=cur[:k])
    cur //= nsym
    differs = np.flatnonzero(cur != drows[p_drow[e_pair], cls[e_cand]])
    if not len(differs):
        return z, z, z.astype(np.int32)
    e_pair, e_cand, e_next = e_pair[differs], e_cand[differs], cur[differs]
    # Expand each exceptional entry to the states of its pair.
    by_pair = np.argsort(pair_of_qg, kind="stable")  # positions q * G + g, grouped by pair
    pstart = np.zeros(len(pairs) + 1, np.int64)
    np.cumsum(np.bincount(pair_of_qg, minlength=len(pairs)), out=pstart[1:])
    n_states = pstart[e_pair + 1] - pstart[e_pair]
    q = by_pair[np.repeat(pstart[e_pair], n_states) + _ramp(n_states)] // ng
    k, n = np.repeat(e_cand, n_states), np.repeat(e_next, n_states)
    order = np.lexsort((k, q))
    return q[order].astype(np.int64), k[order].astype(np.int64), n[order].astype(np.int32)


# Up to this many (state, candidate) pairs, every candidate runs from every state in one [Q, C]
# matrix: a per-request phrase (~20 states, ~50 candidates) then costs two numpy calls per byte
# position and nothing else, where grouping by first symbol costs ~50 fixed calls.
_DENSE_ENTRIES = 1 << 16


def _exceptions_dense(delta, sym_of_byte, padded, lengths, cls, default):
    """`token_exceptions` on the full [Q, C] matrix (small automata)."""
    nq, nsym = delta.shape
    width = int(lengths.max())
    # Symbols by position, [L, C]; past a token's end an extra symbol that leaves the state as is.
    syms = np.where(np.arange(width)[:, None] < lengths[None, :], sym_of_byte[padded[:, :width].T], nsym)
    step = np.concatenate([delta, np.arange(nq)[:, None]], axis=1).astype(np.int64) * (nsym + 1)
    flat = step.ravel()
    cur = np.repeat(np.arange(nq, dtype=np.int64)[:, None] * (nsym + 1), len(lengths), axis=1)
    for pos in range(width):
        np.take(flat, cur + syms[pos], out=cur)
    cur //= nsym + 1
    q, k = np.nonzero(cur != default[:, cls])  # row-major: sorted by state, then candidate
    return q.astype(np.int64), k.astype(np.int64), cur[q, k].astype(np.int32)


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows, row index of each row) of a small non-negative int matrix; each row read as
    one number (``np.unique(axis=0)`` costs ~10x more on the few rows of a phrase)."""
    base = int(rows.max()) + 1 if rows.size else 1
    if rows.shape[1] * base.bit_length() > 62:
        drows, inv = np.unique(rows, axis=0, return_inverse=True)
        return drows, inv.reshape(-1)
    code = rows.astype(np.int64) @ (base ** np.arange(rows.shape[1] - 1, -1, -1, dtype=np.int64))
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return rows[first], inv.reshape(-1)


def _ramp(sizes: np.ndarray) -> np.ndarray:
    """[0..s0-1, 0..s1-1, ...] for the given sizes."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    starts = np.cumsum(sizes) - sizes
    return np.arange(total) - np.repeat(starts, sizes)


def reach(n: int, src: np.ndarray, dst: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """bool ``[n]``: states reachable from ``seeds`` (bool [n]) over the edges ``src -> dst``."""
    if n <= _DENSE_REACH_STATES:  # a per-request phrase: a dense [n, n] matrix, few numpy calls
        succ = np.zeros((n, n), bool)
        succ[src, dst] = True
        seen = seeds.copy()
        frontier = seeds.copy()
        while frontier.any():
            frontier = succ[frontier].any(axis=0) & ~seen
            seen |= frontier
        return seen
    # Plain Python over adjacency lists: a long phrase or prefix is a chain of ~n levels, where a
    # numpy frontier step per level cost ~40 us each (0.4 s for a 10,000-byte prefix).
    order = np.argsort(src, kind="stable")
    ptr = np.searchsorted(src[order], np.arange(n + 1)).tolist()
    dst = dst[order].tolist()
    seen = seeds.tolist()
    todo = np.flatnonzero(seeds).tolist()
    for q in todo:  # the list grows while it is walked: a queue
        for t in dst[ptr[q]:ptr[q + 1]]:
            if not seen[t]:
                seen[t] = True
                todo.append(t)
    return np.array(seen, dtype=bool)


_DENSE_REACH_STATES = 512


def prefix_exceptions(lit: bytes, padded: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`token_exceptions` of the prefix automaton (`phrase_dfa.prefix_char_dfa`: state i = i bytes
    read, m = free, m + 1 = left the prefix), found by matching the candidates against ``lit``.

    From state i < m every class default leaves the prefix, and from m every token stays, so the
    exceptions are exactly the pairs (i, token) where the token spells ``lit[i:i+len]`` (next
    state i + len) or starts with all of ``lit[i:]`` (next state m, token healing). Finding them
    costs O(len(lit) x longest token); running every candidate from every state was quadratic.
    """
    m = len(lit)
    lengths = np.asarray(lengths, np.int64)
    arr = np.frombuffer(lit, np.uint8)
    qs, ks, ns = [], [], []
    for ln in np.unique(lengths[(lengths > 0) & (lengths <= m)]).tolist():  # whole token inside the prefix
        cand = np.flatnonzero(lengths == ln)
        win = np.lib.stride_tricks.sliding_window_view(arr, ln)  # [m - ln + 1, ln]
        wkey, ckey = _keys(win), _keys(padded[cand, :ln])
        order = np.argsort(ckey, kind="stable")
        lo = np.searchsorted(ckey[order], wkey, side="left")
        hi = np.searchsorted(ckey[order], wkey, side="right")
        n = hi - lo
        q = np.repeat(np.arange(len(wkey)), n)
        k = cand[order[np.repeat(lo, n) + _ramp(n)]]
        same = (padded[k, :ln] == win[q]).all(axis=1)  # hash keys: check the bytes
        qs.append(q[same])
        ks.append(k[same])
        ns.append(q[same] + ln)
    for i in range(max(0, m - padded.shape[1]), m):  # tokens that run past the end of the prefix
        rest = arr[i:]
        k = np.flatnonzero((lengths > m - i) & (padded[:, :m - i] == rest).all(axis=1))
        qs.append(np.full(len(k), i, np.int64))
        ks.append(k)
        ns.append(np.full(len(k), m, np.int64))
    q, k, n = (np.concatenate(x).astype(np.int64) if x else np.zeros(0, np.int64) for x in (qs, ks, ns))
    order = np.lexsort((k, q))
    return q[order], k[order], n[order].astype(np.int32)


def _keys(rows: np.ndarray) -> np.ndarray:
    """uint64 key of each row of bytes: exact up to 8 bytes, a polynomial hash beyond."""
    rows = rows.astype(np.uint64)
    w = rows.shape[1]
    if w <= 8:
        return rows @ (np.uint64(256) ** np.arange(w - 1, -1, -1, dtype=np.uint64))
    mult = np.uint64(1099511628211) ** np.arange(w, dtype=np.uint64)  # wraps mod 2**64
    return (rows + np.uint64(1)) @ mult
