"""A partial group's exits copied to every member block (`chain_blocks`, `token_fsa.lift`):
the search walks them once, into a pseudo block ``nb + group``; each member owns them."""
from __future__ import annotations

import numpy as np

from .array_ops import concat_ranges, grouped, step_slices

# Entries copied at a time by `with_members` (its temporaries: a few int64 columns of a chunk).
MEMBERS_CHUNK = 1 << 22


def with_members(grp: np.ndarray, cols: list[np.ndarray], nb: int,
                 chunk: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The token ends ``cols = [block, node, state]`` (taken out of the list, emptied) with each
    entry of a pseudo block ``nb + g`` (a partial group's exits, `token_fsa.lift`) replaced by one
    entry per member block of group ``g``: the other entries first, in order, then the members'
    (`chain_blocks.to_members` with no shift), in each column's dtype. Built into preallocated columns, each
    input column let go once copied and the members' entries written ``chunk`` at a time (the
    two copies and the int64 temporaries of `to_members` were jscsrc's lift peak)."""
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
