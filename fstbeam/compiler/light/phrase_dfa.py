"""Small exact byte DFAs for one phrase, avoid phrase or prefix (the first step of a light compile).

Our own subset construction over byte classes, minimized; the tests check it against pynini
acceptors. `PhraseDFA.to_char_dfa` gives the flat 256-column form the satisfiability checks walk.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...contract.layout import N_CLASSES
from ...contract.light import Kind
from ...fst.text import IS_WORD_BYTE, boundary_needs
from .arrays import read_only

__all__ = ["PhraseDFA", "phrase_char_dfa", "prefix_char_dfa"]


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


_IS_WORD = IS_WORD_BYTE.tolist()


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


def phrase_char_dfa(lit: bytes, *, word_boundary: bool = True, case_sensitive: bool = True, kind: Kind = "phrase") -> PhraseDFA:
    """Minimal DFA over ``lit``'s symbols recognising outputs that contain ``lit`` (``phrase``) or
    that do not (``avoid``); see `_contains_core`."""
    mdelta, sym_of_byte, met_b, pend_b, prog_b, word_sym, nonword_sym = _contains_core(
        bytes(lit), bool(word_boundary), bool(case_sensitive))
    if kind == "phrase":
        final, forbidden = met_b | pend_b, np.zeros(len(met_b), dtype=bool)
    elif kind == "avoid":
        final, forbidden = ~(met_b | pend_b), met_b
    else:
        raise ValueError(f"phrase_char_dfa builds 'phrase' or 'avoid' automata, not {kind!r}")
    return PhraseDFA(mdelta, sym_of_byte, 0, read_only(final), read_only(forbidden), prog_b, word_sym, nonword_sym)


@functools.lru_cache(maxsize=16)  # a request's avoid phrase is built for its check, then compiled
def _contains_core(lit: bytes, word_boundary: bool, case_sensitive: bool):
    """Minimal DFA over ``lit``'s symbols recognising outputs that contain ``lit`` (``phrase``) or
    that do not (``avoid``), built in time linear in ``len(lit)`` times its distinct bytes.

    The set of partial matches (the last j bytes equal ``lit[:j]`` with a boundary before them)
    is determined by the longest one, j: the others are the borders of ``lit[:j]`` whose preceding
    byte *inside* ``lit`` is a non-word byte (where a left boundary is needed), Knuth-Morris-Pratt
    style. So the states are j = 0..m-1 (j = 0 twice: after a word byte or not, which decides
    whether a match may start), PENDING (j = m: a full match waits for its right boundary) and an
    absorbing MET; a subset construction over the sets themselves was quadratic in ``len(lit)``.
    Minimization keeps (MET, pending, progress) apart, so progress is well defined.
    """
    fold = not case_sensitive
    if fold:
        lit = lit.lower()
    m = len(lit)
    need_left, need_right = boundary_needs(lit, word_boundary)
    alphabet, sym_of_byte, word_sym, nonword_sym = _symbols(lit, fold)
    nsym = len(alphabet) + 2
    sw = [_IS_WORD[b] for b in alphabet] + [True, False]  # is each symbol a word byte
    at = {b: i for i, b in enumerate(alphabet)}
    sym = [at[b] for b in lit]  # (folded: the literal is lowercase)
    word = [_IS_WORD[b] for b in lit]
    # vfail[j]: the longest valid proper border of lit[:j] (0: none). The validity of a border k
    # of lit[:j] is lit[j-k-1] (a non-word byte, where needed); it is the same for lit[:fail[j]].
    pi = [0] * m
    k = 0
    for i in range(1, m):
        while k and sym[i] != sym[k]:
            k = pi[k - 1]
        if sym[i] == sym[k]:
            k += 1
        pi[i] = k
    vfail = [0] * (m + 1)
    for j in range(1, m + 1):
        f = pi[j - 1]
        vfail[j] = f if f == 0 or not need_left or not word[j - f - 1] else vfail[f]
    # K[r]: the longest partial match after each symbol, from row r (0: no match and the last
    # byte was not a word byte, 1: no match after a word byte, j + 1: longest match j >= 1).
    rows = [[0] * nsym, [0] * nsym]  # Python lists: a numpy call per row cost more than the row
    rows[0][sym[0]] = 1
    if not need_left:
        rows[1][sym[0]] = 1
    for j in range(1, m + 1):
        f = vfail[j]
        row = rows[f + 1 if f else (1 if need_left and word[j - 1] else 0)].copy()
        if j < m:
            row[sym[j]] = j + 1
        rows.append(row)
    # States before minimization: the rows of K (row j + 1: longest match j >= 1; row m + 1 is
    # PENDING), then MET. Rows without a use are dropped: "no match after a word byte" without a
    # left boundary to need, PENDING without a right one; state 0 stays the start. Plain lists:
    # a phrase's few hundred cells cost less than numpy's calls (issue 26).
    MET, PEND = m + 2, m + 1
    keep = [True, need_left] + [True] * (m - 1) + [need_right, True]
    new_id, n = [], 0
    for k in keep:
        new_id.append(n)
        n += k
    on_zero = [new_id[1] if w and need_left else 0 for w in sw]  # no match after the symbol
    on_full = new_id[PEND] if need_right else new_id[MET]
    to = [0] + [new_id[k + 1] for k in range(1, m)] + [on_full]  # match length k >= 1 -> state (never 0)
    delta = []
    for r, row in enumerate(rows):
        if not keep[r]:
            continue
        out = [to[k] or z for k, z in zip(row, on_zero)]
        if r == PEND:
            out = [t if sw[c] else new_id[MET] for c, t in enumerate(out)]
        delta.append(out)
    delta.append([new_id[MET]] * nsym)
    progress = [0, 0, *range(1, m + 1), m]
    # Already minimal: every state but the two "no match" rows has its own progress (and MET /
    # PENDING their own flags), and those two differ on the literal's first byte (one may start
    # a match, the other may not). Partition refinement would only confirm it (a third of the
    # time of a 10,000-byte phrase); the tests check the result against the boundary rule.
    mdelta = np.array(delta, dtype=np.int32)
    prog_b = np.array([p for p, k in zip(progress, keep) if k], dtype=np.int32)
    met_b = np.zeros(n, dtype=bool)
    met_b[new_id[MET]] = True
    pend_b = np.zeros(n, dtype=bool)
    if need_right:
        pend_b[new_id[PEND]] = True
    return read_only(mdelta), read_only(sym_of_byte), read_only(met_b), read_only(pend_b), read_only(prog_b), word_sym, nonword_sym


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
    return PhraseDFA(read_only(delta), read_only(sym_of_byte), 0, read_only(final), read_only(forbidden), read_only(progress),
                     word_sym, nonword_sym)
