"""Trie walks and token arcs shared between the lift's blocks (`token_fsa.lift`).

The lift walks the tokenizer's byte trie from each block's state ``r``. Until the walk leaves the
*region* of ``r`` in the character DFA (its strongly connected component, cut finer inside large
components: `regions`), what it meets depends only on the region's shape, not on where its exits
lead. A JSON string's interior (any character, UTF-8 continuations) has the same shape in every
string field of every schema, and its walk over a large vocabulary visits nearly the whole trie:
it is walked once per tokenizer and shape (kept with the trie for the process), and each field
then costs only the tokens that leave the interior (those with a closing quote), walked on from
the concrete exit.

A shape is the region's arcs numbered canonically (breadth first from the member whose own shape
hashes smallest, bytes in order), exits marked by byte only; two copies with the same shape are
isomorphic with the same numbering, so the tokens that end inside are kept once per (shape,
canonical state, first byte) with canonical next states (`assemble.Interiors`), and each copy's
states are laid out contiguously in that order (docs/tables.md, "Shared interiors").
"""
from __future__ import annotations

import hashlib
from array import array
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ....cancel import checkpoint
from ..array_ops import TRIM_ABOVE, concat_ranges, narrow, run_starts, trim_heap, unique
from . import loop_rows, walk_memo

if TYPE_CHECKING:
    from ..token_trie import TokenTrie

    #: `token_fsa._Arcs.plain`: (num_states, src, byte, dst) -> `_Arcs`
    MakeArcs = Callable[[int, np.ndarray, np.ndarray, np.ndarray], Any]
    #: `token_fsa._Stepper`: (arcs, trie) -> step(node, state) -> (source pair index, child node, next state)
    StepperCls = Callable[[Any, TokenTrie], Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]]

# A root keeps at least this many bytes inside its component: below it a walk is cheap anyway.
MIN_INSIDE_BYTES = 32
# Components larger than this (states) are walked as usual: their numbering would cost more.
MAX_COMPONENT = 64
# Distinct (state, next state) edges above which no components are computed (a big grammar).
# Without interiors every string field of such a schema walks the whole trie (jscsrc, 296,000
# edges: killed at 30 CPU-s in the lift at a limit of 100,000, 23 s at this one).
MAX_EDGES = 1_000_000


def components(num_states: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
    """SCC id of every state (scipy's strong components over the distinct edges), or None where
    the graph has more than `MAX_EDGES` distinct edges. (A Tarjan in Python held a Python int per
    edge: 230 MB and 3 CPU-s on Github_ultra o21328, 10% of a median schema's compile.)"""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    edges = unique(_changes(src, dst, num_states))
    if len(edges) > MAX_EDGES:
        return None
    graph = csr_matrix((np.ones(len(edges), np.int8), (edges // num_states, edges % num_states)),
                       shape=(num_states, num_states))
    _, comp = connected_components(graph, directed=True, connection="strong")
    return np.asarray(comp, np.int64)


def _changes(src: np.ndarray, dst: np.ndarray, num_states: int) -> np.ndarray:
    """The (state, next state) edges as ``src * num_states + dst`` (int64), an arc dropped where
    the one before it has the same edge: a state's arcs come together, and most of them run to
    one next state (a JSON string's interior: ~200 bytes), so the sort in `unique` sees a few
    edges per state instead of every arc (o21328: its largest temporaries at the lift's peak)."""
    keep = np.flatnonzero(run_starts(src, dst))
    edges = src[keep].astype(np.int64)
    edges *= num_states
    edges += dst[keep]
    return edges


def regions(num_states: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
    """Region id of every state: its SCC, or, inside an SCC of more than `MAX_COMPONENT` states,
    its SCC once the single-byte ASCII arcs are cut (a JSON string inside an array or an object
    with free properties: the loop ``"`` -> value -> ``,`` -> ``"`` joins every string interior
    to the container; cut at the quotes, each interior is a region of its own again). Any
    partition is exact for the walks (an arc to another region is an exit); this one finds the
    interiors that recur. None where `components` gives up."""
    comp = components(num_states, src, dst)
    if comp is None:
        return None
    big = np.bincount(comp)[comp] > MAX_COMPONENT
    if not big.any():
        return comp
    inner = np.flatnonzero(big[src] & big[dst])
    # (every arc of an edge is inner or none is: the edge's arcs are counted among the inner ones)
    pair = src[inner].astype(np.int64)
    pair *= num_states
    pair += dst[inner]
    every = np.sort(pair)  # (the arcs between the same two states counted by two searches: no np.unique)
    single = np.searchsorted(every, pair, "right") - np.searchsorted(every, pair) == 1
    del every, pair
    keep = inner[~(single & (byte[inner] < 0x80))]
    fine = components(num_states, src[keep], dst[keep])
    if fine is None:
        return comp
    return np.where(big, int(comp.max()) + 1 + fine, comp)


class Rows:
    """Each state's row as a shape reads it, for the members of the components to number: its
    inside arcs' bytes (int64 bytes) and targets, then its exit bytes, read with a slice each (a
    shape numbered with numpy calls per state was 2-4 CPU-s of a large schema's lift)."""

    def __init__(self, arcs: Any, comp: np.ndarray, states: np.ndarray) -> None:
        lo, hi = arcs.ptr[states], arcs.ptr[states + 1]
        arc = concat_ranges(lo, hi)
        owner = np.repeat(np.arange(len(states)), hi - lo)
        leaves = comp[arcs.dst[arc]] != comp[arcs.src[arc]]
        o = np.lexsort((leaves, owner))  # (stable: by state, inside arcs first, each part in byte order)
        arc, leaves, owner = arc[o], leaves[o], owner[o]
        start = np.zeros(len(states) + 1, np.int64)
        np.cumsum(hi - lo, out=start[1:])
        mid = start[:-1] + np.bincount(owner[~leaves], minlength=len(states))
        self.span = dict(zip(states.tolist(), zip(start[:-1].tolist(), mid.tolist(), start[1:].tolist())))
        byte = arcs.byte[arc]
        self.b8 = byte.astype(np.int64).tobytes()
        self.own, self.width = self.b8, 8  # (the signatures' bytes: int64 whatever the arcs hold)
        self.dst = arcs.dst[arc].tolist()

    def signature(self, s: int) -> str:
        """Hash of ``s``'s inside and exit bytes (its row, whatever its targets)."""
        a, m, e = self.span[s]
        w = self.width
        return hashlib.sha1(self.own[a * w:m * w] + b"|" + self.own[m * w:e * w]).hexdigest()


class Shape:
    """The interior of ``root``'s component numbered from ``root`` (canonical id 0)."""

    def __init__(self, rows: Rows, root: int) -> None:
        members = [root]
        canon = {root: 0}
        b8, dst = rows.b8, rows.dst
        out: list[tuple[bytes, bytes, bytes]] = []
        h = hashlib.sha1()
        i = 0
        while i < len(members):
            a, m, e = rows.span[members[i]]
            targets = []
            for t in dst[a:m]:
                c = canon.get(t)
                if c is None:
                    c = canon[t] = len(members)
                    members.append(t)
                targets.append(c)
            row = (b8[8 * a:8 * m], array("q", targets).tobytes(), b8[8 * m:8 * e])
            for x in row:
                h.update(x)
                h.update(b"|")
            out.append(row)
            i += 1
        self.members = np.asarray(members, np.int64)  # canonical id -> concrete state
        # per canonical state: (inside bytes, their canonical targets, exit bytes) as int64 bytes
        self.rows = out
        self.key = h.hexdigest()

    @classmethod
    def of(cls, members: np.ndarray, rows: list[tuple[bytes, bytes, bytes]], key: str) -> "Shape":
        """A shape known beforehand (`shapes_of`): ``members`` in canonical order, its rows and key."""
        shape = cls.__new__(cls)
        shape.members, shape.rows, shape.key = members, rows, key
        return shape

    def arcs(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """The interior as `_Arcs`-like arrays: exits go to the sink state ``len(members)``."""
        n = len(self.rows)
        src: list[np.ndarray] = []
        byte: list[np.ndarray] = []
        dst: list[np.ndarray] = []
        for q, row in enumerate(self.rows):
            ib, it, eb = (np.frombuffer(x, np.int64) for x in row)
            b = np.concatenate([ib, eb])
            t = np.concatenate([it, np.full(len(eb), n, np.int64)])
            o = np.argsort(b, kind="stable")
            src.append(np.full(len(b), q, np.int64))
            byte.append(b[o])
            dst.append(t[o])
        return n + 1, np.concatenate(src), np.concatenate(byte), np.concatenate(dst)


def roots_worth_sharing(arcs: Any, comp: np.ndarray, states: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """bool per state in ``states``: a root whose component keeps many bytes inside (and is at
    most `MAX_COMPONENT` states, or a row of loops: ``rows``, bool per component)."""
    lo, hi = arcs.ptr[states], arcs.ptr[states + 1]
    out = np.zeros(len(states), bool)
    small = np.bincount(comp)[comp[states]] <= MAX_COMPONENT
    if rows is not None:
        small |= rows[comp[states]]
    cand = np.flatnonzero((hi - lo >= MIN_INSIDE_BYTES) & small)
    if not len(cand):
        return out
    n = hi[cand] - lo[cand]
    inside = comp[arcs.dst[concat_ranges(lo[cand], hi[cand])]] == np.repeat(comp[states[cand]], n)
    out[cand] = np.add.reduceat(inside.astype(np.int64), np.cumsum(n) - n) >= MIN_INSIDE_BYTES
    return out


def canonical_shape(rows: Rows, members: np.ndarray) -> Shape:
    """The component's shape numbered from its canonical root: the member whose shape key is
    smallest, so every copy of the component is numbered alike whatever block meets it first.
    Only the members whose own row (inside and exit bytes) has the smallest hash are tried."""
    sig = [rows.signature(s) for s in members.tolist()]
    low = min(sig)
    full = [sh for sh in (Shape(rows, s) for s, g in zip(members.tolist(), sig) if g == low) if len(sh.members) == len(members)]
    if not full:  # (a row of loops, `loop_rows`, is not strongly connected: a root that reaches every member)
        full = [sh for sh in (Shape(rows, s) for s in members.tolist()) if len(sh.members) == len(members)]
    return min(full, key=lambda sh: sh.key)


# Shapes met before (the process's), by their component's layout relative to its first member:
# the copies of a string interior are laid out alike in every schema, and numbering one from its
# canonical root (`canonical_shape`, Python per state) was half of a median schema's `share`.
# Forgotten all at once past this many bytes of shapes (a string interior's: ~20 KB).
SHAPE_LAYOUT_BYTES = 16 << 20
_LAYOUTS: dict[bytes, tuple[np.ndarray, list[tuple[bytes, bytes, bytes]], str]] = {}
_layout_bytes = [0]


def shapes_of(arcs: Any, comp: np.ndarray, order: np.ndarray, bounds: np.ndarray, comps: list[int]) -> dict[int, Shape]:
    """`canonical_shape` of each component in ``comps`` (its members ``order[bounds[c]:bounds[c + 1]]``,
    ascending). A component laid out as one met before (the same arcs between the same members,
    the same exit bytes, every state counted from the first member) has the same shape, its
    members shifted: taken from `_LAYOUTS`, not numbered again."""
    cs = np.asarray(comps, np.int64)
    m_lo, m_hi = bounds[cs], bounds[cs + 1]
    n_mem = m_hi - m_lo
    mem = order[concat_ranges(m_lo, m_hi)].astype(np.int64)
    m_first = np.cumsum(n_mem) - n_mem
    base = mem[m_first]
    rel_mem = mem - np.repeat(base, n_mem)
    a_lo, a_hi = arcs.ptr[mem], arcs.ptr[mem + 1]
    n_arc = a_hi - a_lo
    pos = concat_ranges(a_lo, a_hi)
    # per arc: its source and target counted from the first member (-1: an exit), and its byte;
    # a column at a time into one array, each temporary let go (stacked at once, ten int64
    # columns per arc: o21328's peak)
    cols = np.empty((len(pos), 3), np.int64)
    cols[:, 0] = np.repeat(rel_mem, n_arc)
    dst = arcs.dst[pos].astype(np.int64)
    inside = comp[dst] == np.repeat(np.repeat(cs, n_mem), n_arc)
    dst -= np.repeat(np.repeat(base, n_mem), n_arc)
    dst[~inside] = -1
    del inside
    cols[:, 1] = dst
    del dst
    cols[:, 2] = arcs.byte[pos]
    del pos
    arc_ends = np.cumsum(np.add.reduceat(n_arc, m_first) if len(n_arc) else n_arc)
    spans = [(int(m_first[k]), int(m_first[k] + n_mem[k])) for k in range(len(comps))]
    lkeys = [hashlib.sha1(rel_mem[a:b].tobytes() + b"|" + cols[int(arc_ends[k - 1]) if k else 0:int(arc_ends[k])].tobytes()).digest()
             for k, (a, b) in enumerate(spans)]
    big = len(cols) > TRIM_ABOVE
    del cols
    if big:  # (the per-arc columns, freed: handed back under the shapes below)
        trim_heap()
    # the members of the components met for the first time: their rows read once for all of them
    missed = [mem[a:b] for (a, b), lkey in zip(spans, lkeys) if lkey not in _LAYOUTS]
    rows = Rows(arcs, comp, np.concatenate(missed)) if missed else None
    out: dict[int, Shape] = {}  # (in the order of ``comps``: `share` numbers interiors in it)
    for k, c in enumerate(comps):
        offset, hit = int(base[k]), _LAYOUTS.get(lkeys[k])  # (also a copy of a layout met just before)
        if hit is not None:
            out[c] = Shape.of(hit[0] + offset, hit[1], hit[2])
            continue
        m = mem[spans[k][0]:spans[k][1]]
        # (a layout found at first but forgotten since, the memo cleared just above: read now)
        shape = out[c] = canonical_shape(rows if rows is not None and int(m[0]) in rows.span else Rows(arcs, comp, m), m)
        size = shape.members.nbytes + sum(len(x) for row in shape.rows for x in row)
        if _layout_bytes[0] + size > SHAPE_LAYOUT_BYTES:
            _LAYOUTS.clear()
            _layout_bytes[0] = 0
        _LAYOUTS[lkeys[k]] = (shape.members - offset, shape.rows, shape.key)
        _layout_bytes[0] += size
    return out


@dataclass(eq=False)
class Shared:
    """What `share` hands the lift: blocks it walked, their interiors, the exits to walk on."""

    handled: np.ndarray  # bool [NB]: blocks whose walk came from the memo
    conts: tuple[np.ndarray, ...]  # (block, node, concrete state): pairs to walk on from the exits
    blk_inner: np.ndarray  # int32 [NB]: interior id of each block (-1: none)
    blk_copy: np.ndarray  # int32 [NB]: copy id of the block's state (-1: none)
    copies: list[np.ndarray]  # per copy: members, concrete states in canonical order
    inner_arcs: tuple[np.ndarray, ...]  # (interior id, token, canonical next state), sorted by id then token
    inner_next: tuple[np.ndarray, ...]  # (interior id, canonical next state): distinct, sorted
    absolute: tuple[np.ndarray, ...]  # (block, node, concrete state): token ends inside unshared interiors
    region: np.ndarray  # int64 [S]: region of every state (`regions`; a walk leaves its interior where it changes)

    def take_starts(self) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """``conts`` and ``absolute``, handed over once and let go here: the lift's search starts
        from them, and held beside its frontier they were 90 MB of kb_145's peak."""
        taken = self.conts, self.absolute
        self.conts = self.absolute = (np.zeros(0, np.int32),) * 3
        return taken


#: the exits stepped this many at a time (`share`)
EXIT_SLICE = 1 << 21


def share(dfa: Any, trie: TokenTrie, blk_byte: np.ndarray, blk_state: np.ndarray, make_arcs: MakeArcs,
          stepper_cls: StepperCls) -> Shared | None:
    """The blocks whose walk is taken from the memo, their interiors (token ends inside the
    component, once per (shape, canonical state, first byte), in canonical states) and the
    pairs to walk on from their exits (concrete states); None where there is nothing to share
    or the DFA is too large to look for components.

    A shape met once and not shared before stays unshared (its token arcs absolute, in
    ``absolute``), but its walk still comes from the memo (`walk_memo`): the next schema with
    the same interior (free property names) does not walk the trie for it again."""
    roots = unique(blk_state)
    roots = roots[dfa.ptr[roots + 1] - dfa.ptr[roots] >= MIN_INSIDE_BYTES]  # (before the components)
    if not len(roots):
        return None
    comp = regions(dfa.num_states, dfa.src, dfa.byte, dfa.dst)
    if comp is None:
        return None
    comp, rows = loop_rows.with_rows(dfa, comp, trie, shapes_of, MIN_INSIDE_BYTES)
    roots = roots[roots_worth_sharing(dfa, comp, roots, rows)]
    if not len(roots):
        return None
    by_comp: dict[int, list[int]] = {}
    for r in roots.tolist():
        by_comp.setdefault(int(comp[r]), []).append(r)
    order = np.argsort(comp, kind="stable")
    bounds = np.searchsorted(comp[order], np.arange(int(comp.max()) + 2))
    shapes = shapes_of(dfa, comp, order, bounds, list(by_comp))
    if len(dfa.src) > TRIM_ABOVE:  # (the shapes' freed per-component temporaries: 200 MB resident on o21328)
        trim_heap()
    count = Counter(shape.key for shape in shapes.values())
    # the blocks of each component's roots, grouped once (an `isin` per component was quadratic:
    # 14 CPU-s of o21267's lift, thousands of string fields times a million blocks)
    is_root = np.zeros(dfa.num_states, bool)
    is_root[roots] = True
    rooted = np.flatnonzero(is_root[blk_state])
    rooted_comp = comp[blk_state[rooted]]
    o = np.argsort(rooted_comp, kind="stable")  # (stable: each component's blocks stay in order)
    rooted, rooted_comp = rooted[o], rooted_comp[o]
    with walk_memo.LOCK:  # (the server compiles in threads: one lift at a time reads and fills the memo)
        known = walk_memo.shared_keys(trie)
        nb = len(blk_byte)
        handled = np.zeros(nb, bool)
        blk_inner, blk_copy = np.full(nb, -1, np.int32), np.full(nb, -1, np.int32)  # (per block, held through the lift)
        copies: list[np.ndarray] = []
        ids_of: dict[str, np.ndarray] = {}  # per shape: interior id of each start code (-1: none yet)
        n_inner = 0
        inner_arcs: list[tuple[np.ndarray, ...]] = []
        inner_next: list[tuple[np.ndarray, ...]] = []
        absolute: list[tuple[np.ndarray, ...]] = []
        exits: list[tuple[np.ndarray, ...]] = []  # (block, child node, concrete state): walked on below in one step
        gathered: dict[tuple[str, bytes], list[Any]] = {}  # (shape, start codes) -> [its exits, its token ends]
        for c, shape in shapes.items():
            checkpoint()  # (thousands of components on a large schema)
            # a shape met once, and not shared before, is not shared (no exits to link, no offsets)
            is_shared = count[shape.key] >= 2 or shape.key in known
            members = shape.members
            blocks = rooted[np.searchsorted(rooted_comp, c):np.searchsorted(rooted_comp, c, "right")]
            sort_m = np.argsort(members)
            canon = sort_m[np.searchsorted(members[sort_m], blk_state[blocks])]
            codes = canon * 256 + blk_byte[blocks]
            walks = walk_memo.walks_for(trie, shape.key, len(members), is_shared)
            walks.ensure(shape, trie, codes, make_arcs, stepper_cls)
            # the copies of a shape mostly start from the same codes: their walks gathered once
            met = gathered.get((shape.key, codes.tobytes()))
            if met is None:
                met = gathered[shape.key, codes.tobytes()] = [walks.exits(codes), None]
            i, x_n, x_s = met[0]
            exits.append((blocks[i], x_n, members[x_s]))
            handled[blocks] = True
            if not is_shared:
                if met[1] is None:
                    met[1] = walks.ends(codes)
                i, e_n, e_s = met[1]
                absolute.append((blocks[i], e_n, members[e_s]))
                continue
            # interior ids: one per (shape, start code), numbered in the order the blocks meet them
            ids = ids_of.setdefault(shape.key, np.full(len(members) * 256, -1, np.int64))
            new = codes[ids[codes] < 0]
            if len(new):
                uniq, first = np.unique(new, return_index=True)
                new = uniq[np.argsort(first, kind="stable")]
                ids[new] = n_inner + np.arange(len(new))
                n_inner += len(new)
                i, tok, rel = walks.tokens(trie, new)
                inner_arcs.append((ids[new][i], tok, rel))  # (new ids ascending: the parts stay sorted)
                i, rel = walks.next_states(trie, new)
                inner_next.append((ids[new][i], rel))
            blk_inner[blocks], blk_copy[blocks] = ids[codes], len(copies)
            copies.append(members)
        walk_memo.settle(trie)  # what this lift walked is gathered: keep a little for the next
    if len(dfa.src) > TRIM_ABOVE:  # (the walks' freed temporaries: 300 MB resident on o21328, under the joins below)
        trim_heap()
    empty = (np.zeros(0, np.int64),) * 3

    def cat(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
        return tuple(np.concatenate(x) for x in zip(*parts)) if parts else empty

    # the exits: the child node read on the exit byte from the concrete state, walked on as usual;
    # some million at a time, each run of pieces let go once stepped (all at once, the exits and a
    # step's int64 temporaries were 110 MB over the rest on o21192, that lift's peak)
    conts_parts: list[tuple[np.ndarray, ...]] = []
    exits.reverse()  # (popped from the end: in order)
    while exits:
        run: list[tuple[np.ndarray, ...]] = []
        size = 0
        while exits and (not run or size + len(exits[-1][0]) <= EXIT_SLICE):
            run.append(exits.pop())
            size += len(run[-1][0])
        x_b, x_n, x_s = cat(run)
        del run
        nxt = dfa.step(x_s, trie.node_byte[x_n].astype(np.int64))
        keep = nxt >= 0
        conts_parts.append((narrow(x_b[keep]), narrow(x_n[keep]), narrow(nxt[keep])))  # (int32: held to the search)
        del x_b, x_n, x_s, nxt, keep
    conts = cat(conts_parts)
    del conts_parts
    return Shared(handled, conts, blk_inner, blk_copy, copies, cat(inner_arcs), cat(inner_next)[:2], cat(absolute), comp)
