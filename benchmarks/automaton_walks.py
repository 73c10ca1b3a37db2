"""Random accepted texts of a byte DFA (`fstbeam.compiler.char_dfa.CharDFA`): the over-acceptance
oracle of structured_oracle.py (`--samples`), whose texts an independent validator then checks.

Each walk starts at the start state, takes a uniformly random byte among the state's arcs, and
at a final state stops with probability ``stop``. Past ``budget`` bytes it takes only arcs that
bring it nearer a final state (distances by a backward breadth-first search), so every walk ends.
"""
from __future__ import annotations

import random
from typing import Any

import numpy as np

from fstbeam.compiler.hard.array_ops import unique
from fstbeam.contract.layout import INF_DIST
from fstbeam.contract.light import distances_from_edges

__all__ = ["distances_to_final", "random_texts"]


def distances_to_final(next_state: np.ndarray, final: np.ndarray) -> np.ndarray:
    """Fewest bytes from each state to a final state (`INF_DIST` where none is reachable):
    `distances_from_edges` over the distinct (state, next state) edges (a string's ~200 arcs
    to one next state are one edge)."""
    src, byte = np.nonzero(next_state >= 0)
    edges = unique(src.astype(np.int64) * len(final) + next_state[src, byte])
    return distances_from_edges(len(final), edges // len(final), edges % len(final), np.asarray(final, bool))


def random_texts(dfa: Any, n: int, *, seed: int = 0, stop: float = 0.3, budget: int = 300) -> list[bytes]:
    """``n`` random texts ``dfa`` accepts (none where its language is empty)."""
    nxt, final = np.asarray(dfa.next), np.asarray(dfa.final, bool)
    dist = distances_to_final(nxt, final)
    if dist[dfa.start] >= INF_DIST:
        return []
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        q, text = dfa.start, bytearray()
        while True:
            labels = np.flatnonzero(nxt[q] >= 0)
            if final[q] and (not len(labels) or len(text) >= budget or rng.random() < stop):
                break
            if len(text) >= budget:  # (nearer a final state with every byte from here)
                labels = labels[dist[nxt[q, labels]] < dist[q]]
            b = int(labels[rng.randrange(len(labels))])
            text.append(b)
            q = int(nxt[q, b])
        out.append(bytes(text))
    return out
