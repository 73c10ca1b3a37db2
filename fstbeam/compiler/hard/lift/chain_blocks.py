"""Shift-equivalent blocks: one walk for the positions of a chain (the lift, `token_fsa.lift`).

A string with ``maxLength`` N, or a pattern's bounded repetition ``[a-z]{1,64}``, is a chain of
positions: from position p a token of n characters leads to position p + n. Every position has
its own block ``(b, r)`` of nearly every token, and blocks are only shared by states that reach
the same ``r`` (`token_fsa`), so a long chain costs (positions x vocabulary) token arcs.

Numbered in depth-first postorder (`depth_first`), a chain is *affine*: position p + 1 is laid
out like position p, its states shifted by a constant. An arc into a state entered from many
states that read alike (`absolute_arcs`: the chain's exit, reached from every position) is
*absolute*. Two states ``r0 < r`` are **shift-equivalent** when every byte string of at most K
bytes (K: the longest token) is read from both alike, shifted by ``d = r - r0``, until the first
absolute arc; where that arc leads is each state's own (*exit-blind*: the copies of a counted
string in different fields are alike but for what follows their closing quote). K rounds of
partition refinement find them (`shift_classes`; a state's signature: per byte, its shift and
the target's class, or "absolute").

Blocks with the same first byte and class form a *group*. Its representative (the lowest
state) is walked once until absolute arcs: the tokens that end inside are one block, with the
representative's next states, that every member's link reads with an offset (the tables'
``state_block_offset``, docs/tables.md). The tokens that cross an absolute arc are walked on
once per *exit identity* (the members whose absolute arcs lead to the same states,
`group_exits.member_exits`), into the block of the identity's first member: every member's
exit block (``state_block_exit``, `Chains.exit_of`).

The offset must hold in the *token* automaton's numbering, after pruning: `assemble` checks per
block that its inside next states are alive exactly where the representative's are, and keep
one offset; it spells out (absolute arcs) the blocks where not. Sharing is exact or not done.

Positions near a chain's end (fewer than K bytes left) are not shift-equivalent for K bytes, but
for j < K bytes: they form **partial groups** at a step limit j (`chain_levels`, `level_classes`).
The representative is walked j steps: the tokens of up to j bytes that end inside are the shared
block; the tokens that leave within j bytes are walked on once per exit identity (a pseudo
block) and copied into its members' blocks; the walk at the limit is handed to every member,
shifted, and walked on as that member's own (its tokens longer than j bytes). A member's exit
block is its own block. With several copies of a chain (`copies`) the levels are chosen again:
a level's shared block then serves every copy, so more levels pay (`chain_levels`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ..array_ops import concat_ranges, csr, grouped, narrow, ranges, run_starts, step_slices, unique

# Fewer shift-equivalent states than this (with `MIN_DEGREE` arcs or more): nothing worth sharing
# (a DFA with fewer such states is not even numbered: small compiles pay nothing).
MIN_SHIFTED = 64
MIN_DEGREE = 16
# An arc into a state entered from this many states or more is absolute (a chain's exit).
ABS_SOURCES = 8
# The step limit of a full group (its walk is not cut: every token of its blocks is inside or an exit).
FULL = 1 << 30
HASH_ARCS = 1 << 20  # arcs hashed and compared at a time by `exact_classes` (whole columns: +200 MB on kb_145's 6M arcs)


def depth_first(num_states: int, start: int, ptr: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Old state id of each new id: depth-first postorder from ``start``, arcs in byte order
    (``ptr``, ``dst``: CSR of arcs sorted by (state, byte)); states not reached come last.

    A chain's first letter byte leads down the chain before anything else, so its positions
    finish last to first, each after its own side states (UTF-8 continuations, escapes) laid
    out alike: the chain is affine, one stride per position."""
    # only the first arc to each successor matters for the order (a string's state has 147 arcs
    # to about 10 states): the loop below runs over those
    src = np.repeat(np.arange(num_states), np.diff(ptr))
    _, first = np.unique(src * num_states + dst, return_index=True)
    first.sort()
    ptr, dst = csr(src[first], num_states), dst[first]
    succ, starts = dst.tolist(), ptr.tolist()
    seen = [False] * num_states
    order: list[int] = []
    seen[start] = True
    work = [(start, starts[start])]
    while work:
        v, i = work[-1]
        end = starts[v + 1]
        while i < end and seen[succ[i]]:
            i += 1
        if i < end:
            w = succ[i]
            work[-1] = (v, i + 1)
            seen[w] = True
            work.append((w, starts[w]))
        else:
            work.pop()
            order.append(v)
    rest = [q for q in range(num_states) if not seen[q]]
    return np.asarray(order + rest, np.int64)


def absolute_arcs(num_states: int, src: np.ndarray, dst: np.ndarray, byte: np.ndarray | None = None) -> np.ndarray:
    """bool per arc: its target is entered from `ABS_SOURCES` states or more (a chain's exit,
    reached from every position): read as the same state from every position, not shifted.

    With ``byte`` (arcs sorted by state, then byte), a target entered only from states that
    each read a different set of bytes stays relative: it is a chain's next position, entered
    from the position before it and from that position's side states (the last digit of each
    ``\\u00XX`` escape of a pattern's characters: o77304's package name, 8 of them and more),
    not an exit, which is entered from every position of a chain, states that read alike."""
    pair = unique(dst.astype(np.int64) * num_states + src)
    p_dst = pair // num_states
    sources = np.bincount(p_dst, minlength=num_states)
    many = sources >= ABS_SOURCES
    if byte is None or not many.any():
        return many[dst]
    ptr = csr(src, num_states)
    kind = exact_classes(ptr, src, [np.diff(ptr)], [byte])  # (the bytes a state reads: numbering-free)
    sel = many[p_dst]
    n_kinds = int(kind.max()) + 1
    key = unique(p_dst[sel] * n_kinds + kind[pair[sel] % num_states])
    # a target whose sources read alike nowhere: as many distinct kinds as sources
    kinds = np.bincount(key // n_kinds, minlength=num_states)
    return (many & (kinds < sources))[dst]


def unshifted_classes(ptr: np.ndarray, src: np.ndarray, byte: np.ndarray, dst: np.ndarray, is_abs: np.ndarray) -> np.ndarray:
    """Classes by each state's bytes and absolute targets alone (any numbering): the positions of
    one copy of a chain share one. Where these share too little, the lift numbers no chains (a
    first, cheap rejection)."""
    return exact_classes(ptr, src, [np.diff(ptr)], [byte, np.where(is_abs, dst, -1)])


def shift_classes(num_states: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray, is_abs: np.ndarray,
                  rounds: int, degree: np.ndarray) -> np.ndarray | None:
    """Class of every state: states of one class read every byte string of up to ``rounds``
    bytes alike, up to the shift between them until the first absolute arc, to the same state
    after it (module docstring); None where too few states with many arcs share a class
    (`worth_sharing`; refinement only splits classes). ``src`` sorted (arcs by state, byte)."""
    got = level_classes(num_states, src, byte, dst, is_abs, rounds, degree, [])
    return got[0][1] if got and got[0][0] == FULL else None


def level_classes(num_states: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray, is_abs: np.ndarray,
                  rounds: int, degree: np.ndarray,
                  levels: list[int] | Callable[[np.ndarray], list[int]]) -> list[tuple[int, np.ndarray]]:
    """[(step limit, classes after that many rounds)], the highest first: `FULL` for the classes
    of `shift_classes` (``rounds`` rounds), then each of ``levels`` (ascending, below
    ``rounds``; or chosen by ``levels(the classes after no round)``); only those still worth
    sharing (`worth_sharing`)."""
    S = num_states
    ptr = csr(src, S)
    # a relative arc: its shift (-S, S); an absolute arc: S + 1 + its target
    code = np.where(is_abs, S + 1, dst - src)  # (exit-blind: where an absolute arc leads is each member's own)
    cls = exact_classes(ptr, src, [np.diff(ptr)], [byte, code])
    if callable(levels):
        levels = levels(cls)
    # From here on states of one class have the same arcs and shifts: only the classes of their
    # distinct relative targets (in the order of their shifts) can still differ.
    pair = unique(src[~is_abs].astype(np.int64) * S + dst[~is_abs])  # (int64: the arcs may come as int32)
    u_src, u_dst = pair // S, pair % S
    u_ptr = csr(u_src, S)
    out: list[tuple[int, np.ndarray]] = []
    for done in range(rounds + 1):  # (classes after `done` rounds)
        if not worth_sharing(cls, degree):
            return out[::-1]
        if done in levels:
            out.append((done, cls))
        if done == rounds:
            break
        new = exact_classes(u_ptr, u_src, [cls], [cls[u_dst]])
        stable = new.max() == cls.max()
        cls = new
        if stable:  # a fixpoint: every further round gives the same partition
            out += [(j, cls) for j in levels if j > done]
            break
    out.append((FULL, cls))
    return out[::-1]


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: every input bit moves every output bit (sums of mixed arcs then
    collide only by chance)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _order(keys: list[np.ndarray]) -> np.ndarray:
    """``np.lexsort(keys[::-1])`` (the first key major, ties by index). One per-state key of
    below 2**31 and the row hash are sorted as one int64 (the key, then the hash's upper half):
    half the time of the lexsort, 50 of them in a lift of 280,000 states; the order is the
    lexsort's wherever the full hashes ascend within each tie, else the lexsort is taken."""
    if len(keys) == 2 and len(keys[0]) and 0 <= int(keys[0].min()) and int(keys[0].max()) < 1 << 31:
        k, h = keys
        both = (k.astype(np.int64) << 32) + ((h >> 32) + (1 << 31))
        o = np.argsort(both, kind="stable")
        b, hs = both[o], h[o]
        if not ((b[1:] == b[:-1]) & (hs[1:] < hs[:-1])).any():
            return o
    return np.lexsort(keys[::-1])


def exact_classes(ptr: np.ndarray, src: np.ndarray, per_state: list[np.ndarray], per_arc: list[np.ndarray]) -> np.ndarray:
    """Class of each state: equal ``per_state`` values and equal lists of ``per_arc`` values (arcs in
    order, ``src`` sorted), exactly. Lists are hashed, then every state compared with its class's
    first state (``per_state`` must fix the number of arcs); a collision falls back to sorting rows."""
    S = len(ptr) - 1
    cuts = step_slices(np.diff(ptr), HASH_ARCS).tolist()
    spans = [(int(ptr[s0]), int(ptr[s1]), s0, s1) for s0, s1 in zip(cuts[:-1], cuts[1:])]
    row = np.zeros(S, np.uint64)
    for a0, a1, s0, s1 in spans:
        h = _mix((np.arange(a0, a1, dtype=np.int64) - ptr[src[a0:a1]]).view(np.uint64))  # (each arc's position in its row)
        with np.errstate(over="ignore"):
            for a in per_arc:
                h = _mix(h * _MIX ^ a[a0:a1].astype(np.int64).view(np.uint64))
        has = s0 + np.flatnonzero(np.diff(ptr[s0:s1 + 1]) > 0)
        row[has] = np.add.reduceat(h, ptr[has] - a0)
    o = _order(keys := [*per_state, row.view(np.int64)])
    label = np.empty(S, np.int64)
    label[o] = np.cumsum(run_starts(*(k[o] for k in keys))) - 1
    first = np.empty(int(label.max()) + 1 if S else 0, np.int64)
    first[label[o[::-1]]] = o[::-1]  # (the lowest state of each class)
    same = all(np.array_equal(k, k[first[label]]) for k in per_state)
    for a0, a1, _, _ in spans if same else ():
        twin = ptr[first[label[src[a0:a1]]]] + np.arange(a0, a1) - ptr[src[a0:a1]]  # (the same position in the first state's row)
        same = same and all(np.array_equal(a[a0:a1], a[twin]) for a in per_arc)
    if same:
        return label
    width = int(np.diff(ptr).max()) if S else 0
    rows = np.full((S, len(per_state) + width * len(per_arc)), np.iinfo(np.int64).min, np.int64)
    for k, a in enumerate(per_state):
        rows[:, k] = a
    for k, a in enumerate(per_arc):
        rows[src, len(per_state) + (np.arange(len(src)) - ptr[src]) * len(per_arc) + k] = a
    _, inv = np.unique(rows, axis=0, return_inverse=True)
    return inv.reshape(-1).astype(np.int64)


def worth_sharing(cls: np.ndarray, degree: np.ndarray) -> bool:
    """Enough states with many arcs share a class with another state."""
    big = degree >= MIN_DEGREE
    count = np.bincount(cls[big], minlength=int(cls.max()) + 1 if len(cls) else 0)
    return int((count[cls[big]] >= 2).sum()) >= MIN_SHIFTED


def groups(blk_byte: np.ndarray, blk_state: np.ndarray, levels: list[tuple[int, np.ndarray]],
           skip: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(group of each block, -1 for none; shift of each block from its group's representative;
    the representative block of each group; the step limit of each group): per level of
    ``levels`` (`level_classes`, the highest first), the blocks not grouped yet with the same
    first byte and class, two or more, the ``skip`` blocks (walked otherwise, `shared_walks`)
    left out; the representative is the block of the lowest state."""
    nb = len(blk_byte)
    grp, shift = np.full(nb, -1, np.int32), np.zeros(nb, np.int32)  # (per block, held through the lift: int32)
    free = np.ones(nb, bool) if skip is None else ~skip
    reps, limits, G = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], 0
    for limit, cls in levels:
        cand = np.flatnonzero(free)
        if not len(cand):
            break
        key = blk_byte[cand] * (int(cls.max()) + 1) + cls[blk_state[cand]]
        o = np.lexsort((blk_state[cand], key))
        key, cand = key[o], cand[o]
        first = np.r_[True, key[1:] != key[:-1]]
        gid = np.cumsum(first) - 1
        multi = np.bincount(gid)[gid] >= 2
        _, gid = np.unique(gid[multi], return_inverse=True)
        gid = gid.reshape(-1)
        cand, first = cand[multi], first[multi]
        rep = cand[first]
        grp[cand] = G + gid
        shift[cand] = blk_state[cand] - blk_state[rep[gid]]
        free[cand] = False
        reps.append(rep)
        limits.append(np.full(len(rep), limit, np.int64))
        G += len(rep)
    return grp, shift, np.concatenate(reps), np.concatenate(limits)


@dataclass(frozen=True, eq=False)
class Chains:
    """What the lift hands `assemble` of the shifted blocks (module docstring)."""

    blk_group: np.ndarray  # int32 [NB]: group of each block, -1 for none
    blk_shift: np.ndarray  # int32 [NB]: character-state shift from the group's representative
    reps: np.ndarray  # int64 [G]: representative block of each group (its walk: the inside arcs)
    rel: tuple[np.ndarray, np.ndarray, np.ndarray]  # (group, token, next state of the representative): inside arcs
    #: int [NB]: the block holding each block's exit arcs (`group_exits.member_exits`): a full
    #: group's member reads its identity's first member's; every other block, its own
    exit_of: np.ndarray


def pairs(ch: Chains, e_block: np.ndarray, e_next: np.ndarray, S: int) -> tuple[np.ndarray, ...]:
    """The distinct (block, next state) pairs of the grouped blocks that the lift's searches
    walk: (block, c + shift) for each distinct inside next state c of the group, and (block,
    next state) for each distinct exit next state of the block holding its exits, for the
    blocks that read another's (`Chains.exit_of`). The inside pairs come as the number of them
    per block (they stand block by block, in block order: `with_blocks` writes the block column
    where a search needs it) and their next states; ``c`` itself is ``n - blk_shift[block]``.
    Neither the block column nor ``c`` is held beside the next states: a large schema's pairs
    are tens of millions."""
    nb, G = len(ch.blk_group), len(ch.reps)
    e = np.zeros(0, np.int64)
    if not G:
        return np.zeros(nb, np.int32), e, e, e
    g, _, nxt = ch.rel
    key = unique(g.astype(np.int64) * S + nxt)  # (int64: the lift's columns may come as int32)
    ptr, c = csr(key // S, G), key % S
    count, n = _inside_pairs(ch, ptr, c, max(nb, S))
    other = np.flatnonzero(ch.exit_of != np.arange(nb))  # (blocks reading another block's exits)
    holders = np.unique(ch.exit_of[other])
    hold = np.full(nb, -1, np.int64)
    hold[holders] = np.arange(len(holders))
    m = (hold >= 0)[e_block]  # (a bool per arc, not an int64 gather of tens of millions)
    key = unique(hold[e_block[m]] * S + e_next[m])
    ptr, a = csr(key // S, len(holders)), key % S
    hk = hold[ch.exit_of[other]]
    pos = ranges(ptr, hk)
    return count, n, narrow(np.repeat(other, ptr[hk + 1] - ptr[hk])), narrow(a[pos])


def kept_count(count: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``count`` (`pairs`) once only the inside pairs where ``keep`` is true are left."""
    kept = np.zeros(len(count), np.int32)
    for i, kk in _block_chunks(count):  # (a chunk's blocks are a run: counted over that run, not over every block)
        lo, hi = int(kk[0]), int(kk[-1]) + 1
        kept[lo:hi] += np.bincount(kk[keep[i:i + len(kk)]] - lo, minlength=hi - lo).astype(np.int32)
    return kept


PAIR_SLICE = 1 << 22  # inside pairs per slice of `_inside_pairs` (its temporaries: int64 columns of a slice)


def _inside_pairs(ch: Chains, ptr: np.ndarray, c: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
    """(pairs per block, c + shift) for each grouped block and distinct inside next state c of its group
    (``c[ptr[g]:ptr[g + 1]]``), in int32 where ``most`` (the blocks, the states) fits, filled a
    slice of blocks at a time: a large schema's pairs are tens of millions (Snowplow sp_137:
    30 million), whose whole int64 gathers were the lift's peak (+600 MB)."""
    k = np.flatnonzero(ch.blk_group >= 0)
    gk = ch.blk_group[k]
    size = ptr[gk + 1] - ptr[gk]
    dtype = np.int32 if most < 2**31 else np.int64
    total = int(size.sum())
    count = np.zeros(len(ch.blk_group), np.int32)
    count[k] = size
    n = np.empty(total, dtype)
    cuts = step_slices(size, PAIR_SLICE).tolist()
    at = 0
    for a, b in zip(cuts[:-1], cuts[1:]):
        inside = c[ranges(ptr, gk[a:b])]
        m = len(inside)
        inside += np.repeat(ch.blk_shift[k[a:b]], size[a:b])
        n[at:at + m] = inside
        at += m
    return count, n


def spelled_out(ch: Chains, blocks: np.ndarray, e_block: np.ndarray, e_tok: np.ndarray,
                e_next: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Absolute arcs (block, token, next state) of grouped ``blocks``: the group's inside arcs
    shifted, and the exit arcs of the block holding its exits where that is another block."""
    g, tok, nxt = ch.rel
    G = len(ch.reps)
    gidx, gptr = grouped(g, np.arange(len(g), dtype=np.int64), G)
    gb = ch.blk_group[blocks]
    pos = gidx[concat_ranges(gptr[gb], gptr[gb + 1])]
    k1 = np.repeat(blocks, gptr[gb + 1] - gptr[gb])
    n1 = nxt[pos] + ch.blk_shift[k1]
    t1 = tok[pos]
    others = blocks[ch.exit_of[blocks] != blocks]
    r = ch.exit_of[others]
    need = np.zeros(len(ch.blk_group), bool)
    need[r] = True
    sel = np.flatnonzero(need[e_block])  # (only the representatives' arcs: one sort of those)
    idx, ptr = grouped(e_block[sel], sel, len(ch.blk_group))
    pos = idx[concat_ranges(ptr[r], ptr[r + 1])]
    k2 = np.repeat(others, ptr[r + 1] - ptr[r])
    return np.concatenate([k1, k2]), np.concatenate([t1, e_tok[pos]]), np.concatenate([n1, e_next[pos]])


#: inside pairs per chunk where their block column is spelled out (`_block_chunks`: `failing`,
#: `offsets`, `with_blocks`, `kept_count`; each chunk's gathers are a few int64 columns)
PAIR_CHUNK = 1 << 20


def _block_chunks(count: np.ndarray, chunk: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """(first pair, blocks) of the inside pairs whose number per block is ``count`` (`pairs`),
    ``chunk`` pairs at a time: the block column is never spelled out whole."""
    chunk = chunk or PAIR_CHUNK
    ptr = np.concatenate([[0], np.cumsum(count, dtype=np.int64)])
    total = int(ptr[-1])
    for i in range(0, total, chunk):
        yield i, np.searchsorted(ptr, np.arange(i, min(i + chunk, total)), side="right") - 1


def failing(ch: Chains, count: np.ndarray, n: np.ndarray, alive: np.ndarray, chunk: int | None = None) -> np.ndarray:
    """The grouped blocks among the inside pairs (``count`` per block, next states ``n``:
    `pairs`) whose next state is not alive exactly where its representative's (``n - shift``)
    is; a chunk at a time."""
    bad = np.zeros(len(ch.blk_group), bool)
    for i, kk in _block_chunks(count, chunk):
        nn = n[i:i + len(kk)]
        bad[kk[alive[nn - ch.blk_shift[kk]] != alive[nn]]] = True
    return np.flatnonzero(bad)


def with_blocks(parts: list[np.ndarray], count: np.ndarray, bound: int) -> np.ndarray:
    """`array_ops.index_concat` of ``parts`` and then the inside pairs' block column (``count``
    per block: `pairs`), a chunk at a time straight into the join (the searches' keys: not
    spelled out beside it)."""
    head = sum(len(p) for p in parts)
    out = np.empty(head + int(count.sum()), np.int32 if bound < 2**31 else np.int64)
    if parts:
        np.concatenate(parts, out=out[:head], casting="same_kind")
    for i, kk in _block_chunks(count):
        out[head + i:head + i + len(kk)] = kk
    return out


def with_readers(ch: Chains, bad: np.ndarray) -> np.ndarray:
    """``bad`` (blocks to spell out) with the blocks that read their exits: a spelled-out block
    holds its inside arcs as exits too, which would override a reader's own (docs/tables.md)."""
    out = np.zeros(len(ch.exit_of), bool)
    out[bad] = True
    out |= out[ch.exit_of]
    return np.flatnonzero(out)


def offsets(count: np.ndarray, n: np.ndarray, shift: np.ndarray, new_id: np.ndarray, used: np.ndarray,
            chunk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(offset per block, blocks where it fails): the token-state offset of each ``used`` grouped
    block, ``new_id[c + shift] - new_id[c]``, which must be one non-negative number over the
    block's inside pairs (``count`` per block, next states ``n = c + shift[block]``: `pairs`),
    both states kept. The representative's state ``c`` is found again here, not held through
    the lift's searches; a chunk of pairs at a time (the copies of a counted string in 68 fields
    hand tens of millions of pairs here: their int64 gathers, whole, were the lift's peak)."""
    nb = len(count)
    off = np.zeros(nb, np.int64)

    def kept() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        for i, kk in _block_chunks(count, chunk):
            nn = n[i:i + len(kk)]
            sel = used[kk]
            kk, nn = kk[sel], nn[sel]
            yield kk, new_id[nn - shift[kk]], new_id[nn]

    for kk, a, b in kept():  # (any pair's offset per block, then every pair checked against it)
        off[kk] = b - a
    bad = np.zeros(nb, bool)
    for kk, a, b in kept():
        diff = b - a
        bad[kk[~((a >= 0) & (b >= 0) & (diff == off[kk]) & (diff >= 0))]] = True
    return off, np.flatnonzero(bad)
