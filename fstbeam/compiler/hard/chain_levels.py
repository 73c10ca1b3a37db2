"""How the positions of chains are shared (`chain_blocks`, `token_fsa._chains`): the step limits
of partial groups (`walk_levels`), how many copies of a chain a DFA holds (`copies`, `copy_labels`),
and which classes group at a level (`within_copies`, `per_position_pays`).

A counted string in several fields is several copies of one chain. Exit-blind (`chain_blocks`),
a level's shared block serves the positions of every copy, while each member's longer tokens
stay its own: with more copies, more levels pay (`walk_levels`). With many copies it pays more
to group each position with its twins in the other copies, one block of every token that fits
the position, than to give every copy's position its own longer tokens (`per_position_pays`).
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .token_trie import TokenTrie

from . import chain_blocks
from .array_ops import concat_ranges

# The lowest step limit of a partial group: a group's overhead (its walk restarted per member from
# the limit, its exits copied to every member) is not worth sharing a few thousand tokens of 1-3
# bytes (states alike for 1-2 bytes are often no chain at all: a group of a thousand).
MIN_LEVEL = 4

_LENGTHS: weakref.WeakKeyDictionary[TokenTrie, np.ndarray] = weakref.WeakKeyDictionary()


def max_token_bytes(trie: TokenTrie) -> int:
    """The trie's depth: the longest token in bytes."""
    return len(token_lengths(trie)) - 1


def token_lengths(trie: TokenTrie) -> np.ndarray:
    """Number of tokens of each length in bytes (index 0: none); nodes are numbered depth by
    depth, so each depth is one id range."""
    counts = _LENGTHS.get(trie)
    if counts is None:
        out, lo, hi = [0], 0, 1
        has = trie.child_hi > trie.child_lo
        while hi > lo:
            kids = np.flatnonzero(has[lo:hi]) + lo
            if not len(kids):
                break
            lo, hi = int(trie.child_lo[kids].min()), int(trie.child_hi[kids].max())
            out.append(int(trie.tok_ptr[hi] - trie.tok_ptr[lo]))
        counts = _LENGTHS[trie] = np.asarray(out, np.int64)
    return counts


def walk_levels(trie: TokenTrie, copies: int = 1) -> list[int]:
    """The step limits of partial groups (module docstring), ascending, below the trie's depth K.

    A block in a level-j group stores the tokens longer than j itself: with one block per room
    m = 1..K-1 (tokens of up to m bytes fit), a level costs its shared block (the tokens of up
    to j bytes, once: a group spans the ``copies`` of a chain) plus, per room m in [j, next
    level) and copy, the tokens of j+1..m bytes; a room below the lowest level costs all its
    tokens per copy. The levels minimise that sum (a dynamic program over the K lengths; on
    Gemma 3 with one copy: 4, 6, 10 and 19 bytes, below the longest token, 48; with 20 copies
    13 levels)."""
    c = np.cumsum(token_lengths(trie)).tolist()  # c[m]: tokens of at most m bytes
    K = len(c) - 1
    if K <= MIN_LEVEL:
        return []
    best, nxt = [0] * (K + 1), [K] * (K + 1)  # best[j]: rooms j..K-1 with j a level (best[K] = 0)
    for j in range(K - 1, MIN_LEVEL - 1, -1):
        run, best[j] = 0, -1
        for k in range(j + 1, K + 1):  # the next level k: rooms j..k-1 read level j
            run += c[k - 1] - c[j]
            cost = c[j] + copies * run + best[k]
            if best[j] < 0 or cost < best[j]:
                best[j], nxt[j] = cost, k
    below = 0
    top, first = None, K
    for j in range(1, K):
        if j >= MIN_LEVEL:
            total = copies * below + best[j]
            if top is None or total < top:
                top, first = total, j
        below += c[j]
    out, j = [], first
    while j < K:
        out.append(j)
        j = nxt[j]
    return out


def copies(cls: np.ndarray, degree: np.ndarray, rounds: int) -> int:
    """How many copies of a chain the classes ``cls`` (`shift_classes`) join: the most common
    size of a class of states with many arcs, where at least ``rounds // 2`` classes have it (the
    positions of a chain with fewer bytes left than the longest token each make a class of one
    state per copy); else 1."""
    big = degree >= chain_blocks.MIN_DEGREE
    size = np.bincount(cls[big])
    many = np.bincount(size[size >= 2])
    if not len(many) or int(many.max()) < rounds // 2:
        return 1
    return int(many.argmax())


def copy_labels(num_states: int, src: np.ndarray, dst: np.ndarray, is_abs: np.ndarray, rounds: int) -> np.ndarray:
    """Per state, the lowest target of an absolute arc it reaches through relative arcs within
    ``rounds`` steps (``num_states``: none): every position of one copy of a chain, and the
    side states between them (UTF-8 continuations, escapes), leave to the same states, so they
    share a label; the copies of a chain do not. ``src`` sorted."""
    none = num_states
    label = np.full(num_states + 1, none, np.int64)
    np.minimum.at(label, src[is_abs], dst[is_abs])
    rel = ~is_abs
    r_src, r_dst = src[rel], dst[rel]
    if not len(r_src):
        return label[:-1]
    starts = np.flatnonzero(np.r_[True, r_src[1:] != r_src[:-1]])
    heads = r_src[starts]
    for _ in range(rounds):
        reach = np.minimum.reduceat(label[r_dst], starts)
        new = label.copy()
        new[heads] = np.minimum(label[heads], reach)
        if np.array_equal(new, label):
            break
        label = new
    return label[:-1]


def within_copies(cls: np.ndarray, label: np.ndarray) -> np.ndarray:
    """``cls`` (a level's classes, `level_classes`) where a class holds two states of one copy
    (`copy_labels`: positions with at least the level's bytes left); every other state a class
    of its own. Exit-blind, a position with fewer bytes left joins its twins in the other copies
    only; it is left to the lower levels, whose shared blocks serve many positions of every copy
    (one block per position would store nearly the vocabulary each)."""
    key = cls * (int(label.max()) + 1) + label
    _, inv, count = np.unique(key, return_inverse=True, return_counts=True)
    ok = np.zeros(int(cls.max()) + 1, bool)
    ok[cls[count[inv.reshape(-1)] >= 2]] = True
    return np.where(ok[cls], cls, int(cls.max()) + 1 + np.arange(len(cls)))


_CHARS: weakref.WeakKeyDictionary[TokenTrie, np.ndarray] = weakref.WeakKeyDictionary()


def _by_bytes_and_chars(trie: TokenTrie) -> np.ndarray:
    """[bytes, characters] -> number of tokens (characters: UTF-8 bytes other than continuations)."""
    table = _CHARS.get(trie)
    if table is None:
        n = trie.num_nodes
        has = np.flatnonzero(trie.child_hi > trie.child_lo)
        up = np.zeros(n, np.int64)
        up[concat_ranges(trie.child_lo[has], trie.child_hi[has])] = np.repeat(has, (trie.child_hi - trie.child_lo)[has])
        inc = ((trie.node_byte & 0xC0) != 0x80).astype(np.int64)
        inc[0] = 0
        depth, chars = np.zeros(n, np.int64), np.zeros(n, np.int64)
        for _ in range(max_token_bytes(trie)):  # (nodes are numbered depth by depth: a fixpoint in K rounds)
            depth[1:], chars[1:] = depth[up[1:]] + 1, chars[up[1:]] + inc[1:]
        K = max_token_bytes(trie)
        table = np.zeros((K + 1, K + 1), np.int64)
        np.add.at(table, (depth, chars), np.diff(trie.tok_ptr))
        _CHARS[trie] = table
    return table


def per_position_pays(trie: TokenTrie, copies: int) -> bool:
    """Whether grouping each position of a chain with fewer bytes left than the longest token
    with its twins in the other copies (one block per position: every token that fits its
    characters) stores fewer token arcs than the partial levels for ``copies`` (`walk_levels`:
    a shared block per level, each copy's position its longer tokens), counted with each
    token's bytes and characters. (Gemma 3: from about 14 copies.)"""
    table = _by_bytes_and_chars(trie)
    K = len(table) - 1
    fits = np.cumsum(table.sum(axis=0))  # fits[m]: tokens of at most m characters
    longer = np.cumsum(table[::-1], axis=0)[::-1]  # longer[j][c]: tokens of j bytes or more, c characters
    levels = walk_levels(trie, copies)
    by_bytes = np.cumsum(table.sum(axis=1))
    cost = sum(int(by_bytes[j]) for j in levels)
    for m in range(1, K):
        below = [j for j in levels if j <= m]
        own = int(longer[below[-1] + 1][:m + 1].sum()) if below else int(fits[m])
        cost += copies * own
    return int(fits[1:K].sum()) < cost


def level_classes(num_states: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray, is_abs: np.ndarray,
                  degree: np.ndarray, trie: TokenTrie) -> list[tuple[int, np.ndarray]]:
    """`chain_blocks.level_classes` at the levels that pay for the DFA's copies of a chain, each
    level's classes grouping only several positions of a copy (`within_copies`), but where
    grouping each position with its twins pays (`per_position_pays`): there the full level's
    classes are kept whole."""
    S, K = num_states, max_token_bytes(trie)
    levels = chain_blocks.level_classes(S, src, byte, dst, is_abs, K, degree, walk_levels(trie))
    n = copies(levels[0][1], degree, K) if levels and levels[0][0] == chain_blocks.FULL else 1
    per_position = n > 1 and per_position_pays(trie, n)
    if n > 1 and not per_position:  # one shared block per level serves every copy: more levels pay
        levels = chain_blocks.level_classes(S, src, byte, dst, is_abs, K, degree, walk_levels(trie, n))
    if not levels:
        return levels
    labels = copy_labels(S, src, dst, is_abs, K)
    return [(limit, cls if per_position and limit == chain_blocks.FULL else within_copies(cls, labels))
            for limit, cls in levels]
