"""Table fixtures built by hand from small explicit token DFAs (no compiler involved).

``hard_from_dfa`` lays a ``{state: {token: next}}`` DFA out as the "Hard automaton" arrays of
docs/tables.md (one block per (state, first byte); blocks of at least ``dense_min`` tokens go to
the dense rows, the rest to the sparse lists). ``light_from_spec`` builds the "Light automata"
arrays from class defaults and exceptions. The runtime must read both exactly as the contract says.
"""
from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import numpy as np

IS_WORD = np.zeros(256, bool)
for lo, hi in ((48, 57), (65, 90), (97, 122)):
    IS_WORD[lo : hi + 1] = True
IS_WORD[0x80:] = True


def token_class(token_bytes) -> np.ndarray:
    out = np.full(len(token_bytes), 4, np.int8)
    for i, b in enumerate(token_bytes):
        if b:
            out[i] = 2 * (not IS_WORD[b[0]]) + (not IS_WORD[b[-1]])
    return out


def pack(ids, V) -> np.ndarray:
    w = np.zeros((V + 31) // 32, np.uint32)
    for t in ids:
        w[t >> 5] |= np.uint32(1 << (t & 31))
    return w.view(np.int32)


def _dist(n, edges, final):
    rev = [[] for _ in range(n)]
    for s, d in edges:
        rev[d].append(s)
    dist = np.full(n, 1 << 20, np.int32)
    q = deque(i for i in range(n) if final[i])
    for i in q:
        dist[i] = 0
    while q:
        x = q.popleft()
        for p in rev[x]:
            if dist[p] == 1 << 20:
                dist[p] = dist[x] + 1
                q.append(p)
    return dist


def hard_from_dfa(delta: dict[int, dict[int, int]], final: set[int], token_bytes, eos_ids=(0,), *, start=0, dense_min=2):
    V = len(token_bytes)
    S = 1 + max([*delta.keys(), *(n for row in delta.values() for n in row.values()), *final, start])
    first = np.array([b[0] if b else -1 for b in token_bytes], np.int16)
    sb_key, sb_id, blk_key, blk_next, blk_ptr, blk_dense = [], [], [], [], [0], []
    for q in range(S):
        by_byte: dict[int, list[int]] = {}
        for t in sorted(delta.get(q, {})):
            by_byte.setdefault(int(first[t]), []).append(t)
        for b in sorted(by_byte):
            bid = len(blk_dense)
            sb_key.append(q * 256 + b)
            sb_id.append(bid)
            toks = by_byte[b]
            for t in toks:
                blk_key.append(bid * V + t)
                blk_next.append(delta[q][t])
            blk_ptr.append(len(blk_key))
            blk_dense.append(len(toks) >= dense_min)
    state_block_ptr = np.zeros(S + 1, np.int64)
    for k in sb_key:
        state_block_ptr[k // 256 + 1] += 1
    state_block_ptr = np.cumsum(state_block_ptr)
    combos = {(): 0}
    dense_rows = [np.zeros((V + 31) // 32, np.int32)]
    state_row = np.zeros(S, np.int32)
    sp_ptr, sp_tok = [0], []
    for q in range(S):
        lo, hi = state_block_ptr[q], state_block_ptr[q + 1]
        dense_b = tuple(b for b in sb_id[lo:hi] if blk_dense[b])
        if dense_b not in combos:
            combos[dense_b] = len(dense_rows)
            toks = [k % V for b in dense_b for k in blk_key[blk_ptr[b] : blk_ptr[b + 1]]]
            dense_rows.append(pack(toks, V))
        state_row[q] = combos[dense_b]
        sparse = sorted(k % V for b in sb_id[lo:hi] if not blk_dense[b] for k in blk_key[blk_ptr[b] : blk_ptr[b + 1]])
        sp_tok += sparse
        sp_ptr.append(len(sp_tok))
    fin = np.array([q in final for q in range(S)])
    edges = [(q, n) for q, row in delta.items() for n in row.values()]
    return SimpleNamespace(
        start=start, width=V, final=fin, dist_to_final=_dist(S, edges, fin),
        state_block_key=np.array(sb_key, np.int64), state_block_id=np.array(sb_id, np.int32),
        state_block_offset=np.zeros(len(sb_id), np.int64), state_block_exit=np.full(len(sb_id), -1, np.int32),
        state_block_ptr=state_block_ptr, block_key=np.array(blk_key, np.int64),
        block_next=np.array(blk_next, np.int32), block_ptr=np.array(blk_ptr, np.int64),
        dense_masks=np.stack(dense_rows), state_dense_row=state_row,
        state_sparse_ptr=np.array(sp_ptr, np.int64), state_sparse_tokens=np.array(sp_tok, np.int32),
        token_first_byte=first, eos_ids=np.array(eos_ids, np.int32),
    )


def light_from_spec(kind: str, text: str, token_bytes, *, default_next, exceptions: dict[tuple[int, int], int],
                    final, progress, start=0):
    """A light automaton from class defaults ``[n, 4]`` and ``{(state, token): next}`` exceptions."""
    V = len(token_bytes)
    dn = np.asarray(default_next, np.int32)
    n = dn.shape[0]
    keys = sorted(exceptions)
    exc_key = np.array([s * V + t for s, t in keys], np.int64)
    exc_next = np.array([exceptions[k] for k in keys], np.int32)
    cls = token_class(token_bytes)
    progress = np.asarray(progress, np.int32)
    adv = [[] for _ in range(n)]
    for s in range(n):
        for t in range(V):
            if cls[t] == 4:
                continue
            nx = exceptions.get((s, t), dn[s, cls[t]])
            if nx >= 0 and progress[nx] > progress[s]:
                adv[s].append(t)
    adv_ptr = np.cumsum([0] + [len(a) for a in adv]).astype(np.int64)
    adv_tokens = np.array([t for a in adv for t in a], np.int32)
    a = SimpleNamespace(
        kind=kind, text=text, literal=text.encode("utf-8"), width=V, start=start, final=np.asarray(final, bool), progress=progress,
        default_next=dn, exc_key=exc_key, exc_next=exc_next, adv_ptr=adv_ptr, adv_tokens=adv_tokens,
        token_class=cls, length=int(progress.max()), fallback=np.full(n, -1, np.int32),  # no fallback states
    )
    # The contract's distance field: exact fewest tokens to a final state, by BFS over every token.
    edges = [(s, nx) for s in range(n) for t in range(V) if cls[t] != 4 and (nx := light_next_py(a, s, t)) >= 0]
    a.dist = np.where(_dist(n, edges, a.final) == 1 << 20, 1 << 30, _dist(n, edges, a.final)).astype(np.int64)
    return a


def light_next_py(a, s: int, t: int) -> int:
    key = s * a.width + t
    i = int(np.searchsorted(a.exc_key, key))
    if i < len(a.exc_key) and a.exc_key[i] == key:
        return int(a.exc_next[i])
    c = int(a.token_class[t])
    return -1 if c == 4 else int(a.default_next[s, c])
