"""A group's exits (`chain_blocks`, `token_fsa.lift`): the tokens of its representative's walk
that cross an absolute arc, walked on once per *exit identity* of its members.

The members of a group read alike, shifted, until an absolute arc; after it each goes where its
own chain leaves (after the closing quote of *its* string: copies of a counted string in
different fields are one group). Members whose absolute arcs lead to the same states are one
identity (`member_exits`). A full group's identity holds its exits in one member's block, the
other members' exit block; a partial group's exits are walked into a pseudo block
``nb + identity`` and copied to every member of the identity (`with_members`), which owns them.
A partial group's walk at its step limit goes on as each member's own (`to_members`)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..array_ops import concat_ranges, csr, grouped, narrow, step_slices, unique
from .chain_blocks import FULL, exact_classes

# Entries copied at a time by `with_members` (its temporaries: a few int64 columns of a chunk).
MEMBERS_CHUNK = 1 << 22


def with_members(grp: np.ndarray, cols: list[np.ndarray], nb: int,
                 chunk: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The token ends ``cols = [block, node, state]`` (taken out of the list, emptied) with each
    entry of a pseudo block ``nb + i`` (the exits of a partial group's identity i, `member_exits`)
    replaced by one entry per member block of i (``grp``: each block's identity, -1 for none): the
    other entries first, in order, then the members' (`to_members` with no shift), in each
    column's dtype. Built into preallocated columns, each input column let go once copied and the
    members' entries written ``chunk`` at a time (the two copies and the int64 temporaries of
    `to_members` were jscsrc's lift peak)."""
    chunk = chunk or MEMBERS_CHUNK
    block = cols[0]
    pseudo = block >= nb
    g = block[pseudo] - nb
    node, state = cols[1][pseudo], cols[2][pseudo]
    keep = ~pseudo
    del block, pseudo
    k = np.flatnonzero(grp >= 0)
    members, ptr = grouped(grp[k], k, int(grp.max()) + 1 if len(k) else 0)
    del k
    n = ptr[g + 1] - ptr[g] if len(g) else np.zeros(0, np.int64)
    kept = int(np.count_nonzero(keep))
    total = kept + int(n.sum())
    out = []
    while cols:  # (the block column first; each replaced before the next is copied)
        col = cols.pop(0)
        new = np.empty(total, col.dtype)  # (pages touched as written)
        at = 0
        for a in range(0, len(col), chunk):  # (`np.compress` into ``out`` buffers a whole copy and int64 indices)
            part = col[a:a + chunk][keep[a:a + chunk]]
            new[at:at + len(part)] = part
            at += len(part)
        del col
        out.append(new)
    del keep
    o_block, o_node, o_state = out
    pos = kept
    cuts = step_slices(n, chunk)
    for i, j in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        gi, ni = g[i:j], n[i:j]
        m = int(ni.sum())
        o_block[pos:pos + m] = members[concat_ranges(ptr[gi], ptr[gi + 1])]
        o_node[pos:pos + m] = np.repeat(node[i:j], ni)
        o_state[pos:pos + m] = np.repeat(state[i:j], ni)
        pos += m
    return o_block, o_node, o_state


def member_exits(grp: np.ndarray, shift: np.ndarray, blk_state: np.ndarray, limit: np.ndarray,
                 exits: tuple[np.ndarray, np.ndarray, np.ndarray], node_byte: np.ndarray,
                 step: Callable[[np.ndarray, np.ndarray], np.ndarray], num_states: int
                 ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray, np.ndarray]:
    """(the exits' frontier (block, node, state after the absolute arc), the block holding each
    block's exits (itself where it is no full group's member), the partial identity of each block
    (-1: none)). ``exits``: (group, node, state before the absolute arc) of each group's
    representative walk; a member's state is the representative's plus its ``shift``."""
    nb, S = len(grp), num_states
    x_g, x_n, x_pre = exits
    x_byte = node_byte[x_n].astype(np.int64)
    G = len(limit)
    # each group's distinct crossings (state before, byte): where its members' identities differ
    key = unique((x_g.astype(np.int64) * S + x_pre) * 256 + x_byte)
    c_ptr = csr(key // (256 * S), G)
    c_pre, c_byte = (key // 256) % S, key % 256
    k = np.flatnonzero(grp >= 0)
    k = k[np.lexsort((blk_state[k], grp[k]))]  # (members by group, each group's lowest state first: its representative)
    gk = grp[k].astype(np.int64)
    n = c_ptr[gk + 1] - c_ptr[gk]
    pos = concat_ranges(c_ptr[gk], c_ptr[gk + 1])
    owner = np.repeat(np.arange(len(k)), n)
    target = step(c_pre[pos] + shift[k][owner], c_byte[pos]).astype(np.int64)
    del pos, owner
    ident = _identities(gk, n, target)
    first = np.full(int(ident.max()) + 1 if len(k) else 0, -1, np.int64)
    first[ident[::-1]] = np.arange(len(k))[::-1]  # (each identity's first member: lowest state)
    holder = k[first]
    exit_of = np.arange(nb, dtype=np.int32 if nb < 2**31 else np.int64)  # (per block, held through the lift)
    partial = limit[gk] < FULL
    exit_of[k[~partial]] = holder[ident[~partial]]
    # the partial identities numbered 0.. (pseudo blocks nb + i), each member's
    p_ids, p_of = np.unique(ident[partial], return_inverse=True)
    part_ident = np.full(nb, -1, exit_of.dtype)
    part_ident[k[partial]] = p_of.reshape(-1)
    pseudo = np.full(len(first), -1, np.int64)
    pseudo[p_ids] = nb + np.arange(len(p_ids))
    # each identity walks its group's exits from its first member's states
    order, x_ptr = grouped(x_g, np.arange(len(x_g), dtype=np.int64), G)
    i_grp = gk[first]
    cnt = x_ptr[i_grp + 1] - x_ptr[i_grp]
    at = order[concat_ranges(x_ptr[i_grp], x_ptr[i_grp + 1])]
    i_rep = np.repeat(np.arange(len(first)), cnt)
    block = np.where(pseudo >= 0, pseudo, holder)[i_rep]
    state = step(x_pre[at].astype(np.int64) + shift[holder[i_rep]], x_byte[at]).astype(np.int64)
    return (block, x_n[at], state), exit_of, part_ident


def _identities(gk: np.ndarray, n: np.ndarray, target: np.ndarray) -> np.ndarray:
    """`exact_classes` of the members (group ``gk``, ``n`` crossings each, the crossings'
    ``target``s member by member), numbered as it numbers them (by group, then count, then the
    targets' hash), with only the members that have crossings classed: in a group without any,
    every member is one identity (a large schema's groups are millions of members, most of them
    in such groups: the per-member sort of the whole list was sp_137's lift peak)."""
    has = np.flatnonzero(n > 0)
    sub = exact_classes(np.r_[0, np.cumsum(n[has])], np.repeat(np.arange(len(has)), n[has]),
                        [gk[has], n[has]], [target])
    sub_group = np.empty(int(sub.max()) + 1 if len(sub) else 0, np.int64)
    sub_group[sub] = gk[has]  # (ascending: the group is the classes' first key)
    empty_groups = np.unique(gk[n == 0])  # (a group's members all have its crossings: none, or all)
    ident = np.empty(len(gk), np.int64)
    ident[has] = sub + np.searchsorted(empty_groups, sub_group[sub])
    rest = np.flatnonzero(n == 0)
    g = gk[rest]
    ident[rest] = np.searchsorted(sub_group, g) + np.searchsorted(empty_groups, g)
    return ident


def to_members(grp: np.ndarray, shift: np.ndarray, g: np.ndarray, node: np.ndarray,
                state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(member block, node, state + the member's shift) for every (group, node, state) and every
    member block of the group."""
    k = np.flatnonzero(grp >= 0)
    members, ptr = grouped(grp[k], k, int(grp.max()) + 1 if len(k) else 0)
    if not len(g):
        return g, node, state
    n = ptr[g + 1] - ptr[g]
    m = members[concat_ranges(ptr[g], ptr[g + 1])]
    # (each column int32 where it fits, built one at a time: a large schema's partial groups
    # hand tens of millions of pairs to their members)
    s = np.repeat(state, n)
    s = narrow(s + shift[m])
    return narrow(m), narrow(np.repeat(node, n)), s
