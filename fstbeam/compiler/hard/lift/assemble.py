"""The lift's last step: token arcs -> the fields of a `TokenFSA` (distances, pruning, numbering).

Arcs come in two forms. **Absolute** arcs ``(block, token, next state)``, one per token per lift
block. **Interiors** (`shared_walks`): the tokens that end inside a strongly connected component
of the character DFA (a JSON string's interior), stored once per (component shape, canonical
state, first byte) with the next state as a *canonical index* into the component; every copy of
the shape lays its members out contiguously in canonical order, so a link to a shared interior
carries the copy's first state as an offset (docs/tables.md, "Shared interiors"). The exits of
such a block (tokens that leave the component) stay absolute, in an exit block of the link.

Distances and reachability run on the distinct (block, next state) pairs: an interior adds one
pair per distinct canonical next state, not one per token. A copy is shared only where that is
exact: every member can still finish (else its arcs are made absolute and pruned as usual), and
the start state is not a member. Members of a kept copy that are unreachable at token boundaries
are kept too (no token leads to them; they only keep the copy contiguous).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....cancel import checkpoint
from ..array_ops import (
    TRIM_ABOVE,
    concat_ranges,
    csr,
    grouped_taken,
    index_concat,
    narrow,
    order_by,
    ranges,
    sorted_triples,
    sorted_triples_csr,
    step_slices,
    trim_heap,
    unique,
)
from . import chain_blocks

UNREACHABLE = np.iinfo(np.int32).max
# Above this many absolute token arcs per character state, the searches walk distinct
# (block, next state) pairs (one sort to find them; a word list's arcs are nearly all distinct).
DEDUPE_ARCS_PER_STATE = 64
# Arcs keyed and deduplicated at a time by `_distinct`.
DISTINCT_CHUNK = 1 << 22


@dataclass(frozen=True, eq=False)
class Interiors:
    """Token arcs of shared component interiors (see the module docstring)."""

    blk_inner: np.ndarray  # int64 [NB]: the interior of each lift block, -1 for none
    blk_copy: np.ndarray  # int64 [NB]: the copy (component) holding the block's state, -1 for none
    copies: list[np.ndarray]  # per copy: its members (concrete states) in canonical order
    ptr: np.ndarray  # int64 [NI+1]: CSR over the interiors' arcs
    tok: np.ndarray  # int64: token ids, ascending within each interior
    rel: np.ndarray  # int64: canonical index of the next state
    #: (CSR pointers, canonical next states) of each interior's distinct next states, where known
    #: beforehand (from the walks memo); else found here
    distinct_rel: tuple[np.ndarray, np.ndarray] | None = None

    @staticmethod
    def none(nb: int) -> "Interiors":
        e = np.zeros(0, np.int64)
        return Interiors(np.full(nb, -1, np.int64), np.full(nb, -1, np.int64), [], np.zeros(1, np.int64), e, e)


def assemble(dfa, width, links: list[np.ndarray], arcs: list[np.ndarray], inner: Interiors | None,
             chains: list[chain_blocks.Chains] | None = None) -> dict:
    """`TokenFSA` fields of the lifted arcs: keep what is reachable from the start at token
    boundaries and can still finish; states renumbered (start = 0, each shared copy contiguous).
    ``links``: the state -> block links [state, first byte, block], and ``arcs``: the absolute
    arcs [block, token, next state], each taken out of its list (emptied, so that each filtered
    copy below replaces them in memory rather than adding to them).
    ``chains``: ``[the blocks grouped by `chain_blocks`]`` (their inside arcs once per group),
    taken out of the list too: its arcs go once their live ones are copied."""
    q_idx, b_idx, pair_block = links
    links.clear()
    e_block, e_tok, e_next = arcs
    arcs.clear()
    if len(e_block) > TRIM_ABOVE:  # (the search's freed pieces, before the searches' per-arc copies)
        trim_heap()
    S, nb = dfa.num_states, int(pair_block.max()) + 1 if len(pair_block) else 0
    e0 = np.zeros(0, np.int64)
    chain = chains.pop() if chains else None
    if chain is None:
        chain = chain_blocks.Chains(np.full(nb, -1, np.int64), np.zeros(nb, np.int64), e0, (e0, e0, e0), np.arange(nb))
    blk_group = narrow(chain.blk_group).copy()  # (-1 once a block is spelled out; int32: its per-link gathers below too)
    g_g, g_tok, g_next = chain.rel
    # a grouped block's (block, next state) pairs: inside (n = c + shift, c the representative's;
    # their number per block, ``cnt``: the block column is spelled out only where it is read) and exits
    cnt, cn, xk, xn = chain_blocks.pairs(chain, e_block, e_next, S)
    final, start = dfa.final, dfa.start
    if inner is None:
        inner = Interiors.none(nb)
    blk_inner, blk_copy = inner.blk_inner[:nb].copy(), inner.blk_copy[:nb]
    sizes = np.asarray([len(m) for m in inner.copies], np.int64)
    members = np.concatenate(inner.copies) if inner.copies else np.zeros(0, np.int64)
    copy_off = np.cumsum(sizes) - sizes
    copy_of = np.full(S, -1, np.int64)
    copy_of[members] = np.repeat(np.arange(len(sizes)), sizes)
    n_inner = len(inner.ptr) - 1
    if n_inner:
        blk_inner[np.diff(inner.ptr)[np.maximum(blk_inner, 0)] == 0] = -1  # an empty interior: nothing to share
    # distinct canonical next states of each interior (the pairs the searches below walk)
    if inner.distinct_rel is not None:
        u_ptr, u_rel = inner.distinct_rel
    else:
        owner = np.repeat(np.arange(n_inner), np.diff(inner.ptr))
        width_rel = int(inner.rel.max()) + 1 if len(inner.rel) else 1
        ukey = unique(owner * width_rel + inner.rel)
        u_ptr, u_rel = csr(ukey // width_rel, n_inner), ukey % width_rel

    def pseudo(bi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h = np.flatnonzero(bi >= 0)
        k = bi[h]
        pos = concat_ranges(u_ptr[k], u_ptr[k + 1])
        pb = np.repeat(h, u_ptr[k + 1] - u_ptr[k])
        return pb, members[copy_off[blk_copy[pb]] + u_rel[pos]]

    pb, pn = pseudo(blk_inner)
    # The searches see (block, next state) pairs; where the tokens far outnumber the states
    # (a string's ~250k tokens reach a dozen states) they walk the distinct pairs only.
    dedupe = len(e_block) > DEDUPE_ARCS_PER_STATE * S
    d_block, d_next = _distinct(e_block, e_next, S) if dedupe else (e_block, e_next)
    if len(e_block) > TRIM_ABOVE:  # (the pairs' freed temporaries, before the searches' per-pair arrays)
        trim_heap()
    # (the searches' pairs concatenated straight into a list the grouping empties: not held through the search)
    dist = _distances(final, grouped_taken([pair_block, q_idx], nb),
                      grouped_taken([index_concat([d_next, pn, xn, cn], S), chain_blocks.with_blocks([d_block, pb, xk], cnt, nb)], S))
    del pb, pn  # (made again for the reachability search below, once shared copies are settled)
    # A grouped block whose inside next states are not alive exactly where its representative's
    # are is spelled out (absolute arcs, pruned below like any other).
    alive = dist < UNREACHABLE
    bad = chain_blocks.with_readers(chain, chain_blocks.failing(chain, cnt, cn, alive))
    if len(bad):
        x_b, x_t, x_n = chain_blocks.spelled_out(chain, bad, e_block, e_tok, e_next)
        e_block = _cat(e_block, x_b)  # (a column at a time: each old one goes before the next is made)
        e_tok = _cat(e_tok, x_t)
        e_next = _cat(e_next, x_n)
        blk_group[bad] = -1
        if not dedupe:
            d_block, d_next = e_block, e_next
    # Copies shared exactly: every member can finish, the start is not a member. Others: absolute.
    ok = np.ones(len(sizes), bool)
    if len(sizes):
        ok = np.minimum.reduceat((dist[members] < UNREACHABLE).astype(np.int8), copy_off).astype(bool)
        if copy_of[start] >= 0:
            ok[copy_of[start]] = False
    undo = np.flatnonzero((blk_inner >= 0) & ~ok[np.maximum(blk_copy, 0)]) if len(sizes) else blk_inner[:0]
    if len(undo):
        k = blk_inner[undo]
        pos = concat_ranges(inner.ptr[k], inner.ptr[k + 1])
        ub = np.repeat(undo, inner.ptr[k + 1] - inner.ptr[k])
        u_tok = inner.tok[pos]
        # a near block's own arcs override its interior's (`near_blocks`): those tokens stay its own
        mine = np.isin(e_block, undo)
        drop = np.isin(ub * width + u_tok, e_block[mine].astype(np.int64) * width + e_tok[mine])
        ub, u_tok, pos = ub[~drop], u_tok[~drop], pos[~drop]
        e_block = _cat(e_block, ub)
        e_tok = _cat(e_tok, u_tok)
        e_next = _cat(e_next, members[copy_off[blk_copy[ub]] + inner.rel[pos]])
        blk_inner[undo] = -1
        d_block, d_next = _distinct(e_block, e_next, S) if dedupe else (e_block, e_next)
    alive_arc = alive[e_next]  # (a bool per arc: ``dist[e_next]`` was an int64 column, o48781's peak)
    if not alive_arc.all():  # (a word list: every arc is alive; skip copying ten million arcs)
        # (a column at a time: each old one goes before the next is copied)
        e_block = e_block[alive_arc]
        e_tok = e_tok[alive_arc]
        e_next = e_next[alive_arc]
        if dedupe:
            alive_pair = dist[d_next] < UNREACHABLE
            d_block, d_next = d_block[alive_pair], d_next[alive_pair]
        else:
            d_block, d_next = e_block, e_next
    keep = alive[cn]  # (once, and a column at a time: sp_137's 30 million inside pairs, 355 MB a copy)
    if not keep.all():
        cnt = chain_blocks.kept_count(cnt, keep)
        cn = cn[keep]
    keep = alive[xn]
    if not keep.all():
        xk = xk[keep]
        xn = xn[keep]
    del keep
    g_live = alive[g_next]
    live = (g_g[g_live], g_tok[g_live], g_next[g_live])  # (copies of their own: sorted in place)
    del g_g, g_tok, g_next, g_live  # (and the chain's own below: the group arcs are not held twice)
    chain = chain_blocks.Chains(chain.blk_group, chain.blk_shift, chain.reps, (e0, e0, e0), chain.exit_of)
    g_g, g_tok, g_next = sorted_triples(*live, in_place=True)
    del live
    g_size = np.bincount(g_g, minlength=len(chain.reps))
    chain = chain_blocks.Chains(chain.blk_group, chain.blk_shift, chain.reps, (g_g, g_tok, g_next), chain.exit_of)  # (alive arcs only)
    abs_size = np.diff(csr(e_block, nb))  # (counted a chunk at a time: no int64 copy of the column)
    grouped_blk = np.flatnonzero(blk_group >= 0)
    abs_size[grouped_blk] = abs_size[chain.exit_of[grouped_blk]]  # (its exits: its own, or those of the block holding them)
    abs_size[grouped_blk] += g_size[blk_group[grouped_blk]]  # (for the links kept just below: a size, either part)
    sb_keep = ((abs_size > 0) | (blk_inner >= 0))[pair_block]
    q_idx, b_idx, pair_block = q_idx[sb_keep], b_idx[sb_keep], pair_block[sb_keep]
    del abs_size, grouped_blk, sb_keep  # (per block and per link: not held through the searches; counted again below)
    pb, pn = pseudo(blk_inner)
    shared = ok.copy()  # copies still shared: kept whole once one member is reachable
    if len(e_block) > TRIM_ABOVE:  # (the distances' and the filters' freed copies: 330 MB resident on o21192)
        trim_heap()
    links_by_state = grouped_taken([q_idx, pair_block], S)
    arcs_by_block = grouped_taken([chain_blocks.with_blocks([d_block, pb, xk], cnt, nb), index_concat([d_next, pn, xn, cn], S)], nb)
    reach = _reachable(np.array([start]), links_by_state, arcs_by_block)
    while len(sizes):
        hit = np.maximum.reduceat(reach[members].astype(np.int8), copy_off).astype(bool)
        full = np.minimum.reduceat(reach[members].astype(np.int8), copy_off).astype(bool)
        grow = np.flatnonzero(shared & hit & ~full)
        if not len(grow):
            break
        seeds = concat_ranges(copy_off[grow], copy_off[grow] + sizes[grow])
        reach = _reachable(members[seeds], links_by_state, arcs_by_block, seen=reach)
    del d_block, d_next, pb, pn, links_by_state, arcs_by_block, alive_arc  # (per-arc copies the searches walked: done)
    if len(e_block) > TRIM_ABOVE:  # (the searches' freed pieces, resident under the arcs' plateau below)
        trim_heap()
    keep_state = reach & (dist < UNREACHABLE)
    if not keep_state[start]:
        keep_state[:] = False
        keep_state[start] = True  # an empty language: just the start, no arcs, not final
    kept_copy = np.zeros(len(sizes), bool)
    if len(sizes):
        kept_copy = shared & np.maximum.reduceat(keep_state[members].astype(np.int8), copy_off).astype(bool)
    in_kept = np.zeros(S, bool)
    in_kept[members[np.repeat(kept_copy, sizes)]] = True
    # Renumber states: start first, then the other states, then each kept copy in canonical order.
    plain = np.nonzero(keep_state & ~in_kept & (np.arange(S) != start))[0]
    order = np.concatenate([[start], plain, members[np.repeat(kept_copy, sizes)]]).astype(np.int64)
    new_id = np.full(S, -1, np.int64)
    new_id[order] = np.arange(len(order))
    base = new_id[members[copy_off]] if len(sizes) else np.zeros(1, np.int64)  # each copy's first state
    sb_keep = keep_state[q_idx]
    q_idx, b_idx, pair_block = narrow(new_id)[q_idx[sb_keep]], b_idx[sb_keep], pair_block[sb_keep]
    # Grouped blocks: one token-state offset per block for its inside arcs, else spelled out after all.
    used = np.zeros(nb, bool)
    used[pair_block] = True
    blk_off, bad = chain_blocks.offsets(cnt, cn, chain.blk_shift, new_id, used)
    del cnt, cn, xk, xn  # (the grouped blocks' pairs: tens of millions, not held through the sort)
    if len(e_block) > TRIM_ABOVE:  # (the renumbering's freed per-state and per-link copies, under the links' fields)
        trim_heap()
    bad = chain_blocks.with_readers(chain, bad[blk_group[bad] >= 0])  # (those spelled out before: not again)
    bad = bad[blk_group[bad] >= 0]
    if len(bad):
        x_b, x_t, x_n = chain_blocks.spelled_out(chain, bad, e_block, e_tok, e_next)
        e_block = _cat(e_block, x_b)  # (a column at a time: each old one goes before the next is made)
        e_tok = _cat(e_tok, x_t)
        e_next = _cat(e_next, x_n)
        blk_group[bad] = -1
    abs_size = np.diff(csr(e_block, nb))  # (counted a chunk at a time: no int64 copy of the column)
    in_grp = blk_group[pair_block] >= 0
    grp_of = np.maximum(blk_group[pair_block], 0)
    rep_of = np.where(in_grp, narrow(chain.exit_of)[pair_block], pair_block)  # the block holding a link's exits
    has_rel = in_grp & (g_size[grp_of] > 0 if len(chain.reps) else in_grp)
    # Blocks: the absolute parts first (in lift order), then the shared interiors.
    is_sh = blk_inner[pair_block] >= 0
    abs_used = np.zeros(nb, bool)
    abs_used[rep_of[abs_size[rep_of] > 0]] = True
    blk_new = np.full(nb, -1, np.int64)
    nabs = int(abs_used.sum())
    blk_new[abs_used] = np.arange(nabs)
    inner_used = np.zeros(n_inner, bool)
    inner_used[blk_inner[pair_block[is_sh]]] = True
    inner_new = np.full(n_inner + 1, -1, np.int64)  # (index -1: no interior)
    inner_new[:n_inner][inner_used] = nabs + np.arange(int(inner_used.sum()))
    g_used = np.zeros(len(chain.reps), bool)
    g_used[grp_of[has_rel]] = True
    n_first = nabs + int(inner_used.sum())
    g_new = np.full(len(chain.reps) + 1, -1, np.int64)
    g_new[:-1][g_used] = n_first + np.arange(int(g_used.sum()))
    # (the new block ids as int32 where they fit: the link columns below come int32, not int64)
    blk_new, inner_new, g_new = narrow(blk_new), narrow(inner_new), narrow(g_new)
    # (each field built in place, the links of each kind written over it: nested `np.where`s of
    # whole gathers were five int64 columns per link at once, o21328's lift peak)
    # (masks, not index arrays: an int64 index per shared link, and per-link gathers of per-block
    # values, were the lift's peak; each per-block value is gathered once per link)
    sh, rel = is_sh, has_rel & ~is_sh
    sb_id = blk_new[rep_of]
    sb_id[rel] = g_new[grp_of[rel]]
    on_sh = pair_block[sh]
    sb_id[sh] = inner_new[blk_inner][on_sh]
    sb_off = np.zeros(len(pair_block), np.int64)
    sb_off[rel] = blk_off[pair_block[rel]]
    sb_off[sh] = base[np.maximum(blk_copy, 0)][on_sh]
    del on_sh
    sb_exit = blk_new[rep_of]
    sb_exit[~((is_sh | has_rel) & (abs_size > 0)[rep_of])] = -1  # (a bool per link, not an int64 gather)
    del sh, rel
    del in_grp, grp_of, rep_of, has_rel, is_sh  # (per character arc; the lift's peak is below)
    del blk_off, blk_inner, blk_group, abs_size  # (per block: done)
    if len(e_block) > TRIM_ABOVE:  # freed arrays under glibc's mmap threshold, handed back before it
        trim_heap()
    # the links' fields now, in their final dtypes, and the int64 link columns let go: six of
    # them per character arc (90 MB on a large schema) were held through the arcs' sort below
    Sn = len(order)
    sb_order = order_by(q_idx, b_idx)
    fields = dict(
        width=width,
        final=final[order].copy(),
        dist_to_final=dist[order].astype(np.int32),
        state_block_ptr=csr(q_idx, Sn),
        state_block_byte=b_idx[sb_order].astype(np.uint8),
        state_block_id=sb_id[sb_order].astype(np.int32),
        state_block_offset=sb_off[sb_order].astype(np.int64),
        state_block_exit=sb_exit[sb_order].astype(np.int32),
        char_state=order.astype(np.int32),
    )
    if not (dist[start] < UNREACHABLE):
        fields["final"][:] = False
    del q_idx, b_idx, pair_block, sb_order, sb_id, sb_off, sb_exit, dist
    if len(e_block) > TRIM_ABOVE:  # (the links' columns just freed, under the arcs' copies below)
        trim_heap()
    e_keep = abs_used[e_block]
    if not e_keep.all():  # (a column at a time: each old one goes before the next is copied)
        e_block = e_block[e_keep]
        e_tok = e_tok[e_keep]
        e_next = e_next[e_keep]
    del e_keep
    e_block = blk_new.astype(np.int32)[e_block]  # (ids < nb, S; one column at a time)
    del blk_new, abs_used
    e_next = new_id.astype(np.int32)[e_next]
    if len(e_next) and int(e_next.min()) < 0:  # every kept arc leads to a kept state (see above)
        raise AssertionError("lift: a kept token arc leads to a dropped state")
    # sorted by (block, token), the block column read as CSR pointers, never unpacked (the arcs'
    # columns go as soon as they are read: the lift's peak is here; no name here holds them)
    cols = [e_block, e_tok, e_next]
    del e_block, e_tok, e_next
    if len(cols[0]) > TRIM_ABOVE:  # (the links' and renumbering's freed columns, resident under the sort's words)
        trim_heap()
    block_ptr, e_tok, e_next = sorted_triples_csr(cols, nabs, b_width=width)
    used_k = np.flatnonzero(inner_used)
    pos = concat_ranges(inner.ptr[used_k], inner.ptr[used_k + 1])
    block_ptr = np.concatenate([block_ptr, len(e_tok) + np.cumsum(np.diff(inner.ptr)[used_k])])
    g_keep = g_used[g_g]
    g_tok_k, g_next_k = g_tok[g_keep], new_id.astype(np.int32)[g_next[g_keep]]  # (ids < S, as `e_next`)
    if len(g_next_k) and int(g_next_k.min()) < 0:  # (checked by `chain_blocks.offsets`)
        raise AssertionError("lift: a group's inside arc leads to a dropped state")
    block_ptr = np.concatenate([block_ptr, block_ptr[-1] + np.cumsum(g_size[g_used])])

    block_tokens = np.concatenate([e_tok, inner.tok[pos], g_tok_k], dtype=np.int32, casting="same_kind")
    del e_tok
    block_next = np.concatenate([e_next, inner.rel[pos], g_next_k], dtype=np.int32, casting="same_kind")
    del e_next
    fields.update(block_ptr=block_ptr.astype(np.int64), block_tokens=block_tokens, block_next=block_next)
    return fields


def _cat(col: np.ndarray, more: np.ndarray) -> np.ndarray:
    """``col`` with ``more`` appended, int32 where it fits (a lift's arc columns stay int32)."""
    return np.concatenate([col, narrow(more)])


def _distinct(block: np.ndarray, nxt: np.ndarray, S: int, chunk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (block, next state) pairs, sorted: the distinct keys ``block * S + next`` of
    each ``chunk`` of arcs, then of those (the pairs are deduplicated where the arcs far
    outnumber them: no key column as long as the arcs, nor its sort, at once)."""
    chunk = chunk or DISTINCT_CHUNK
    n_keys = (int(block.max()) + 1) * S if len(block) else 0
    dtype = np.int32 if n_keys < 2**31 else np.int64  # (a narrower sort where it fits)
    parts = []
    for a in range(0, len(block), chunk):
        key = block[a:a + chunk].astype(dtype)
        key *= dtype(S)
        key += nxt[a:a + chunk]  # (cast as it is added: the sum fits ``dtype``)
        parts.append(unique(key))
        del key
    key = parts[0] if len(parts) == 1 else unique(np.concatenate(parts)) if parts else np.zeros(0, dtype)
    del parts
    return key // S, key % S  # (int32 where the keys are: a large schema's pairs are millions)


def _distances(final, links_by_block, arcs_by_next) -> np.ndarray:
    """Fewest tokens from each state to a final state (UNREACHABLE if none): a breadth-first
    search backwards from the final states, each arc and state-block link visited once.
    ``links_by_block``: `grouped_taken` states by block; ``arcs_by_next``: blocks by next state."""
    S = len(final)
    dist = np.full(S, UNREACHABLE, np.int64)
    seen = np.asarray(final, bool).copy()
    dist[seen] = 0
    states_by_block, block_ptr = links_by_block
    blocks_by_next, next_ptr = arcs_by_next
    nb = len(block_ptr) - 1
    block_seen = np.zeros(nb, bool)
    b_stamp, s_stamp = np.zeros(nb, np.int64), np.zeros(S, np.int64)
    frontier, d = np.flatnonzero(seen), 0
    while len(frontier):
        checkpoint()
        d += 1
        blocks = _first_seen_of(blocks_by_next, next_ptr, frontier, block_seen, b_stamp)
        frontier = _first_seen_of(states_by_block, block_ptr, blocks, seen, s_stamp)
        dist[frontier] = d
    return dist


def _reachable(seeds, links_by_state, arcs_by_block, seen: np.ndarray | None = None) -> np.ndarray:
    """States reachable from ``seeds`` (added to ``seen``, whose states count as walked);
    ``links_by_state``: `grouped_taken` blocks by state; ``arcs_by_block``: next states by block."""
    blocks_by_state, sb_ptr = links_by_state
    next_by_block, e_ptr = arcs_by_block
    S, nb = len(sb_ptr) - 1, len(e_ptr) - 1
    seen = np.zeros(S, bool) if seen is None else seen.copy()
    seen[seeds] = True
    frontier = np.asarray(seeds, np.int64)
    block_seen = np.zeros(nb, bool)
    b_stamp, s_stamp = np.zeros(nb, np.int64), np.zeros(S, np.int64)
    while len(frontier):
        checkpoint()
        blocks = _first_seen_of(blocks_by_state, sb_ptr, frontier, block_seen, b_stamp)
        frontier = _first_seen_of(next_by_block, e_ptr, blocks, seen, s_stamp)
    return seen


#: a search step's candidates (CSR entries of its frontier) taken this many at a time: a wide
#: level's were tens of millions at once, two int64 columns each (o21192's peak)
SEARCH_SLICE = 1 << 21
#: and the frontier's ids this many at a time (their per-id columns, four int64 each, were 200 MB
#: on sp_137's widest level of 6 million blocks)
SEARCH_IDS = 1 << 20


def _first_seen_of(values: np.ndarray, ptr: np.ndarray, ids: np.ndarray, seen: np.ndarray,
                   stamp: np.ndarray) -> np.ndarray:
    """`_first_seen` of the CSR rows ``ids`` of ``values``, a slice of rows at a time."""
    if len(values) <= SEARCH_SLICE or not len(ids):  # (the common case: every step fits in one slice)
        return _first_seen(values[ranges(ptr, ids)], seen, stamp)
    found = []
    for i in range(0, len(ids), SEARCH_IDS):
        part = ids[i:i + SEARCH_IDS]
        cuts = step_slices(ptr[part + 1] - ptr[part], SEARCH_SLICE).tolist()
        found += [_first_seen(values[ranges(ptr, part[a:b])], seen, stamp) for a, b in zip(cuts[:-1], cuts[1:])]
    return np.concatenate(found) if len(found) != 1 else found[0]


def _first_seen(ids: np.ndarray, seen: np.ndarray, stamp: np.ndarray) -> np.ndarray:
    """The ids not yet ``seen``, each once (marked seen); O(len(ids)), no sort."""
    ids = ids[~seen[ids]]
    pos = np.arange(len(ids))
    stamp[ids] = pos  # the last write wins: keep one occurrence of each id
    ids = ids[stamp[ids] == pos]
    seen[ids] = True
    return ids
