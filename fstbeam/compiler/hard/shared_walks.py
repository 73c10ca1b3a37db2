"""Trie walks shared between the lift's blocks (`token_fsa.lift`).

The lift walks the tokenizer's byte trie from each block's state ``r``. Until the walk leaves the
strongly connected component (SCC) of ``r`` in the character DFA, what it meets depends only on
the component's shape as seen from ``r``, not on where its exits lead. A JSON string's interior
(any character, the escapes, UTF-8 continuations) has the same shape in every string field of
every schema, and its walk over a large vocabulary visits nearly the whole trie: it is walked once
per tokenizer and shape (kept with the trie for the process), and each field then costs only the
tokens that leave the interior (those with a closing quote), walked on from the concrete exit.

A shape is the component's arcs numbered canonically from ``r`` (breadth first, bytes in order),
exits marked by byte only; two roots with the same shape have isomorphic interiors, so the memo's
end states map back to concrete states through each root's own numbering.
"""
from __future__ import annotations

import hashlib
import weakref
from collections import Counter, OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

if TYPE_CHECKING:
    from .token_trie import TokenTrie

    #: a walk's result per first byte: (end node, end state, exit node, exit state)
    Walk = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    #: `token_fsa._Arcs.plain`: (num_states, src, byte, dst) -> `_Arcs`
    MakeArcs = Callable[[int, np.ndarray, np.ndarray, np.ndarray], Any]
    #: `token_fsa._Stepper`: (arcs, trie) -> step(node, state) -> (source pair index, child node, next state)
    StepperCls = Callable[[Any, TokenTrie], Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]]

# A root keeps at least this many bytes inside its component: below it a walk is cheap anyway.
MIN_INSIDE_BYTES = 32
# Components larger than this (states) are walked as usual: their numbering would cost more.
MAX_COMPONENT = 64
# Distinct (state, next state) edges above which no components are computed (a big grammar).
MAX_EDGES = 100_000
# Shapes remembered per trie (least recently used dropped first).
MEMO_SHAPES = 64

_MEMO: weakref.WeakKeyDictionary[TokenTrie, OrderedDict[str, dict[int, Walk]]] = weakref.WeakKeyDictionary()


def components(num_states: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
    """SCC id of every state (iterative Tarjan over the distinct edges), or None where the graph
    has more than `MAX_EDGES` distinct edges."""
    edges = np.unique(src.astype(np.int64) * num_states + dst)
    if len(edges) > MAX_EDGES:
        return None
    e_src, e_dst = edges // num_states, edges % num_states
    ptr = np.zeros(num_states + 1, np.int64)
    np.cumsum(np.bincount(e_src, minlength=num_states), out=ptr[1:])
    succ, starts = e_dst.tolist(), ptr.tolist()
    index = [-1] * num_states
    low = [0] * num_states
    on_stack = [False] * num_states
    comp = [-1] * num_states
    stack: list[int] = []
    counter = n_comp = 0
    for root in range(num_states):
        if index[root] >= 0:
            continue
        work = [(root, starts[root])]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, i = work[-1]
            if i < starts[v + 1]:
                work[-1] = (v, i + 1)
                w = succ[i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, starts[w]))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = n_comp
                    if w == v:
                        break
                n_comp += 1
    return np.asarray(comp, np.int64)


class Shape:
    """The interior of ``root``'s component numbered from ``root`` (canonical id 0)."""

    def __init__(self, arcs: Any, comp: np.ndarray, root: int) -> None:
        members = [root]
        canon = {root: 0}
        rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        i = 0
        while i < len(members):
            s = members[i]
            lo, hi = int(arcs.ptr[s]), int(arcs.ptr[s + 1])
            byte, nxt = arcs.byte[lo:hi], arcs.dst[lo:hi]
            inside = comp[nxt] == comp[root]
            targets = []
            for t in nxt[inside].tolist():
                if t not in canon:
                    canon[t] = len(members)
                    members.append(t)
                targets.append(canon[t])
            rows.append((byte[inside].astype(np.int64), np.asarray(targets, np.int64), byte[~inside].astype(np.int64)))
            i += 1
        self.members = np.asarray(members, np.int64)  # canonical id -> concrete state
        self.rows = rows  # per canonical state: (inside bytes, their canonical targets, exit bytes)
        h = hashlib.sha1()
        for ib, it, eb in rows:
            for a in (ib, it, eb):
                h.update(a.tobytes())
                h.update(b"|")
        self.key = h.hexdigest()

    def arcs(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """The interior as `_Arcs`-like arrays: exits go to the sink state ``len(members)``."""
        n = len(self.rows)
        src: list[np.ndarray] = []
        byte: list[np.ndarray] = []
        dst: list[np.ndarray] = []
        for q, (ib, it, eb) in enumerate(self.rows):
            b = np.concatenate([ib, eb])
            t = np.concatenate([it, np.full(len(eb), n, np.int64)])
            o = np.argsort(b, kind="stable")
            src.append(np.full(len(b), q, np.int64))
            byte.append(b[o])
            dst.append(t[o])
        return n + 1, np.concatenate(src), np.concatenate(byte), np.concatenate(dst)


def roots_worth_sharing(arcs: Any, comp: np.ndarray, states: np.ndarray) -> np.ndarray:
    """bool per state in ``states``: a root whose component keeps many bytes inside."""
    lo, hi = arcs.ptr[states], arcs.ptr[states + 1]
    out = np.zeros(len(states), bool)
    size = np.bincount(comp)
    for i, (s, a, b) in enumerate(zip(states.tolist(), lo.tolist(), hi.tolist())):
        if b - a < MIN_INSIDE_BYTES or size[comp[s]] > MAX_COMPONENT:
            continue
        out[i] = int((comp[arcs.dst[a:b]] == comp[s]).sum()) >= MIN_INSIDE_BYTES
    return out


def interior_walk(shape: Shape, trie: TokenTrie, first_bytes: np.ndarray, make_arcs: MakeArcs,
                  stepper_cls: StepperCls) -> list[Walk]:
    """For each first byte ``b``: the walk of ``shape``'s interior from trie node ``depth1[b]``,
    remembered per (trie, shape, b). Returns per byte ``(end_node, end_state, exit_node,
    exit_state)``: token ends inside (canonical states) and the pairs that left the interior
    (the child node read on the exit byte, the canonical state it was read from)."""
    memo = _MEMO.setdefault(trie, OrderedDict())
    per_byte = memo.setdefault(shape.key, {})
    memo.move_to_end(shape.key)
    while len(memo) > MEMO_SHAPES:
        memo.popitem(last=False)
    todo = [int(b) for b in first_bytes if int(b) not in per_byte]
    if todo:
        n_states, src, byte, dst = shape.arcs()
        sink = n_states - 1
        step = stepper_cls(make_arcs(n_states, src, byte, dst), trie)
        bidx = np.arange(len(todo), dtype=np.int64)
        node = trie.depth1[np.asarray(todo, np.int64)]
        state = np.zeros(len(todo), np.int64)
        ends, exits = [], []
        while len(node):
            has = trie.tok_ptr[node + 1] > trie.tok_ptr[node]
            ends.append((bidx[has], node[has], state[has]))
            s, node, nxt = step(node, state)
            out = nxt == sink
            exits.append((bidx[s][out], node[out], state[s][out]))
            bidx, node, state = bidx[s][~out], node[~out], nxt[~out]
        e_b, e_n, e_s = (np.concatenate(x) for x in zip(*ends))
        x_b, x_n, x_s = (np.concatenate(x) for x in zip(*exits)) if exits else (np.zeros(0, np.int64),) * 3
        for i, b in enumerate(todo):
            a, x = e_b == i, x_b == i
            per_byte[b] = (e_n[a], e_s[a], x_n[x], x_s[x])
    return [per_byte[int(b)] for b in first_bytes]


def share(dfa: Any, trie: TokenTrie, blk_byte: np.ndarray, blk_state: np.ndarray, make_arcs: MakeArcs,
          stepper_cls: StepperCls) -> tuple[np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, ...]] | None:
    """The blocks whose walk is taken from the memo: ``(handled [NB] bool, token ends (block, node,
    state), pairs to walk on from the exits (block, node, state))``, concrete states throughout;
    None where the DFA is too large to look for components."""
    roots = np.unique(blk_state)
    roots = roots[dfa.ptr[roots + 1] - dfa.ptr[roots] >= MIN_INSIDE_BYTES]  # (before the components)
    if not len(roots):
        return None
    comp = components(dfa.num_states, dfa.src, dfa.dst)
    if comp is None:
        return None
    roots = roots[roots_worth_sharing(dfa, comp, roots)]
    handled = np.zeros(len(blk_byte), bool)
    ends: list[tuple[np.ndarray, ...]] = []
    conts: list[tuple[np.ndarray, ...]] = []
    shapes = {r: Shape(dfa, comp, r) for r in roots.tolist()}
    count = Counter(shape.key for shape in shapes.values())
    known: Mapping[str, object] = _MEMO.get(trie, {})
    for r, shape in shapes.items():
        # a shape met once, and not walked before, is cheaper walked as usual (no memo, no exits)
        if count[shape.key] < 2 and shape.key not in known:
            continue
        blocks = np.flatnonzero(blk_state == r)
        walks = interior_walk(shape, trie, blk_byte[blocks], make_arcs, stepper_cls)
        for blk, (e_n, e_s, x_n, x_s) in zip(blocks.tolist(), walks):
            ends.append((np.full(len(e_n), blk, np.int64), e_n, shape.members[e_s]))
            nxt = dfa.step(shape.members[x_s], trie.node_byte[x_n].astype(np.int64))
            keep = nxt >= 0
            conts.append((np.full(int(keep.sum()), blk, np.int64), x_n[keep], nxt[keep]))
        handled[blocks] = True
    empty = (np.zeros(0, np.int64),) * 3

    def cat(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
        return tuple(np.concatenate(x) for x in zip(*parts)) if parts else empty

    return handled, cat(ends), cat(conts)
