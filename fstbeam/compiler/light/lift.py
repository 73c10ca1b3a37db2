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

from .arrays import csr_entries, distinct_rows, ramp

__all__ = ["token_exceptions", "trie_exceptions", "reach"]


def token_exceptions(delta: np.ndarray, sym_of_byte: np.ndarray, padded: np.ndarray, lengths: np.ndarray,
                     cls: np.ndarray, default: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(state, candidate index, next state) for every pair whose next state differs from
    ``default[state, cls[candidate]]``; sorted by state, then candidate.

    Small automata run every candidate from every state (`_exceptions_dense`). Larger ones walk
    the candidates' trie one symbol at a time, keeping only the distinct (trie node, state,
    default row) pairs at each depth: all states that reach the same pair behave the same on
    every token below that node. A long phrase has ~one such pair per occurrence of the node's
    text in the phrase, so the walk is near-linear in the phrase (the candidates run from every
    state after their first symbol were ~phrase x candidates: 17 s and 1 GB for a 10,000-byte
    avoid phrase of varied words). Exceptions are then traced back to the states they start
    from, which costs what they number."""
    lengths = np.asarray(lengths, np.int64)
    z = np.zeros(0, np.int64)
    if not len(lengths):
        return z, z, z.astype(np.int32)
    nq = delta.shape[0]
    if nq * len(lengths) <= DENSE_ENTRIES:
        return _exceptions_dense(delta, sym_of_byte, padded, lengths, cls, default)
    return trie_exceptions(delta, sym_of_byte, padded, lengths, cls, default)


def _trie(syms: list[list[int]]):
    """The candidates' symbol sequences as a trie: per depth, the child edges of the nodes at the
    depth before (parent node, child node, symbol) and the tokens ending at each node."""
    children: list[dict[int, int]] = [{}]
    depth_of = [0]
    ends: list[list[int]] = [[]]
    for k, seq in enumerate(syms):
        u = 0
        for x in seq:
            v = children[u].get(x)
            if v is None:
                v = children[u][x] = len(children)
                children.append({})
                depth_of.append(depth_of[u] + 1)
                ends.append([])
            u = v
        ends[u].append(k)
    return children, depth_of, ends


def token_trie_csr(sym_of_byte, padded, lengths):
    """The trie of the tokens' symbol strings: ``(depth_of, ptr, child_node, child_sym, tptr,
    tok_at)``: child edges in CSR form by parent node, and the tokens ending at each node."""
    syms = sym_of_byte[padded].astype(np.int64)
    children, depth_of, ends = _trie([row[:n] for row, n in zip(syms.tolist(), lengths.tolist())])
    n_nodes = len(children)
    ptr = np.zeros(n_nodes + 1, np.int64)
    np.cumsum([len(c) for c in children], out=ptr[1:])
    child_node = np.fromiter((v for c in children for v in c.values()), np.int64, int(ptr[-1]))
    child_sym = np.fromiter((x for c in children for x in c), np.int64, int(ptr[-1]))
    tptr = np.zeros(n_nodes + 1, np.int64)
    np.cumsum([len(e) for e in ends], out=tptr[1:])
    tok_at = np.fromiter((k for e in ends for k in e), np.int64, int(tptr[-1]))
    return depth_of, ptr, child_node, child_sym, tptr, tok_at


def trie_exceptions(delta: np.ndarray, sym_of_byte: np.ndarray, padded: np.ndarray, lengths: np.ndarray,
                    cls: np.ndarray, default: np.ndarray,
                    fallback: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(state, candidate index, next state) wherever a candidate's next state differs from its
    reference: the fallback's next state (``fallback[state] >= 0``, `fallback.py`) or the class
    default ``default[state, cls[candidate]]``; sorted by state, then candidate.

    The candidates' trie is walked one symbol at a time over distinct (trie node, state,
    reference) triples, where the reference is a default row or the fallback's current state; a
    triple whose state equals its fallback's is dropped (they agree on every longer token)."""
    lengths = np.asarray(lengths, np.int64)
    z = np.zeros(0, np.int64)
    nq, nsym = delta.shape
    if not len(lengths):
        return z, z, z.astype(np.int32)
    _, ptr, child_node, child_sym, tptr, tok_at = token_trie_csr(sym_of_byte, padded, lengths)
    drows, drow_of_q = distinct_rows(default)
    nd = len(drows)
    nr = nd + nq  # reference r < nd: default row r; r >= nd: the fallback is in char state r - nd
    flat = delta.astype(np.int64).ravel()
    fb = np.full(nq, -1, np.int64) if fallback is None else np.asarray(fallback, np.int64)
    p_node, p_state = np.zeros(nq, np.int64), np.arange(nq, dtype=np.int64)
    p_ref = np.where(fb >= 0, nd + fb, drow_of_q)
    parents: list = []
    exc: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
    level = 0
    while len(p_node):
        e_parent, e = csr_entries(ptr, p_node)  # every child edge of these nodes
        sym = child_sym[e]
        nxt = flat[p_state[e_parent] * nsym + sym]
        ref = p_ref[e_parent]
        on_fb = ref >= nd
        ref = np.where(on_fb, nd + flat[np.where(on_fb, ref - nd, 0) * nsym + sym], ref)
        keep = ~on_fb | (nxt != ref - nd)  # beside its fallback again: no longer token differs
        e_parent, nxt, ref, e = e_parent[keep], nxt[keep], ref[keep], e[keep]
        key = (child_node[e] * nq + nxt) * nr + ref
        uniq, e_child = np.unique(key, return_inverse=True)
        level += 1
        parents.append((e_child.reshape(-1), e_parent, len(uniq)))
        p_node, p_state, p_ref = uniq // (nq * nr), (uniq // nr) % nq, uniq % nr
        t_pair, t_slot = csr_entries(tptr, p_node)
        if len(t_pair):
            t_tok = tok_at[t_slot]
            r = p_ref[t_pair]
            want = np.where(r >= nd, r - nd, drows[np.minimum(r, nd - 1), cls[t_tok]])
            differs = p_state[t_pair] != want
            if differs.any():
                t_pair, t_tok = t_pair[differs], t_tok[differs]
                exc.append((level, t_pair, t_tok, p_state[t_pair]))
    if not exc:
        return z, z, z.astype(np.int32)
    ids_tok = np.concatenate([t for _, _, t, _ in exc])
    ids_next = np.concatenate([n for _, _, _, n in exc])
    first = np.cumsum([0] + [len(t) for _, _, t, _ in exc])
    cur_id, cur_pair = np.zeros(0, np.int64), np.zeros(0, np.int64)
    by_level = {lv: (np.arange(first[i], first[i + 1]), pr) for i, (lv, pr, _, _) in enumerate(exc)}
    for lv in range(level, 0, -1):  # trace every exception back to its start states
        if lv in by_level:
            ids, pr = by_level[lv]
            cur_id, cur_pair = np.concatenate([cur_id, ids]), np.concatenate([cur_pair, pr])
        e_child, e_parent, n_pairs = parents[lv - 1]
        order = np.argsort(e_child, kind="stable")
        cptr = np.searchsorted(e_child[order], np.arange(n_pairs + 1))
        cnt = cptr[cur_pair + 1] - cptr[cur_pair]
        cur_id = np.repeat(cur_id, cnt)
        cur_pair = e_parent[order[np.repeat(cptr[cur_pair], cnt) + ramp(cnt)]]
    q, k, n = cur_pair, ids_tok[cur_id], ids_next[cur_id]
    order = np.lexsort((k, q))
    return q[order].astype(np.int64), k[order].astype(np.int64), n[order].astype(np.int32)


# Up to this many (state, candidate) pairs, every candidate runs from every state in one [Q, C]
# matrix: a per-request phrase (~20 states, ~50 candidates) then costs two numpy calls per byte
# position and nothing else, where grouping by first symbol costs ~50 fixed calls.
DENSE_ENTRIES = 1 << 16


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


def reach(n: int, src: np.ndarray, dst: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """bool ``[n]``: states reachable from ``seeds`` (bool [n]) over the edges ``src -> dst``."""
    if len(src) <= _LIST_REACH_EDGES:  # a per-request phrase: Python lists, ~5x faster than numpy here
        succ: list[list[int]] = [[] for _ in range(n)]
        for s, d in zip(src.tolist(), dst.tolist()):
            succ[s].append(d)
        seen = seeds.tolist()
        todo = [q for q in range(n) if seen[q]]
        for q in todo:  # the list grows while it is walked: a breadth-first search
            for t in succ[q]:
                if not seen[t]:
                    seen[t] = True
                    todo.append(t)
        return np.array(seen, dtype=bool)
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
# Up to this many edges the search walks Python lists: a phrase's ~100 edges cost ~10 us there,
# where the dense matrix costs a few numpy calls per level (~50 us).
_LIST_REACH_EDGES = 2048


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
        k = cand[order[np.repeat(lo, n) + ramp(n)]]
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
