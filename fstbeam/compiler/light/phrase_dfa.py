"""Small exact byte DFAs for one phrase, avoid phrase or prefix (the first step of a light compile).

Our own subset construction over byte classes, minimized; the tests check it against pynini
acceptors. `PhraseDFA.to_char_dfa` gives the flat 256-column form the satisfiability checks walk.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from ...contract.layout import N_CLASSES
from ...contract.light import Kind
from ...fst.text import IS_WORD_BYTE, boundary_needs

__all__ = ["PhraseDFA", "phrase_char_dfa", "prefix_char_dfa"]


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class PhraseDFA:
    """A byte DFA over symbol classes: ``delta[q, sym_of_byte[b]]``.

    Symbols are the distinct (case-folded) bytes of the literal plus two representatives: any
    other word byte (``word_sym``) and any other non-word byte (``nonword_sym``).
    ``forbidden[q]``: a token that enters ``q`` is disallowed (avoid: the phrase is complete;
    prefix: the output left the prefix).
    """

    delta: np.ndarray  # int32 [Q, nsym]
    sym_of_byte: np.ndarray  # int16 [256]
    start: int
    final: np.ndarray  # bool [Q]
    forbidden: np.ndarray  # bool [Q]
    progress: np.ndarray  # int32 [Q]
    word_sym: int
    nonword_sym: int

    @property
    def n_states(self) -> int:
        return int(self.delta.shape[0])

    def run(self, data: bytes, state: int | None = None) -> int:
        q = self.start if state is None else state
        for b in data:
            q = int(self.delta[q, self.sym_of_byte[b]])
        return q

    def accepts(self, data: bytes) -> bool:
        return bool(self.final[self.run(data)])

    def run_tokens(self, states: np.ndarray, padded: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """int32 ``[len(states), T]``: the state reached from each state over each token's bytes.

        ``padded`` uint8 ``[T, L]`` holds the tokens' bytes left-aligned, ``lengths`` int ``[T]``.
        """
        states = np.asarray(states, dtype=np.int32)
        lengths = np.asarray(lengths)
        t = len(lengths)
        order = np.argsort(-lengths, kind="stable")  # longest first: active tokens are a prefix
        lens = lengths[order]
        syms = self.sym_of_byte[padded[order]]  # [T, L]
        nsym = self.delta.shape[1]
        flat = self.delta.ravel()
        cur = np.repeat(states[:, None], t, axis=1)  # [Q', T]
        active = np.searchsorted(-lens, -np.arange(padded.shape[1] if t else 0), side="left")  # tokens with len > pos
        for pos, k in enumerate(active):
            if k == 0:
                break
            cur[:, :k] = flat[cur[:, :k] * nsym + syms[:k, pos]]
        out = np.empty_like(cur)
        out[:, order] = cur
        return out

    def to_char_dfa(self):
        """The same language as a flat `fstbeam.compiler.char_dfa.CharDFA` (256 byte columns,
        byte 0 never a transition), for the checks that pair it with the hard automaton."""
        from ..char_dfa import CharDFA

        nxt = self.delta[:, self.sym_of_byte.astype(np.int64)].astype(np.int32)
        nxt[:, 0] = -1
        return CharDFA(nxt, np.asarray(self.final, bool), self.start)

    def class_defaults(self) -> np.ndarray:
        """int32 ``[Q, 4]``: the state a token of class c reaches if none of its bytes is a
        literal byte (first and last byte replaced by the class's representative symbols)."""
        first = [self.nonword_sym if c & 2 else self.word_sym for c in range(N_CLASSES)]
        last = [self.nonword_sym if c & 1 else self.word_sym for c in range(N_CLASSES)]
        return self.delta[self.delta[:, first], last].astype(np.int32)  # [Q, 4]: both bytes at once


def _symbols(lit: bytes, fold: bool) -> tuple[list[int], np.ndarray, int, int]:
    alphabet = sorted(set(lit))
    word_sym, nonword_sym = len(alphabet), len(alphabet) + 1
    sym_of_byte = np.where(IS_WORD_BYTE, word_sym, nonword_sym).astype(np.int16)
    sym_of_byte[alphabet] = np.arange(len(alphabet))
    if fold:  # the literal is lowercased; its capitals share the symbol
        lower = [(b, i) for i, b in enumerate(alphabet) if 0x61 <= b <= 0x7A]
        if lower:
            sym_of_byte[[b - 32 for b, _ in lower]] = [i for _, i in lower]
    return alphabet, sym_of_byte, word_sym, nonword_sym


def _minimize(delta: np.ndarray, labels: list) -> tuple[np.ndarray, np.ndarray]:
    """Moore partition refinement starting from ``labels``; returns (new delta, old->new map).
    Blocks are numbered by their first state, so state 0 stays state 0."""
    if delta.size <= _SMALL_ROWS:
        return _minimize_small(delta, labels)
    block = _renumber(labels)
    while True:
        new = _renumber_rows(np.column_stack([block, block[delta]]))
        if new.max() == block.max():
            break
        block = new
    _, rep = np.unique(block, return_index=True)  # first state of each block
    return block[delta[rep]].astype(np.int32), block


def _minimize_small(delta: np.ndarray, labels: list) -> tuple[np.ndarray, np.ndarray]:
    """`_minimize` in plain Python: a phrase's few dozen states cost less than numpy's calls."""
    rows = delta.tolist()
    seen: dict = {}
    block = [seen.setdefault(k, len(seen)) for k in labels]
    count = len(seen)
    while True:
        seen = {}
        new = [seen.setdefault((b, *[block[t] for t in row]), len(seen)) for b, row in zip(block, rows)]
        if len(seen) == count:  # refinement only splits blocks: the same count is the same partition
            break
        block, count = new, len(seen)
    if count == len(rows):  # already minimal (most phrases): every state is its own block, in order
        return delta.astype(np.int32), np.arange(count, dtype=np.int64)
    rep: dict = {}
    for q, b in enumerate(block):
        rep.setdefault(b, q)  # first state of each block (blocks are numbered in that order)
    out = np.array([[block[t] for t in rows[q]] for q in rep.values()], dtype=np.int32).reshape(count, delta.shape[1])
    return out, np.array(block, dtype=np.int64)


def _renumber_rows(rows: np.ndarray) -> np.ndarray:
    """Block id of each row, blocks numbered in order of their first row (as ``_renumber``)."""
    if rows.size <= _SMALL_ROWS:  # a dict of tuples beats np.unique(axis=0) ~10x on small tables
        return _renumber(map(tuple, rows.tolist()))
    _, first, inv = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inv.reshape(-1)]


_SMALL_ROWS = 1 << 16


def _renumber(keys) -> np.ndarray:
    seen: dict = {}
    return np.array([seen.setdefault(k, len(seen)) for k in keys], dtype=np.int64)


def phrase_char_dfa(lit: bytes, *, word_boundary: bool = True, case_sensitive: bool = True, kind: Kind = "phrase") -> PhraseDFA:
    """Minimal DFA over ``lit``'s symbols recognising outputs that contain ``lit`` (``phrase``) or
    that do not (``avoid``).

    States before minimization are ``(S, prev_word, pending)`` plus an absorbing MET state: ``S``
    holds the lengths j of every partial match (the last j bytes equal ``lit[:j]`` with a boundary
    before them), ``prev_word`` whether the last byte was a word byte (the start of the output is
    a boundary), ``pending`` whether a full match ends at the last byte and waits for a right
    boundary. Minimization keeps (MET, pending, progress) apart, so progress is well defined.
    """
    fold = not case_sensitive
    if fold:
        lit = lit.lower()
    m = len(lit)
    need_left, need_right = boundary_needs(lit, word_boundary)
    alphabet, sym_of_byte, word_sym, nonword_sym = _symbols(lit, fold)
    sym_byte = [*alphabet, None, None]
    sym_word = [bool(IS_WORD_BYTE[b]) for b in alphabet] + [True, False]
    nsym = len(sym_byte)

    MET = ("met",)

    def step(st, s):
        if st is MET:
            return MET
        partial, prev_word, pending = st
        c, w = sym_byte[s], sym_word[s]
        if pending and not w:
            return MET
        grown, done = set(), False
        if c is not None:
            for j in partial:
                if lit[j] == c:
                    if j + 1 == m:
                        done = True
                    else:
                        grown.add(j + 1)
            if lit[0] == c and not (need_left and prev_word):
                if m == 1:
                    done = True
                else:
                    grown.add(1)
        if done and not need_right:
            return MET
        return (frozenset(grown), w if need_left else False, done)

    start = (frozenset(), False, False)
    ids = {start: 0}
    states = [start]
    rows: list[list[int]] = []
    todo = deque([start])
    sym_of = {b: i for i, b in enumerate(alphabet)}
    lit_sym = [sym_of[b] for b in lit]  # (Python: no numpy scalar per byte)

    def state_id(nxt) -> int:
        if nxt not in ids:
            ids[nxt] = len(states)
            states.append(nxt)
            todo.append(nxt)
        return ids[nxt]

    while todo:
        st = todo.popleft()
        # A symbol that extends no partial match and starts none acts like the representative of
        # its word class: compute those two, then only the few symbols that matter (linear total).
        # (Python lists: a phrase has ~20 symbols, where each numpy call costs more than the row.)
        w_next, nw_next = state_id(step(st, word_sym)), state_id(step(st, nonword_sym))
        row = [w_next if w else nw_next for w in sym_word]
        if st is not MET:
            for s in {lit_sym[j] for j in st[0]} | {lit_sym[0]}:
                row[s] = state_id(step(st, s))
        rows.append(row)
    delta = np.array(rows, dtype=np.int64).reshape(len(rows), nsym)
    is_met = np.array([st is MET for st in states])
    is_pending = np.array([st is not MET and st[2] for st in states])
    progress = np.array([m if (st is MET or st[2]) else max(st[0], default=0) for st in states], dtype=np.int32)

    labels = list(zip(is_met.tolist(), is_pending.tolist(), progress.tolist()))
    mdelta, block = _minimize(delta, labels)
    nb = mdelta.shape[0]
    met_b = np.zeros(nb, dtype=bool)
    met_b[block[is_met]] = True
    pend_b = np.zeros(nb, dtype=bool)
    pend_b[block[is_pending]] = True
    prog_b = np.zeros(nb, dtype=np.int32)
    prog_b[block] = progress
    if kind == "phrase":
        final, forbidden = met_b | pend_b, np.zeros(nb, dtype=bool)
    elif kind == "avoid":
        final, forbidden = ~(met_b | pend_b), met_b
    else:
        raise ValueError(f"phrase_char_dfa builds 'phrase' or 'avoid' automata, not {kind!r}")
    return PhraseDFA(_ro(mdelta), _ro(sym_of_byte), 0, _ro(final), _ro(forbidden), _ro(prog_b), word_sym, nonword_sym)


def prefix_char_dfa(lit: bytes) -> PhraseDFA:
    """States 0..m = bytes of the prefix consumed (m: free, absorbing), m+1 = left the prefix."""
    m = len(lit)
    alphabet, sym_of_byte, word_sym, nonword_sym = _symbols(lit, False)
    nsym = len(alphabet) + 2
    dead = m + 1
    delta = np.full((m + 2, nsym), dead, dtype=np.int32)
    for i, b in enumerate(lit):
        delta[i, alphabet.index(b)] = i + 1
    delta[m, :] = m
    final = np.zeros(m + 2, dtype=bool)
    final[m] = True
    forbidden = np.zeros(m + 2, dtype=bool)
    forbidden[dead] = True
    progress = np.minimum(np.arange(m + 2), m).astype(np.int32)
    progress[dead] = 0
    return PhraseDFA(_ro(delta), _ro(sym_of_byte), 0, _ro(final), _ro(forbidden), _ro(progress), word_sym, nonword_sym)
