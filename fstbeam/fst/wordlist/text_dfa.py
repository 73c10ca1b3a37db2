"""Running text around a word automaton: a DFA built by construction, not by determinizing.

The text language is a small *control* NFA (opening and closing marks, spaces, dashes, numbers,
contractions, the possessive ``'s``) wrapped around one large deterministic component, the
minimal acyclic DFA ``W`` of the word forms. The control NFA enters ``W`` at its ``enter`` state,
and every final state of ``W`` leads back to its ``base_end`` state.

A state of the text DFA is a set of NFA states: some ``W`` states plus some control states.
Almost all of them are *pure*, one ``W`` state and exactly the control states that state forces
(none inside a word; "a word just ended" at a word end). Pure states keep ``W``'s numbering and
arcs, copied with numpy. Only where word bytes and separators overlap (a word-final state with
an arc on ``-``, ``'`` or ``.``; a word start that may also be a number or a contraction) does a
state hold more, and those few *mixed* states are explored one by one in Python. Nothing is
ever determinized as a whole, and the result is deterministic by construction.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .acyclic import AcyclicDFA

__all__ = ["Control", "TextDFA", "text_dfa"]


class Control:
    """A small NFA over bytes with epsilon moves, built by hand (tens of states)."""

    def __init__(self) -> None:
        self.arcs: list[dict[int, set[int]]] = []
        self.eps: list[set[int]] = []
        self.final: set[int] = set()
        self._closure: dict[frozenset, frozenset] = {}
        self._step: dict[tuple[frozenset, int], frozenset] = {}

    def add(self) -> int:
        self.arcs.append({})
        self.eps.append(set())
        return len(self.arcs) - 1

    def epsilon(self, src: int, dst: int) -> None:
        self.eps[src].add(dst)

    def text(self, src: int, dst: int, data: bytes) -> None:
        """A path spelling ``data`` from ``src`` to ``dst`` (fresh inner states)."""
        q = src
        for i, b in enumerate(data):
            t = dst if i == len(data) - 1 else self.add()
            self.arcs[q].setdefault(b, set()).add(t)
            q = t

    def chars(self, src: int, dst: int, chars) -> None:
        """One character of ``chars`` (each UTF-8 encoded) from ``src`` to ``dst``."""
        for c in chars:
            self.text(src, dst, c.encode("utf-8"))

    def closure(self, states) -> frozenset:
        key = frozenset(states)
        hit = self._closure.get(key)
        if hit is None:
            seen, todo = set(key), list(key)
            while todo:
                for t in self.eps[todo.pop()]:
                    if t not in seen:
                        seen.add(t)
                        todo.append(t)
            hit = self._closure[key] = frozenset(seen)
        return hit

    def step(self, states: frozenset, byte: int) -> frozenset:
        key = (states, byte)
        hit = self._step.get(key)
        if hit is None:
            hit = self._step[key] = self.closure(t for s in states for t in self.arcs[s].get(byte, ()))
        return hit

    def out_bytes(self, states) -> set[int]:
        return {b for s in states for b in self.arcs[s]}


@dataclass(frozen=True, eq=False)
class TextDFA:
    """A DFA over bytes as arc arrays sorted by (source, byte); start state 0."""

    final: np.ndarray  # bool [S]
    src: np.ndarray  # int64 [A]
    byte: np.ndarray  # uint8 [A]
    dst: np.ndarray  # int64 [A]

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def num_arcs(self) -> int:
        return len(self.src)


class _Assembler:
    """Numbers the states of the text DFA: pure states are W's ids, mixed ones come after."""

    def __init__(self, w: AcyclicDFA, k: Control, enter: int, base_end: int):
        self.w, self.k, self.enter = w, k, enter
        self.after_word = k.closure({base_end})
        self.mixed: dict[tuple, int] = {}
        self.keys: list[tuple[tuple[int, ...], frozenset]] = []
        self.todo: list[int] = []

    def state(self, wset, kset: frozenset) -> int:
        """Id of the (closed) set ``wset`` of W states plus ``kset`` of control states; -1: dead."""
        w, final = self.w, self.w.final
        wset = set(wset)
        if self.enter in kset:
            wset.add(w.start)
        if any(final[q] for q in wset) and not self.after_word <= kset:
            kset = kset | self.after_word
        if not wset and not kset:
            return -1
        if len(wset) == 1:
            (q,) = wset
            if kset == (self.after_word if final[q] else frozenset()):
                return q
        key = (tuple(sorted(wset)), kset)
        sid = self.mixed.get(key)
        if sid is None:
            sid = self.mixed[key] = w.num_states + len(self.keys)
            self.keys.append(key)
            self.todo.append(sid)
        return sid

    def explore(self) -> tuple[list[int], list[int], list[int]]:
        """Arcs of every mixed state (found so far and found on the way)."""
        w, k = self.w, self.k
        src, byt, dst = [], [], []
        while self.todo:
            sid = self.todo.pop()
            wset, kset = self.keys[sid - w.num_states]
            moves: dict[int, list[int]] = {b: [] for b in k.out_bytes(kset)}
            for q in wset:
                lo, hi = int(w.ptr[q]), int(w.ptr[q + 1])
                for b, t in zip(w.byte[lo:hi].tolist(), w.next[lo:hi].tolist()):
                    moves.setdefault(b, []).append(t)
            for b, targets in moves.items():
                t = self.state(targets, k.step(kset, b))
                if t >= 0:
                    src.append(sid), byt.append(b), dst.append(t)
        return src, byt, dst


def text_dfa(w: AcyclicDFA, k: Control, *, start: int, enter: int, base_end: int) -> TextDFA:
    """The DFA of the control NFA ``k`` (from ``start``) with ``w`` entered at ``enter`` and
    left, at every final state of ``w``, to ``base_end``."""
    asm = _Assembler(w, k, enter, base_end)
    n = w.num_states
    a_src = np.repeat(np.arange(n), np.diff(w.ptr))
    a_byte, a_dst = w.byte.astype(np.int64), w.next.astype(np.int64).copy()
    # Word ends: control bytes (space, punctuation, possessive) lead to shared control states,
    # unless the word itself goes on with that byte: then the state is mixed.
    ctl = sorted(k.out_bytes(asm.after_word))
    is_ctl = np.zeros(256, bool)
    is_ctl[ctl] = True
    clash = np.flatnonzero(w.final[a_src] & is_ctl[a_byte])
    for i in clash.tolist():
        a_dst[i] = asm.state([int(a_dst[i])], k.step(asm.after_word, int(a_byte[i])))
    fin = np.flatnonzero(w.final)
    grid_src = np.repeat(fin, len(ctl))
    grid_byte = np.tile(np.asarray(ctl, np.int64), len(fin))
    taken = np.isin(grid_src * 256 + grid_byte, a_src[clash] * 256 + a_byte[clash])
    shared = np.array([asm.state((), k.step(asm.after_word, b)) for b in ctl] or [0], np.int64)
    grid_dst = np.tile(shared[: len(ctl)], len(fin))
    keep = ~taken & (grid_dst >= 0)
    start_id = asm.state((), k.closure({start}))
    m_src, m_byte, m_dst = asm.explore()
    src = np.concatenate([a_src, grid_src[keep], np.asarray(m_src, np.int64)])
    byte = np.concatenate([a_byte, grid_byte[keep], np.asarray(m_byte, np.int64)])
    dst = np.concatenate([a_dst, grid_dst[keep], np.asarray(m_dst, np.int64)])
    final = np.concatenate([
        w.final & bool(asm.after_word & k.final),
        np.array([bool(ks & k.final) for _, ks in asm.keys], bool),
    ])
    return _trim(final, start_id, src, byte, dst)


def _reach(n: int, seeds: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """States reachable from ``seeds`` along arcs src -> dst (breadth-first, numpy)."""
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    shift = max(n - 1, 1).bit_length()  # one sort of packed (src, dst) words, no argsort + gather
    nxt = np.sort((src.astype(np.int64) << shift) | dst) & ((1 << shift) - 1)
    seen = np.zeros(n, bool)
    seen[seeds] = True
    frontier = np.asarray(seeds, np.int64)
    stamp = np.zeros(n, np.int64)
    while len(frontier):
        lo, hi = ptr[frontier], ptr[frontier + 1]
        counts = hi - lo
        idx = np.repeat(lo - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        cand = nxt[idx]
        cand = cand[~seen[cand]]
        pos = np.arange(len(cand))
        stamp[cand] = pos  # keep one occurrence of each state, without sorting
        frontier = cand[stamp[cand] == pos]
        seen[frontier] = True
    return seen


def _trim(final, start, src, byte, dst) -> TextDFA:
    """Keep states reachable from ``start`` that can reach a final state; renumber, start = 0."""
    n = len(final)
    keep = _reach(n, np.array([start]), src, dst) & _reach(n, np.flatnonzero(final), dst, src)
    if not keep[start]:
        return TextDFA(np.zeros(1, bool), *(np.zeros(0, t) for t in (np.int64, np.uint8, np.int64)))
    order = np.r_[start, np.flatnonzero(keep & (np.arange(n) != start))]
    new = np.full(n, -1, np.int64)
    new[order] = np.arange(len(order))
    a = keep[src] & keep[dst]
    src, byte, dst = new[src[a]], byte[a], new[dst[a]]
    key = src * 256 + byte
    if (key[1:] < key[:-1]).any():  # pure states keep W's order: often sorted already
        o = np.argsort(key, kind="stable")
        src, byte, dst = src[o], byte[o], dst[o]
    return TextDFA(final[order], src, byte.astype(np.uint8), dst)
