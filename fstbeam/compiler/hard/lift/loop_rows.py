"""Rows of loops taken as one region where the row recurs (`shared_walks.share`).

A pattern of counted words (``^(?:\\S+\\s+){0,9}\\S+$``) is a row of loops: each word and each gap
is a strongly connected component of its own, entered from the one before. Region by region
(`shared_walks.regions`), every token that crosses into a later word leaves its region, so it is
an exit, absolute in every copy: on Gemma 3 about 150,000 tokens per word position, 1.5 million
token arcs per copy of a 10-word string, 15 million for an array of 10 such items. Taken as one
region, the row is one shape: a token that ends in a later word ends inside it, and is stored once
for every copy (relative to the copy's first state, as the interiors of docs/tables.md, "Shared
interiors"). But its interior holds every token of every position, where the regions store a
word's interior once for all positions and only the crossing tokens per copy: a row is merged
where its copies times the share of the tokenizer's tokens that hold one of its joining bytes (a
space between words: most of a SentencePiece vocabulary's) reach 1 (`pays`).

A row is a weakly connected group of cyclic regions joined by arcs on bytes other than ``"`` and
``\\`` (so never a string's interior with the structure around it), of at most `MAX_ROW` states,
with one region from which every other is reached (its canonical numbering starts there,
`shared_walks.canonical_shape`) and a state with `shared_walks.MIN_INSIDE_BYTES` bytes or more
(a region worth a walk of its own). Any partition of the states is exact for the walks: an arc to
another region is an exit."""
from __future__ import annotations

import weakref
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..array_ops import concat_ranges, run_starts, unique

if TYPE_CHECKING:
    from ..token_trie import TokenTrie

# States of a row at most: its canonical numbering is Python per state (once per layout), and its
# walk memo holds every position's tokens (a 10-word row: about 400 states, 2.7 million token ends).
MAX_ROW = 1024
# A state that leaves its region for another of its row on at most this many ASCII bytes joins the
# row on them (`candidates`).
MAX_JOIN_BYTES = 16
_QUOTE, _BACKSLASH = 0x22, 0x5C


def candidates(num_states: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray, comp: np.ndarray,
               wide: np.ndarray) -> tuple[np.ndarray, dict[int, frozenset[int]]] | None:
    """(row id of every region, -1 for none; the bytes that join each row's regions), or None
    where there is no row. ``comp``: the regions; ``wide``: bool per state,
    `shared_walks.MIN_INSIDE_BYTES` arcs or more."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    n = int(comp.max()) + 1 if len(comp) else 0
    size = np.bincount(comp, minlength=n)
    cs, cd = comp[src], comp[dst]
    cyclic = size > 1
    cyclic[cs[src == dst]] = True
    join = (cs != cd) & cyclic[cs] & cyclic[cd] & (byte != _QUOTE) & (byte != _BACKSLASH)
    if not join.any():
        return None
    edges = unique(cs[join].astype(np.int64) * n + cd[join])
    e_src, e_dst = edges // n, edges % n
    graph = csr_matrix((np.ones(len(edges), np.int8), (e_src, e_dst)), shape=(n, n))
    _, group = connected_components(graph, directed=False)
    touched = np.zeros(n, bool)
    touched[e_src] = touched[e_dst] = True
    members = np.bincount(group[touched], minlength=int(group.max()) + 1)
    states = np.bincount(group, weights=size * touched, minlength=len(members))
    has_wide = np.zeros(len(members), bool)
    has_wide[group[comp[wide]]] = True
    has_wide &= members >= 2
    indeg = np.bincount(e_dst, minlength=n)
    row = np.full(n, -1, np.int64)
    # the regions of each group that may be a row, grouped once (not a scan of every region per group)
    fits = has_wide & (states <= MAX_ROW)
    tc = np.flatnonzero(touched & fits[group])
    if not len(tc):
        return None
    tc = tc[np.argsort(group[tc], kind="stable")]
    cuts = [*np.flatnonzero(run_starts(group[tc])).tolist(), len(tc)]
    for a, b in zip(cuts[:-1], cuts[1:]):
        comps, g = tc[a:b], int(group[tc[a]])
        sources = comps[indeg[comps] == 0]
        if len(sources) != 1:  # (no region reaches every other one)
            continue
        if len(breadth_first_order(graph, int(sources[0]), directed=True, return_predecessors=False)) != len(comps):
            continue
        row[comps] = g
    if not (row >= 0).any():
        return None
    # a row's joining bytes: the ASCII bytes on which a state leaves its region for a few bytes
    # (a word on a space), not those of a state that leaves on most bytes (a gap into the next
    # word: the tokens that start there are the next word's blocks, walked from inside it)
    in_row = np.flatnonzero(join & (row[cs] >= 0) & (byte < 0x80))
    s_in = src[in_row].astype(np.int64)
    few = np.bincount(s_in, minlength=num_states)[s_in] <= MAX_JOIN_BYTES
    pairs = unique(row[cs[in_row[few]]] * 256 + byte[in_row[few]])
    joins: dict[int, set[int]] = {int(g): set() for g in unique(row[row >= 0])}
    for g, b in zip((pairs // 256).tolist(), (pairs % 256).tolist()):
        joins[g].add(b)
    return row, {g: frozenset(b) for g, b in joins.items()}


_SHARES: weakref.WeakKeyDictionary[TokenTrie, dict[frozenset[int], float]] = weakref.WeakKeyDictionary()


def token_share(trie: TokenTrie, joins: frozenset[int]) -> float:
    """Share of the trie's tokens that hold one of the bytes ``joins`` (kept per trie)."""
    memo = _SHARES.setdefault(trie, {})
    if joins not in memo:
        n = len(trie.node_byte)
        parent = np.zeros(n, np.int64)
        parent[concat_ranges(trie.child_lo, trie.child_hi)] = np.repeat(np.arange(n), trie.child_hi - trie.child_lo)
        hit = np.isin(trie.node_byte, sorted(joins))
        hit[0] = False  # (the root reads no byte)
        while True:  # a node holds a join byte where it or a node above it reads one: a pass per level
            up = hit[parent] & ~hit
            if not up.any():
                break
            hit |= up
        ends = np.diff(trie.tok_ptr)
        memo[joins] = float(ends[hit].sum()) / max(1, int(ends.sum()))
    return float(memo[joins])


def pays(copies: int, share: float) -> bool:
    """Is a row with ``copies`` worth one region? Its interior holds each position's tokens once;
    its regions hold a word's interior once and, per copy and position, the tokens that cross a
    join (about ``share`` of them). A row met once stays apart whatever the share."""
    return copies >= 2 and copies * share >= 1.0


def merged(comp: np.ndarray, row: np.ndarray, keys_of: Callable[[np.ndarray], dict[int, Any]],
           worth: Callable[[int, int], bool]) -> np.ndarray:
    """``comp`` with the rows merged, each into one region, where ``worth(row id, copies)``: the
    copies counted by the shape keys ``keys_of(candidate regions)`` gives the rows' region ids."""
    n = len(row)
    cand = np.where(row[comp] >= 0, n + row[comp], comp)
    keys = keys_of(cand)
    count = Counter(keys.values())
    keep = np.zeros(2 * n, bool)
    keep[[c for c, k in keys.items() if worth(c - n, count[k])]] = True
    if not keep.any():
        return comp
    return np.where(keep[cand], cand, comp)


def with_rows(dfa: Any, comp: np.ndarray, trie: TokenTrie, shapes_of: Callable[..., dict[int, Any]],
              min_inside: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(``comp`` with the rows of loops merged where they pay; bool per region: a row, or None
    where none is). ``shapes_of``: `shared_walks.shapes_of`; ``min_inside``: its `MIN_INSIDE_BYTES`."""
    found = candidates(dfa.num_states, dfa.src, dfa.byte, dfa.dst, comp, np.diff(dfa.ptr) >= min_inside)
    if found is None:
        return comp, None
    row, joins = found

    def keys_of(cand: np.ndarray) -> dict[int, str]:
        order = np.argsort(cand, kind="stable")
        bounds = np.searchsorted(cand[order], np.arange(int(cand.max()) + 2))
        ids = unique(cand[cand >= len(row)]).tolist()
        return {c: shape.key for c, shape in shapes_of(dfa, cand, order, bounds, ids).items()}

    def worth(g: int, copies: int) -> bool:
        return pays(copies, token_share(trie, joins[g]))

    out = merged(comp, row, keys_of, worth)
    if out is comp:
        return comp, None
    is_row = np.zeros(int(out.max()) + 1, bool)
    is_row[out[out >= len(row)]] = True
    return out, is_row
