"""Determinization of a small acceptor that stops at a state cap.

OpenFst's `determinize(nstate=...)` does not stop early: for an acceptor the state threshold
is applied by pruning a determinized automaton whose distances need every state, so a
blow-up costs all of it before the cap is seen (`(a|b)*a(a|b){25}`, a 24-state automaton:
108 s to refuse at 1,000,000 states; `{40}` never ends). A small automaton is where such a
blow-up hides (a regex, a schema's `pattern`). For one of at most `MAX_INPUT_STATES` states, the
subsets are counted first, one at a time, up to `PROBE_STATES` (milliseconds: most stay at a
few hundred, and OpenFst then builds them); past that, every subset of states is a few 64-bit
words, so the subset construction runs with numpy a level of the breadth-first search at a time
and stops as soon as the cap is passed.
"""
from __future__ import annotations

import numpy as np
import pynini

from .vector_fst import vector_fst_bytes

__all__ = ["MAX_INPUT_STATES", "determinize_small", "StateCapExceeded"]

MAX_INPUT_STATES = 256  # one bit per state: a subset is at most 4 uint64 words


PROBE_STATES = 20_000  # counted one subset at a time first: most small automata stay far below


def _count_subsets(n: int, start: int, by_moves: dict[tuple[tuple[int, int], ...], list[int]], limit: int) -> int:
    """How many subsets the construction reaches, counted up to ``limit`` (Python ints as bit
    sets, one subset at a time: milliseconds where the answer is a few hundred)."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # state -> (class, next states as bits)
    for c, pairs in enumerate(by_moves):
        bits: dict[int, int] = {}
        for q, nxt in pairs:
            bits[q] = bits.get(q, 0) | 1 << nxt
        for q, b in bits.items():
            out[q].append((c, b))
    seen = {1 << start}
    todo = [1 << start]
    while todo:
        rest = todo.pop()
        reach: dict[int, int] = {}
        while rest:
            low = rest & -rest
            rest ^= low
            for c, b in out[low.bit_length() - 1]:
                reach[c] = reach.get(c, 0) | b
        for b in reach.values():
            if b not in seen:
                seen.add(b)
                if len(seen) >= limit:
                    return len(seen)
                todo.append(b)
    return len(seen)


class StateCapExceeded(Exception):
    """The deterministic automaton has more than ``cap`` states (``found`` when it stopped)."""

    def __init__(self, found: int, cap: int):
        super().__init__(f"determinization passed {cap:,} states ({found:,} found)")
        self.found, self.cap = found, cap


def determinize_small(fst: pynini.Fst, max_states: int | None) -> pynini.Fst | None:
    """The subset construction of ``fst`` (an epsilon-free unweighted acceptor), numbered as
    OpenFst's `determinize` numbers it (a state's arcs by label, states in the order arcs first
    reach them: the same automaton, state for state); `StateCapExceeded` as soon as it passes
    ``max_states`` states (None: no cap). None where ``fst`` is not such an acceptor of at most
    `MAX_INPUT_STATES` states (the caller uses OpenFst)."""
    n = fst.num_states()
    if not 0 < n <= MAX_INPUT_STATES or fst.start() < 0:
        return None
    props = pynini.UNWEIGHTED | pynini.NO_EPSILONS | pynini.ACCEPTOR  # type: ignore[attr-defined]
    if fst.properties(props, True) != props:
        return None
    zero = pynini.Weight.zero(fst.weight_type())  # type: ignore[attr-defined]
    words = (n + 63) // 64
    bit = [(q // 64, np.uint64(1 << (q % 64))) for q in range(n)]  # (word, bit) of each state
    final_bits = np.zeros(words, np.uint64)
    moves: dict[int, list[tuple[int, int]]] = {}  # label -> its (state, next state) pairs
    for q in range(n):
        if fst.final(q) != zero:
            final_bits[bit[q][0]] |= bit[q][1]
        for arc in fst.arcs(q):
            moves.setdefault(arc.ilabel, []).append((q, arc.nextstate))
    # labels that move every state alike are one class (a byte automaton's letters, its UTF-8
    # continuation bytes: a few dozen classes of 200 labels); the search runs over the classes,
    # each named by its smallest label, and the arcs are spelled out per label at the end
    by_moves: dict[tuple[tuple[int, int], ...], list[int]] = {}
    for label in sorted(moves):
        by_moves.setdefault(tuple(sorted(moves[label])), []).append(label)
    members_of = list(by_moves.values())  # (in the order of their smallest labels)
    if max_states is not None:
        limit = min(max_states, PROBE_STATES) + 1
        found = _count_subsets(n, fst.start(), by_moves, limit)
        if found < limit:  # (all counted, within the cap: OpenFst builds it faster than the search below)
            return pynini.determinize(fst)
        if limit == max_states + 1:
            raise StateCapExceeded(found, max_states)
    step: dict[int, np.ndarray] = {}  # class -> [n, words]: the states each state reaches on it
    for c, pairs in enumerate(by_moves):
        row = step[c] = np.zeros((n, words), np.uint64)
        for q, nxt in pairs:
            row[q, bit[nxt][0]] |= bit[nxt][1]
    as_key = np.dtype([(f"w{i}", "<u8") for i in range(words)])  # (a subset's words as one sortable record)

    def keys(subsets: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(subsets).view(as_key).ravel()
    known = np.zeros((1, words), np.uint64)  # every subset found, in the order of their ids
    known[0, bit[fst.start()][0]] = bit[fst.start()][1]
    known_keys = keys(known)
    order = np.zeros(1, np.int64)  # (``known_keys`` sorted: kept from one level to the next)
    frontier_ids = np.zeros(1, np.int64)
    src_parts: list[np.ndarray] = []
    cls_parts: list[np.ndarray] = []
    dst_parts: list[np.ndarray] = []
    while len(frontier_ids) and step:
        frontier = known[frontier_ids]
        members = [(frontier[:, w] >> np.uint64(q % 64)) & np.uint64(1) for q, (w, _) in enumerate(bit)]
        level_src, level_cls, level_next = [], [], []
        for c, row in step.items():
            nxt = np.zeros((len(frontier), words), np.uint64)
            for q in np.flatnonzero(row.any(axis=1)).tolist():
                nxt |= members[q][:, None] * row[q][None, :]
            hit = np.flatnonzero(nxt.any(axis=1))
            level_src.append(frontier_ids[hit])
            level_cls.append(np.full(len(hit), c, np.int64))
            level_next.append(nxt[hit])
        src_all, cls_all, nxt_all = (np.concatenate(p) for p in (level_src, level_cls, level_next))
        by = np.lexsort((cls_all, src_all))  # (OpenFst's numbering: states in the order a state's
        src_all, cls_all, nxt_all = src_all[by], cls_all[by], nxt_all[by]  # arcs, by label, first reach them)
        level_keys = keys(nxt_all)
        at = np.searchsorted(known_keys[order], level_keys)
        seen = (at < len(known)) & (known_keys[order][np.minimum(at, len(known) - 1)] == level_keys)
        unseen = np.flatnonzero(~seen)
        _, first = np.unique(level_keys[unseen], return_index=True)
        new = nxt_all[unseen[np.sort(first)]]
        if max_states is not None and len(known) + len(new) > max_states:
            raise StateCapExceeded(len(known) + len(new), max_states)
        frontier_ids = np.arange(len(known), len(known) + len(new), dtype=np.int64)
        known = np.concatenate([known, new])
        known_keys = keys(known)
        order = np.argsort(known_keys, kind="stable")
        src_parts.append(src_all)
        cls_parts.append(cls_all)
        dst_parts.append(order[np.searchsorted(known_keys[order], level_keys)])
    src = np.concatenate(src_parts) if src_parts else np.zeros(0, np.int64)
    cls = np.concatenate(cls_parts) if cls_parts else np.zeros(0, np.int64)
    dst = np.concatenate(dst_parts) if dst_parts else np.zeros(0, np.int64)
    # each class arc is one arc per label of the class
    sizes = np.array([len(m) for m in members_of], np.int64)
    flat = np.array([label for m in members_of for label in m], np.int64)
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    reps = sizes[cls]
    src, dst = np.repeat(src, reps), np.repeat(dst, reps)
    at = np.repeat(first[cls] - np.concatenate([[0], np.cumsum(reps)[:-1]]), reps) + np.arange(int(reps.sum()))
    lab = flat[at]
    by = np.lexsort((lab, src))
    final = (known & final_bits).any(axis=1)
    return pynini.Fst.read_from_string(vector_fst_bytes(len(known), 0, final, src[by], lab[by], dst[by]))
