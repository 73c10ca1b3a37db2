"""Blocks that read like a shared interior's block but for a few tokens (`token_fsa.lift`).

An object that allows undeclared properties takes any name but its declared ones: the
character DFA reads a declared name's prefix (``"titl``) in a state of its own, which leaves the
prefix for the string interior ``G`` on nearly every byte. The block of such a state ``x`` and a
byte (every token starting with ``l`` read after ``"tit``) is not inside a shared interior (``x``
is in no cycle), so it was walked and stored whole: thousands of tokens per byte of every
declared name, in every copy of the object (Github_ultra o21328: 13,000 such blocks, 29M of its
40M token arcs). Yet its tokens go where the same tokens go from ``G``, but for the few that
follow a declared name on.

So such a block ``b0 = (byte, x)`` is linked to the shared interior block ``b1 = (byte, T)`` of
the state ``T`` that ``x``'s row mostly leads to, with ``b1``'s copy offset, and its exit block
(absolute next states, read first) holds only the tokens whose next state differs: those the
walk from ``x`` and the walk from ``T`` read to different states (the walk pair ``(x, T)`` walked
until the two states meet; once equal they stay equal), and ``b1``'s exits that leave the
interior (copied: the exit block is per link). Exact or not done: a token that ``T``'s interior
holds but ``x`` cannot read, or a next state of ``b1``'s interior that only overridden tokens
reach (the distances would count it), and ``b0`` is walked whole as before (docs/tables.md,
"Near-interior blocks").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..array_ops import concat_ranges, step_slices, unique

# A candidate state reads at least this many bytes and agrees with its target's row on this
# share of them (below: the pair walks would part at once, and the exit block would be the block).
MIN_BYTES = 32
MIN_AGREEMENT = 0.75
# Arcs read at a time when the candidates' targets are found.
SLICE_ARCS = 1 << 20


@dataclass(frozen=True, eq=False)
class Near:
    """What `find` hands the lift: blocks linked to a partner's interior, and their own arcs."""

    block: np.ndarray  # int64: the near blocks b0
    partner: np.ndarray  # int64: the shared block b1 whose interior each reads
    ends: tuple[np.ndarray, ...]  # (block, node, state): token ends of the exit blocks (spelled)
    conts: tuple[np.ndarray, ...]  # (block, node, state): pairs walked on as usual (absolute)


def _candidates(dfa: Any, blk_byte: np.ndarray, blk_state: np.ndarray, open_: np.ndarray,
                shared_blk: np.ndarray, region: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(b0, b1): each block ``b0`` to walk whose state is in no cycle and mostly leads where
    ``T`` does, ``T`` the state its row leads to most often, and ``b1 = (byte, T)`` a block of a
    shared interior. (A state in a cycle of its own, a pattern's loop, walks on apart from ``T``
    on every token: its exit block would be the whole block.)"""
    S = dfa.num_states
    b0 = np.flatnonzero(open_)
    x = blk_state[b0]
    lo, hi = dfa.ptr[x], dfa.ptr[x + 1]
    keep = (hi - lo >= MIN_BYTES) & (np.bincount(region)[region[x]] == 1)
    b0, x, lo, hi = b0[keep], x[keep], lo[keep], hi[keep]
    if not len(b0):
        return b0, b0
    # the distinct states among the candidates (many blocks of one state: one per first byte),
    # their targets found a slice of arcs at a time (the temporaries: a few columns per slice)
    xs, inv = np.unique(x, return_inverse=True)
    n = dfa.ptr[xs + 1] - dfa.ptr[xs]
    target, good = np.empty(len(xs), np.int64), np.empty(len(xs), bool)
    cuts = step_slices(n, SLICE_ARCS)
    for i, j in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        target[i:j], good[i:j] = _targets(dfa, xs[i:j])
    T = target[inv]
    ok = good[inv]
    b0, T = b0[ok], T[ok]
    # the partner block (byte, T), where it exists and reads a shared interior
    bkey = blk_byte.astype(np.int64) * S + blk_state  # (sorted: blocks are numbered by this key)
    want = blk_byte[b0].astype(np.int64) * S + T
    j = np.minimum(np.searchsorted(bkey, want), len(bkey) - 1)
    ok = (bkey[j] == want) & shared_blk[j]
    return b0[ok], j[ok].astype(np.int64)


def _targets(dfa: Any, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(target, good) per state of ``xs``: the state its row leads to most often (ties: the
    lowest), and whether the target's row leads where its own does on `MIN_AGREEMENT` of its
    bytes, with no arc back to itself."""
    S = dfa.num_states
    lo, hi = dfa.ptr[xs], dfa.ptr[xs + 1]
    n = hi - lo
    pos = concat_ranges(lo, hi)
    own = np.repeat(np.arange(len(xs)), n)
    dst = dfa.dst[pos]
    key, cnt = np.unique(own * S + dst, return_counts=True)
    k_own = key // S
    o = np.lexsort((-cnt, k_own))
    first = np.flatnonzero(np.r_[True, k_own[o][1:] != k_own[o][:-1]])
    target = (key[o][first] % S).astype(np.int64)
    agree = dfa.step(np.repeat(target, n), dfa.byte[pos]) == dst
    agree_n = np.bincount(own, weights=agree, minlength=len(xs))
    loops = np.bincount(own, weights=dst == xs[own], minlength=len(xs)) > 0
    return target, (agree_n >= MIN_AGREEMENT * n) & (target != xs) & ~loops


def find(dfa: Any, trie: Any, step: Any, blk_byte: np.ndarray, blk_state: np.ndarray, open_: np.ndarray,
         shared: Any, ok_tokens: np.ndarray | None) -> Near | None:
    """The near blocks among ``open_`` (blocks the lift would walk whole) and their exit arcs;
    None where there are none. ``shared``: the lift's `shared_walks.Shared` (its interiors,
    copies, regions and exits); ``step``: the lift's `trie_step.Stepper` over ``dfa``."""
    b0, b1 = _candidates(dfa, blk_byte, blk_state, open_, shared.blk_inner >= 0, shared.region)
    if not len(b0):
        return None
    region = shared.region
    N = trie.num_nodes
    g_reg = region[blk_state[b1]]
    n = len(b0)
    fail = np.zeros(n, bool)
    g = np.arange(n, dtype=np.int64)
    node = trie.depth1[blk_byte[b0]].astype(np.int64)
    xs, ys = blk_state[b0].astype(np.int64), blk_state[b1].astype(np.int64)
    ends: list[tuple[np.ndarray, ...]] = []
    conts: list[tuple[np.ndarray, ...]] = []
    diverged: list[np.ndarray] = []  # g * N + node of every pair walked (the states differ there)
    over: list[tuple[np.ndarray, np.ndarray]] = []  # (g, y state) of the token ends that override
    spells = trie.tok_ptr[1:] - trie.tok_ptr[:-1]
    while len(g):  # every pair here: x and y differ, y inside b1's region
        diverged.append(g * N + node)
        has = spells[node] > 0
        ends.append((g[has], node[has], xs[has]))
        over.append((np.repeat(g[has], spells[node[has]]), np.repeat(ys[has], spells[node[has]])))
        # a byte that keeps y inside and kills x: the interior holds tokens x cannot read
        s2, c2, ny2 = step(node, ys)
        y_in = region[ny2] == g_reg[g[s2]]
        x2 = dfa.step(xs[s2[y_in]], trie.node_byte[c2[y_in]].astype(np.int64))
        fail[g[s2[y_in]][x2 < 0]] = True
        s, child, nx = step(node, xs)
        gg = g[s]
        ny = dfa.step(ys[s], trie.node_byte[child].astype(np.int64))
        inside = (ny >= 0) & (region[np.maximum(ny, 0)] == g_reg[gg])
        out = ~inside  # y left the interior (an exit of b1's) or died: x's tokens are its own
        conts.append((gg[out], child[out], nx[out].astype(np.int64)))
        div = inside & (nx != ny)  # (equal: the same walk on, b1's interior and exits hold it)
        g, node, xs, ys = gg[div], child[div], nx[div].astype(np.int64), ny[div].astype(np.int64)
    fail |= _loses_next_state(shared, b1, *_cat(over, 2), ok_tokens)
    # b1's exits below a node where the walks met: x's tokens too (b0's exit block is per link)
    div_keys = unique(np.concatenate(diverged)) if diverged else np.zeros(0, np.int64)
    c_b, c_n, c_s = shared.conts
    c_order = np.argsort(c_b, kind="stable")
    c_sorted = c_b[c_order]
    lo, hi = np.searchsorted(c_sorted, b1), np.searchsorted(c_sorted, b1, "right")
    pos = c_order[concat_ranges(lo, hi)]
    gi = np.repeat(np.arange(n, dtype=np.int64), hi - lo)
    parent = step.child_key[c_n[pos] - 1] >> 8  # (the stepper's key of node n >= 1: parent * 256 + byte)
    walked = np.isin(gi * N + parent, div_keys)  # (there the walks still differed: x's own pairs)
    gi, pos = gi[~walked], pos[~walked]
    e_g, e_n, e_s = _cat(ends, 3)
    k_g, k_n, k_s = _cat(conts, 3)
    k_g, k_n, k_s = np.concatenate([k_g, gi]), np.concatenate([k_n, c_n[pos]]), np.concatenate([k_s, c_s[pos]])
    good = ~fail
    if not good.any():
        return None
    sel_e, sel_k = good[e_g], good[k_g]
    return Near(b0[good], b1[good], (b0[e_g[sel_e]], e_n[sel_e], e_s[sel_e]),
                (b0[k_g[sel_k]], k_n[sel_k], k_s[sel_k].astype(np.int64)))


def _loses_next_state(shared: Any, b1: np.ndarray, o_g: np.ndarray, o_y: np.ndarray,
                      ok_tokens: np.ndarray | None) -> np.ndarray:
    """bool per candidate: some next state of b1's interior is reached only by tokens that b0
    overrides (the distances read an interior's distinct next states: one b0 no longer reaches
    would count). The overriding tokens are counted unfiltered: with a token filter, a
    conservative count."""
    fail = np.zeros(len(b1), bool)
    if not len(o_g):
        return fail
    # tokens per (interior, canonical next state) of the interiors the partners read, counted
    # without a sort (a string interior holds ~250k tokens: a sort was most of a small lift's cost)
    used = unique(shared.blk_inner[b1])
    i_k, i_tok, i_rel = shared.inner_arcs  # (sorted by interior)
    lo, hi = np.searchsorted(i_k, used), np.searchsorted(i_k, used, "right")
    pos = concat_ranges(lo, hi)
    local = np.repeat(np.arange(len(used)), hi - lo)
    if ok_tokens is not None:
        sel = ok_tokens[i_tok[pos]]
        pos, local = pos[sel], local[sel]
    rel = i_rel[pos]
    R = int(rel.max()) + 1 if len(rel) else 1
    total = np.bincount(local * R + rel, minlength=len(used) * R)
    canon = np.full(len(shared.region), -1, np.int64)
    for members in shared.copies:
        canon[members] = np.arange(len(members))
    r = canon[o_y]
    cell = np.searchsorted(used, shared.blk_inner[b1[o_g]]) * R + np.minimum(r, R - 1)
    valid = (r >= 0) & (r < R)
    pair, count = np.unique(o_g[valid] * (len(used) * R) + cell[valid], return_counts=True)
    lost = count >= total[pair % (len(used) * R)]
    fail[pair[lost] // (len(used) * R)] = True
    return fail


def _cat(parts: list[tuple[np.ndarray, ...]], k: int) -> tuple[np.ndarray, ...]:
    if not parts:
        return (np.zeros(0, np.int64),) * k
    return tuple(np.concatenate(x).astype(np.int64) for x in zip(*parts))
