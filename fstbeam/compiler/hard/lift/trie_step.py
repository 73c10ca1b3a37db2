"""One breadth-first step of the lift's search over (trie node, character state) pairs
(`token_fsa.lift`, `shared_walks`), a slice of candidates at a time, and the search's frontier
kept in pieces."""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..array_ops import concat_ranges, narrow, step_slices
from ..token_trie import TokenTrie

# A step's candidate (pair, child) extensions taken this many at a time (`Stepper`): each slice's
# temporaries are some ten int64 columns of its candidates.
STEP_SLICE_CANDIDATES = 1 << 20
# Pairs per piece of the search's frontier (`coalesced`).
FRONT_PIECE = 1 << 20

# Per trie, built once (`Stepper`): the sorted (parent, byte) key of every non-root node, and
# the number of children of every node.
_TRIE_AUX: weakref.WeakKeyDictionary[TokenTrie, tuple[np.ndarray, np.ndarray]] = weakref.WeakKeyDictionary()


def coalesced(pieces: list[tuple[np.ndarray, ...]]) -> list[tuple[np.ndarray, ...]]:
    """The non-empty ``pieces`` (columns of a frontier), in order, runs of small ones joined
    into pieces of about `FRONT_PIECE` pairs (each piece splits in two per step: unjoined,
    their number would double each level)."""
    out: list[tuple[np.ndarray, ...]] = []
    run: list[tuple[np.ndarray, ...]] = []
    size = 0
    for p in pieces + [None]:  # type: ignore[list-item]
        if p is not None and not len(p[0]):
            continue
        if run and (p is None or size + len(p[0]) > FRONT_PIECE):
            out.append(run[0] if len(run) == 1 else tuple(np.concatenate(c) for c in zip(*run)))
            run, size = [], 0
        if p is not None:
            run.append(p)
            size += len(p[0])
    return out


class Stepper:
    """One BFS step over (trie node, char state) pairs: every (child, next state) pair.

    A pair can be extended from either side: the node's trie children (checked against the
    DFA row) or the state's DFA arcs (looked up among the node's children). Each pair takes the
    side with fewer candidates: inside words a state has a few arcs while a short token's node
    has dozens of children, and at word starts it is the other way round."""

    def __init__(self, dfa: Any, trie: TokenTrie):  # (a `token_fsa._Arcs`)
        self.dfa = dfa
        self.arc_ptr, self.arc_byte, self.arc_next = dfa.ptr, dfa.byte, dfa.dst
        self.trie = trie
        self.table = dfa.table
        aux = _TRIE_AUX.get(trie)
        if aux is None:
            n_children = trie.child_hi - trie.child_lo
            parent = np.repeat(np.arange(trie.num_nodes), n_children)  # of nodes 1..N-1, in id order
            key = parent * 256 + trie.node_byte[1:]  # sorted: children are id ranges by byte
            aux = _TRIE_AUX[trie] = (key, n_children)
        self.child_key, self.n_children = aux
        # A child looked up through the dense table is one gather; through an arc, a binary
        # search over every node of the trie: with the table, the trie side is taken unless the
        # node has many times more children than the state has arcs.
        self.trie_weight = 8 if self.table is not None else 1

    def __call__(self, node: np.ndarray, state: np.ndarray, carry: np.ndarray | None = None):
        """(source pair index, child node, next state) of every surviving extension: the pairs
        a slice at a time (`step_slices`: the candidates of a wide frontier, six int64 columns
        each, were 0.7 GB at once), the trie side's extensions before the arcs' as in one step.
        With ``carry`` (a value per pair): ``carry[source]`` in place of the source index,
        gathered a slice at a time (no index column for the whole step)."""
        cuts = self._cuts(node, state)
        if len(cuts) == 2:
            src, child, nxt = self._step(node, state)
            return (src if carry is None else carry[src]), child, nxt
        # each slice's columns kept int32 where they fit, each output column built and its pieces
        # let go before the next (a wide frontier's three int64 columns and their pieces at once
        # were the lift's peak)
        first: list[list[np.ndarray]] = [[], [], []]
        second: list[list[np.ndarray]] = [[], [], []]
        for one, two in self._slices(node, state, carry, cuts):
            for k in range(3):
                first[k].append(one[k])
                second[k].append(two[k])
            del one, two
        out = []
        for k in range(3):
            out.append(np.concatenate(first[k] + second[k]))
            first[k] = second[k] = []
        return out[0], out[1], out[2]

    def pieces(self, node: np.ndarray, state: np.ndarray, carry: np.ndarray):
        """`__call__`'s result with ``carry`` as ((trie side), (arc side)) per slice, in order,
        never concatenated: (carried value, child node, next state), int32 where they fit."""
        return self._slices(node, state, carry, self._cuts(node, state))

    def _cuts(self, node: np.ndarray, state: np.ndarray) -> np.ndarray:
        cand = self.arc_ptr[state + 1]  # (a bound; built in place: a wide frontier is millions of pairs)
        cand -= self.arc_ptr[state]
        cand += self.n_children[node]
        return step_slices(cand, STEP_SLICE_CANDIDATES)  # (the int64 per pair: not held through the slices)

    def _slices(self, node: np.ndarray, state: np.ndarray, carry: np.ndarray | None, cuts: np.ndarray):
        # (pair index, node and state bounded below 2**31: int32 without `narrow`'s two scans)
        fits = max(len(node), self.trie.num_nodes, self.dfa.num_states) < 2**31
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            one, two = self._step(node[a:b], state[a:b], a)
            if carry is not None:
                one, two = (carry[one[0]], *one[1:]), (carry[two[0]], *two[1:])
            cast = [(x.astype(np.int32) if fits and (k or carry is None) else narrow(x)) for k, x in enumerate(one)]
            cast2 = [(x.astype(np.int32) if fits and (k or carry is None) else narrow(x)) for k, x in enumerate(two)]
            del one, two
            yield tuple(cast), tuple(cast2)

    def _step(self, node: np.ndarray, state: np.ndarray, base: int | None = None):
        """One slice's extensions (with ``base``: as (trie side, arc side), indices from ``base``)."""
        t = self.trie
        n_child, alo = self.n_children[node], self.arc_ptr[state]
        n_arc = self.arc_ptr[state + 1] - alo
        by_trie = n_child <= self.trie_weight * n_arc
        i = np.flatnonzero(by_trie)
        ni = n_child[i]
        rep = np.repeat(i, ni)
        child = np.repeat(t.child_lo[node[i]] - (np.cumsum(ni) - ni), ni)  # (`concat_ranges`, its ends known)
        child += np.arange(len(child))
        if self.table is not None:  # (one gather from the flat table: a third of a 2-D index's time)
            key = state[rep].astype(np.int64)
            key <<= 8
            key |= t.node_byte[child]
            ns = self.table.reshape(-1)[key]
            del key
        else:
            ns = self.dfa.step(state[rep], t.node_byte[child].astype(np.int64))
        keep = ns >= 0
        src1, child1, ns1 = rep[keep], child[keep], ns[keep]
        j = np.flatnonzero(~by_trie)
        if not len(j) and base is None:
            return src1, child1, ns1.astype(np.int64)
        rep = np.repeat(j, n_arc[j])
        arc = concat_ranges(alo[j], alo[j] + n_arc[j])
        key = node[rep].astype(np.int64) * 256 + self.arc_byte[arc]
        pos = np.minimum(np.searchsorted(self.child_key, key), len(self.child_key) - 1)
        found = self.child_key[pos] == key if len(self.child_key) else np.zeros(len(key), bool)
        if base is not None:
            return ((src1 + base, child1, ns1.astype(np.int64)),
                    (rep[found] + base, pos[found] + 1, self.arc_next[arc[found]].astype(np.int64)))
        return (
            np.concatenate([src1, rep[found]]),
            np.concatenate([child1, pos[found] + 1]),
            np.concatenate([ns1, self.arc_next[arc[found]]]),
        )
