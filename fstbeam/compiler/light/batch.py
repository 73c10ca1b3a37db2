"""Many must-include phrases of one request compiled together: one numpy pass, not one per phrase.

`automaton.compile_phrase` lifts one phrase in ~40 numpy calls; a request's ten short phrases
then cost ten times that fixed overhead (~0.8 ms a phrase, issue 26). Here the phrases' small
character DFAs are laid side by side as one block-diagonal automaton (phrase i's states are
``qoff[i] .. qoff[i+1]-1``), every (state, candidate token) pair of every phrase is run in one
matrix, and the reachability and distance searches run once over the union of the phrases' token
graphs (no edge joins two phrases, so each phrase's part of the result is its own). Only the
per-phrase Python work (the DFA's construction and the candidate queries) stays per phrase.

The result is exactly `compile_phrase`'s, array for array (tests/compiler/test_light_batch.py).
Phrases the batch does not cover (a long phrase whose [states x candidates] matrix is large, one
where some state is unreachable, one that can never be met) go through `compile_phrase` itself.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...contract.layout import INF_DIST, N_CLASSES
from ...contract.light import LightAutomaton
from .arrays import ramp
from .automaton import as_index, compile_phrase, literal
from .candidates import phrase_candidates
from .lift import DENSE_ENTRIES
from .phrase_dfa import PhraseDFA, phrase_char_dfa
from .token_index import TokenIndex

__all__ = ["compile_phrases"]


def compile_phrases(texts: Sequence[str], index: TokenIndex, *, word_boundary: bool = True,
                    case_sensitive: bool = True) -> list[LightAutomaton]:
    """``[compile_phrase(t, index, word_boundary=..., case_sensitive=...) for t in texts]``."""
    index = as_index(index)
    if not texts:
        return []
    lits = [literal("phrase", t, "") for t in texts]
    dfas = [phrase_char_dfa(lit, word_boundary=word_boundary, case_sensitive=case_sensitive) for lit in lits]
    cands = phrase_candidates(lits, index, word_boundary=word_boundary, case_sensitive=case_sensitive)
    small = [i for i, (d, c) in enumerate(zip(dfas, cands)) if d.n_states * len(c) <= DENSE_ENTRIES]
    out: list[LightAutomaton | None] = [None] * len(texts)
    if small:
        lifted = _lift_together([texts[i] for i in small], [lits[i] for i in small], [dfas[i] for i in small],
                                [cands[i] for i in small], index, word_boundary, case_sensitive)
        for i, a in zip(small, lifted):
            out[i] = a
    return [a if a is not None else compile_phrase(t, index, word_boundary=word_boundary, case_sensitive=case_sensitive)
            for t, a in zip(texts, out)]


def _lift_together(texts, lits, dfas: list[PhraseDFA], cands: list[np.ndarray], index: TokenIndex,
                   word_boundary: bool, case_sensitive: bool) -> list[LightAutomaton | None]:
    """`automaton.lift_light` of every phrase at once (None for a phrase left to `compile_phrase`)."""
    P, V = len(dfas), index.width
    nq = np.array([d.n_states for d in dfas], np.int64)
    nc = np.array([len(c) for c in cands], np.int64)
    qoff = np.zeros(P + 1, np.int64)
    np.cumsum(nq, out=qoff[1:])
    coff = np.zeros(P + 1, np.int64)
    np.cumsum(nc, out=coff[1:])
    G = int(qoff[-1])
    phrase_of = np.repeat(np.arange(P), nq)  # [G]: the phrase of each global state
    # One step table over global states; the last column keeps the state (past a token's end).
    S = max(d.delta.shape[1] for d in dfas) + 1
    step = np.zeros((G, S), np.int64)
    for i, d in enumerate(dfas):
        step[qoff[i]:qoff[i + 1], :d.delta.shape[1]] = d.delta
    step += qoff[phrase_of][:, None]
    step[:, S - 1] = np.arange(G)
    default = _class_defaults(step, dfas, phrase_of)  # [G, 4] global states

    # Every (candidate, state) pair of every phrase, longest candidates first: at byte position
    # `pos` only the pairs of tokens longer than `pos` move, a prefix of the pair arrays.
    all_c = np.concatenate(cands) if P else np.zeros(0, np.int64)
    cand_phrase = np.repeat(np.arange(P), nc)
    lens = index.lengths[all_c].astype(np.int64)
    by_len = np.argsort(-lens, kind="stable")
    per = nq[cand_phrase[by_len]]
    gc = np.repeat(by_len, per)
    gq = np.repeat(qoff[cand_phrase[by_len]], per) + ramp(per)
    width = int(lens.max()) if len(lens) else 0
    sym_tab = np.stack([d.sym_of_byte for d in dfas]).astype(np.int64)  # [P, 256]
    syms = np.ascontiguousarray(sym_tab[cand_phrase[:, None], index.padded[all_c, :width]].T)  # [width, C]
    flat = (step * S).ravel()
    cur = gq * S
    moving = np.searchsorted(-lens[gc], -np.arange(width), side="left")  # pairs with len > pos
    for pos in range(width):
        k = int(moving[pos])
        cur[:k] = flat[cur[:k] + syms[pos][gc[:k]]]
    cur //= S
    cls = index.token_class[all_c].astype(np.int64)
    differs = np.flatnonzero(cur != default[gq, cls[gc]])
    differs = differs[np.lexsort((gc[differs], gq[differs]))]  # by state, then candidate
    eq, ek, en = gq[differs], gc[differs], cur[differs]

    # Token-level graph (exceptions and the class defaults of non-empty classes) over all phrases.
    nonempty = index.nonempty_classes
    forbidden = np.concatenate([d.forbidden for d in dfas])
    src = np.concatenate([eq, np.repeat(np.arange(G, dtype=np.int64), len(nonempty))])
    dst = np.concatenate([en, default[:, nonempty].ravel()])
    ok = ~forbidden[dst]
    src, dst = src[ok], dst[ok]
    seed = np.zeros(G, bool)
    seed[qoff[:-1] + np.array([d.start for d in dfas], np.int64)] = True
    keep = _levels(G, src, dst, seed) < INF_DIST
    keep &= ~forbidden
    final = np.concatenate([d.final for d in dfas])
    whole = np.logical_and.reduceat(keep, qoff[:-1]) & np.logical_or.reduceat(keep & final, qoff[:-1]) \
        if G else np.zeros(P, bool)
    dist = _levels(G, dst, src, final)  # every phrase kept whole: its own distances

    progress = np.concatenate([d.progress for d in dfas]).astype(np.int32)
    if (progress[default] > progress[:, None]).any():
        raise AssertionError("internal error: a class default raises progress in a phrase")
    adv = (en >= 0) & (progress[np.maximum(en, 0)] > progress[eq])  # only exceptions can advance
    adv_cum = np.zeros(G + 1, np.int64)
    np.cumsum(np.bincount(eq[adv], minlength=G), out=adv_cum[1:])
    adv_tokens = all_c[ek[adv]].astype(np.int32)
    local = qoff[phrase_of]
    exc_key = (eq - local[eq]) * V + all_c[ek]
    exc_next = (en - local[en]).astype(np.int32)
    default_next = (default - local[:, None]).astype(np.int32)
    char_state = (np.arange(G) - local).astype(np.int32)
    span = nq + 1  # phrase i's pointers: adv_cum[qoff[i] .. qoff[i + 1]], from 0, at qoff[i] + i
    at = np.arange(G + P) - np.repeat(np.arange(P), span)
    adv_ptr = adv_cum[at] - np.repeat(adv_cum[qoff[:-1]], span)
    # Each automaton's arrays are read-only views of these (a request's few KB stay together).
    for a in (final, progress, default_next, exc_key, exc_next, adv_ptr, adv_tokens, char_state):
        a.setflags(write=False)
    e_at = np.searchsorted(eq, qoff).tolist()
    q_at, a_at = qoff.tolist(), adv_cum[qoff].tolist()

    out: list[LightAutomaton | None] = []
    for i in range(P):
        if not whole[i]:
            out.append(None)  # a state no token reaches, or never met: compile_phrase handles it
            continue
        lo, hi, e0, e1 = q_at[i], q_at[i + 1], e_at[i], e_at[i + 1]
        text = texts[i]
        out.append(LightAutomaton(
            kind="phrase", text=text if isinstance(text, str) else text.decode("utf-8", "replace"),
            literal=lits[i], width=V, start=int(dfas[i].start),
            final=final[lo:hi], progress=progress[lo:hi], default_next=default_next[lo:hi],
            exc_key=exc_key[e0:e1], exc_next=exc_next[e0:e1], adv_ptr=adv_ptr[lo + i:hi + i + 1],
            adv_tokens=adv_tokens[a_at[i]:a_at[i + 1]],
            word_boundary=word_boundary, case_sensitive=case_sensitive, source="", fingerprint=index.fingerprint,
            token_class=index.token_class, char_dfa=dfas[i], char_state=char_state[lo:hi], dist=dist[lo:hi],
        ))
    return out


def _class_defaults(step: np.ndarray, dfas: list[PhraseDFA], phrase_of: np.ndarray) -> np.ndarray:
    """int64 [G, 4]: `PhraseDFA.class_defaults` of every phrase, on the global step table."""
    word = np.array([d.word_sym for d in dfas], np.int64)[phrase_of]
    nonword = np.array([d.nonword_sym for d in dfas], np.int64)[phrase_of]
    rows = np.arange(len(phrase_of))
    out = np.empty((len(phrase_of), N_CLASSES), np.int64)
    for c in range(N_CLASSES):
        first, last = (nonword if c & 2 else word), (nonword if c & 1 else word)
        out[:, c] = step[step[rows, first], last]
    return out


def _levels(n: int, src: np.ndarray, dst: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """int64 [n], read-only: fewest edges ``src -> dst`` from a seed to each state (INF_DIST:
    none). Level by level over the edge arrays: the union of a request's phrases has thousands
    of edges and as many levels as its longest phrase has bytes, where a Python search walked
    every edge (`contract.light.distances_from_edges` searches the same way, backwards)."""
    dist = np.full(n, INF_DIST, np.int64)
    frontier, d = seeds.copy(), 0
    while frontier.any():
        dist[frontier] = d
        d += 1
        nxt = np.zeros(n, bool)
        nxt[dst[frontier[src]]] = True
        frontier = nxt & (dist == INF_DIST)
    dist.setflags(write=False)
    return dist
