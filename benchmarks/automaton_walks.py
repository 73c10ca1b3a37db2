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

from fstbeam.compiler.hard.array_ops import concat_ranges

__all__ = ["distances_to_final", "random_texts"]

UNREACHABLE = np.iinfo(np.int64).max


def distances_to_final(next_state: np.ndarray, final: np.ndarray) -> np.ndarray:
    """Fewest bytes from each state to a final state (`UNREACHABLE` where none is reachable)."""
    S = next_state.shape[0]
    src, byte = np.nonzero(next_state >= 0)
    dst = next_state[src, byte].astype(np.int64)
    order = np.argsort(dst, kind="stable")
    preds, ptr = src[order], np.searchsorted(dst[order], np.arange(S + 1))
    dist = np.full(S, UNREACHABLE, np.int64)
    front = np.flatnonzero(final)
    dist[front] = 0
    level = 0
    while len(front):
        level += 1
        lo, hi = ptr[front], ptr[front + 1]
        cand = np.unique(preds[concat_ranges(lo, hi)])
        front = cand[dist[cand] == UNREACHABLE]
        dist[front] = level
    return dist


def random_texts(dfa: Any, n: int, *, seed: int = 0, stop: float = 0.3, budget: int = 300) -> list[bytes]:
    """``n`` random texts ``dfa`` accepts (none where its language is empty)."""
    nxt, final = np.asarray(dfa.next), np.asarray(dfa.final, bool)
    dist = distances_to_final(nxt, final)
    if dist[dfa.start] == UNREACHABLE:
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
