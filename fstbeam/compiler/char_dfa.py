"""A deterministic character automaton as flat numpy arrays (the form the lifter walks)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pynini

from ..errors import SpecError
from ..fst.text import IS_WORD_BYTE


@dataclass(frozen=True, eq=False)
class CharDFA:
    next: np.ndarray  # int32 [S, 256]; -1 where there is no transition (byte 0 never has one)
    final: np.ndarray  # bool [S]
    start: int

    @property
    def num_states(self) -> int:
        return len(self.final)

    @cached_property
    def boundary_states(self) -> np.ndarray:
        """bool [S]: the start, and every state entered right after a non-word byte
        (`fstbeam.fst.text`) -- where a word-boundary phrase may begin."""
        out = np.zeros(self.num_states, bool)
        out[self.start] = True
        into = self.next[:, ~IS_WORD_BYTE]
        out[into[into >= 0]] = True
        return out

    @cached_property
    def leaves_on_nonword(self) -> np.ndarray:
        """bool [S]: the state has a transition on some non-word byte."""
        return (self.next[:, ~IS_WORD_BYTE] >= 0).any(axis=1)

    def run(self, data: bytes, state: int | None = None) -> int:
        """State after reading ``data`` (-1 if it dies)."""
        q = self.start if state is None else state
        for b in data:
            if q < 0:
                return -1
            q = int(self.next[q, b])
        return q

    def accepts(self, data: bytes) -> bool:
        q = self.run(data)
        return q >= 0 and bool(self.final[q])


def fst_to_dfa(fst: pynini.Fst) -> CharDFA:
    """Flatten a deterministic, epsilon-free acceptor over byte labels (1..255)."""
    if fst.start() == pynini.NO_STATE_ID or fst.num_states() == 0:
        return CharDFA(np.full((1, 256), -1, np.int32), np.zeros(1, bool), 0)
    n = fst.num_states()
    nxt = np.full((n, 256), -1, dtype=np.int32)
    final = np.zeros(n, dtype=bool)
    zero = pynini.Weight.zero(fst.weight_type())
    for s in fst.states():
        final[s] = fst.final(s) != zero
        for arc in fst.arcs(s):
            if not 1 <= arc.ilabel <= 255:
                raise SpecError(f"automaton has label {arc.ilabel} on state {s}: character automata use byte labels 1..255")
            if nxt[s, arc.ilabel] != -1:
                raise SpecError(f"automaton is not deterministic at state {s}, byte {arc.ilabel:#04x}: optimize it first")
            nxt[s, arc.ilabel] = arc.nextstate
    return CharDFA(nxt, final, fst.start())


def arcs_to_dfa(final: np.ndarray, src: np.ndarray, byte: np.ndarray, dst: np.ndarray, start: int) -> CharDFA:
    """A DFA given as arc arrays, flattened."""
    nxt = np.full((len(final), 256), -1, dtype=np.int32)
    nxt[src, byte] = dst
    return CharDFA(nxt, np.asarray(final, bool).copy(), int(start))


def text_to_dfa(text) -> CharDFA:
    """Flatten a `fstbeam.fst.wordlist.text_dfa.TextDFA` (arc arrays, start 0)."""
    return arcs_to_dfa(text.final, text.src, text.byte, text.dst, 0)
