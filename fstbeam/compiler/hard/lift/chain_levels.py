"""How the positions of chains are shared (`chain_blocks`, `token_fsa._chains`): whether a DFA
has chains at all (`chain_states`), the step limits of partial groups (`walk_levels`), how many
copies of a chain a DFA holds (`copies`, `copy_labels`), and which classes group at a level
(`within_copies`, `twins_below`, `twin_classes`).

A counted string in several fields is several copies of one chain. Exit-blind (`chain_blocks`),
a level's shared block serves the positions of every copy, while each member's longer tokens
stay its own: with more copies, more levels pay (`walk_levels`). Below some level it pays more
to group each position with its twins in the other copies, one block of the tokens that fit the
position, than to give every copy's position its own longer tokens (`twins_below`).
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..token_trie import TokenTrie

from ..array_ops import concat_ranges, narrow, run_starts
from . import chain_blocks

# The relative steps a position's label is carried back over (`copy_labels`): to a chain's side
# states (a UTF-8 character's continuations, a \\uXXXX escape's digits) from the next position.
COPY_ROUNDS = 8

# The lowest step limit of a partial group: a group's overhead (its walk restarted per member from
# the limit, its exits copied to every member) is not worth sharing a few thousand tokens of 1-3
# bytes (states alike for 1-2 bytes are often no chain at all: a group of a thousand).
MIN_LEVEL = 4


# A state is a chain position where `CHAIN_STEPS` steps from it, each to the next state most of the
# current state's arcs lead to (stopping at a state that leads to itself), meet `CHAIN_WIDE` states
# of `chain_blocks.MIN_DEGREE` arcs or more. A string interior leads to itself at once; a UTF-8
# character's continuations meet at most 4 such states (3 continuation states and the interior).
CHAIN_STEPS = 16
CHAIN_WIDE = 5
# Fewer chain positions than this: the lift numbers no chains (`token_fsa._chains`).
MIN_CHAIN_STATES = 16


def chain_states(num_states: int, ptr: np.ndarray, src: np.ndarray, dst: np.ndarray) -> int:
    """How many states are chain positions (`chain_positions`). A DFA without them (the free
    values of open objects: unbounded strings, numbers, keys) only pays for the chains' classes
    (an eighth of a median JSON Schema's compile, up to a third) and shares nothing by them."""
    return int(chain_positions(num_states, np.diff(ptr) >= chain_blocks.MIN_DEGREE, src, dst).sum())


def chain_positions(num_states: int, wide: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """bool per state: a chain position (`CHAIN_STEPS`; ``wide``: the states of
    `chain_blocks.MIN_DEGREE` arcs or more): the positions of a counted string or a bounded
    repetition (``maxLength``, ``[a-z]{1,64}``, a uuid's hex digits, also a non-ASCII range's
    lead and continuation bytes in turn). ``src`` sorted (arcs by state)."""
    S = num_states
    if not len(src):
        return np.zeros(S, bool)
    # (state, next state) edges weighed by their arcs: runs of arcs to one state counted first (a
    # string's byte ranges), then the runs of an edge summed
    run = np.flatnonzero(run_starts(src, dst))
    weight = np.diff(np.r_[run, len(src)])
    edge = src[run].astype(np.int64) * S + dst[run]
    o = np.argsort(edge, kind="stable")
    edge, weight = edge[o], weight[o]
    first = np.flatnonzero(run_starts(edge))
    edge, weight = edge[first], np.add.reduceat(weight, first)
    e_src, e_dst = edge // S, edge % S
    # the heaviest edge of each state (ties: the lowest next state)
    o = np.lexsort((e_dst, -weight, e_src))
    lead = o[run_starts(e_src[o])]
    main = np.arange(S)
    main[e_src[lead]] = e_dst[lead]
    at, moving, met = np.arange(S), np.ones(S, bool), np.zeros(S, np.int64)
    for _ in range(CHAIN_STEPS):
        met += wide[at] & moving
        nxt = main[at]
        moving &= nxt != at
        at = nxt
    return met >= CHAIN_WIDE


def max_token_bytes(trie: TokenTrie) -> int:
    """The trie's depth: the longest token in bytes."""
    return len(_by_bytes_and_chars(trie)) - 1


def token_lengths(trie: TokenTrie) -> np.ndarray:
    """Number of tokens of each length in bytes (index 0: none)."""
    return _by_bytes_and_chars(trie).sum(axis=1)


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


def copies(first: np.ndarray, label: np.ndarray, degree: np.ndarray, acyclic: np.ndarray) -> int:
    """How many copies of a chain the DFA holds: the copies (`copy_labels`) with two states or more
    in the largest class of ``acyclic`` states with many arcs in ``first`` (`level_classes` before
    any round: a chain's positions read alike, whichever copy; a label held by one state is no
    copy but a position whose exits differ from its neighbours'). A string without bounds loops
    on itself: its interiors are walked once per shape (`shared_walks`), not chains. ``acyclic``:
    the states counted (`level_classes` counts over chain positions first, `chain_positions`)."""
    big = np.flatnonzero((degree >= chain_blocks.MIN_DEGREE) & acyclic)
    if not len(big):
        return 1
    top = int(np.bincount(first[big]).argmax())
    _, count = np.unique(label[big[first[big] == top]], return_counts=True)
    return max(1, int((count >= 2).sum()))


def acyclic_states(num_states: int, src: np.ndarray, dst: np.ndarray, is_abs: np.ndarray) -> np.ndarray:
    """bool per state: none of its relative arcs closes a cycle (numbered in depth-first
    postorder, `chain_blocks.depth_first`: an arc to a state as high or higher leads to one not
    yet finished when it was taken)."""
    rel = ~is_abs
    return np.bincount(src[rel][dst[rel] >= src[rel]], minlength=num_states) == 0


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
    return _within(cls, _copy_mates(cls, label))


def twin_classes(cls: np.ndarray, label: np.ndarray, copies: int) -> np.ndarray:
    r"""``cls`` whole where a class holds one state per copy at most (`copy_labels`: a position and
    its twins in the other ``copies``, `twins_below`); elsewhere `within_copies`. Grouped whole,
    the states of a word repeated a counted number of times (alike in each of the 50
    repetitions of ``(\S+\s+){0,49}``, beside 3 copies of a counted string) made groups the
    twins' count does not pay for (Github_medium o21115: 1.43 GB, against 0.77 GB split)."""
    mates = _copy_mates(cls, label)
    twins = (np.bincount(cls) <= copies) & ~mates
    return narrow(np.where(twins[cls], cls, _within(cls, mates)))


def _copy_mates(cls: np.ndarray, label: np.ndarray) -> np.ndarray:
    """bool per class: it holds two states of one copy (the same `copy_labels` label)."""
    key = cls.astype(np.int64) * (int(label.max()) + 1) + label
    _, inv, count = np.unique(key, return_inverse=True, return_counts=True)
    mates = np.zeros(int(cls.max()) + 1, bool)
    mates[cls[count[inv.reshape(-1)] >= 2]] = True
    return mates


def _within(cls: np.ndarray, mates: np.ndarray) -> np.ndarray:
    """``cls`` where the class has copy mates (`_copy_mates`), every other state a class of its own."""
    # (int32 where they fit: a class per state and level, held from the classes to the groups)
    return narrow(np.where(mates[cls], cls, int(cls.max()) + 1 + np.arange(len(cls))))


_CHARS: weakref.WeakKeyDictionary[TokenTrie, np.ndarray] = weakref.WeakKeyDictionary()


def _by_bytes_and_chars(trie: TokenTrie) -> np.ndarray:
    """[bytes, characters] -> number of tokens (characters: UTF-8 bytes other than continuations);
    once per trie (its row sums are `token_lengths`). Nodes are numbered depth by depth: each
    depth is one id range, its children the next."""
    table = _CHARS.get(trie)
    if table is None:
        count = np.diff(trie.tok_ptr)
        rows = []  # (tokens of each depth by characters)
        chars = np.zeros(1, np.int64)  # (of the nodes at the current depth)
        lo, hi = 0, 1
        while hi > lo:
            rows.append(np.bincount(chars, weights=count[lo:hi], minlength=len(rows) + 1))
            width = trie.child_hi[lo:hi] - trie.child_lo[lo:hi]
            if not width.any():
                break
            kids = np.flatnonzero(width)
            child = concat_ranges(trie.child_lo[kids + lo], trie.child_hi[kids + lo])
            nlo, nhi = int(child.min()), int(child.max()) + 1
            inc = ((trie.node_byte[child] & 0xC0) != 0x80).astype(np.int64)
            nxt = np.zeros(nhi - nlo, np.int64)
            nxt[child - nlo] = np.repeat(chars[kids], width[kids]) + inc
            lo, hi, chars = nlo, nhi, nxt
        table = np.zeros((len(rows), len(rows)), np.int64)
        for depth, row in enumerate(rows):
            table[depth, :len(row)] = row
        _CHARS[trie] = table
    return table


def twins_below(trie: TokenTrie, copies: int, levels: list[int]) -> int:
    """The level (one of ``levels``, `walk_levels` for ``copies``; 0: none) below which each
    position of a chain is grouped with its twins in the other copies (at that level's step
    limit: one shared block per position of the tokens up to the limit that fit it, each copy's
    longer ones its own) rather than read a lower level (a shared block for many positions,
    each copy's position its longer tokens): the one that stores the fewest token arcs,
    counted with each token's bytes and characters (a position fits tokens of up to its
    characters). Gemma 3: 2 copies 6 bytes, 20 copies 25 bytes."""
    table = _by_bytes_and_chars(trie)
    K, levels = len(table) - 1, sorted(levels)
    # up[j][m]: tokens of at most j bytes and m characters
    up = np.cumsum(np.cumsum(table, axis=0), axis=1)
    total = up[K]

    def own(m: int, j: int) -> int:  # tokens of more than j bytes that fit m characters
        return int(total[m] - up[j][m])

    def cost(below: int) -> int:
        n = sum(int(up[j][K]) for j in levels if j >= below)  # (each level's shared block: tokens of up to j bytes)
        for m in range(1, K):
            if m < below:
                n += int(up[below][m]) + copies * own(m, below)
                continue
            under = [j for j in levels if j <= m]
            n += copies * (own(m, under[-1]) if under else int(total[m]))
        return n

    return min([0, *levels], key=cost)


def level_classes(num_states: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray, is_abs: np.ndarray,
                  degree: np.ndarray, trie: TokenTrie) -> list[tuple[int, np.ndarray]]:
    """`chain_blocks.level_classes` at the levels that pay for the DFA's copies of a chain, each
    level's classes grouping only several positions of a copy (`within_copies`), but at the
    level below which each position is grouped with its twins (`twins_below`): there the classes
    that are twin sets stay whole (`twin_classes`)."""
    S, K = num_states, max_token_bytes(trie)
    labels = copy_labels(S, src, dst, is_abs, COPY_ROUNDS)
    # Copies are counted over chain positions first: the UTF-8 continuation states of a counted
    # repetition of unbounded words (``(\S+\s+){0,49}``) are acyclic and alike in every
    # repetition, but lead back into a word's loop, not along a chain (Github_medium o21115: 370
    # such "copies" beside 3 counted strings chose 21 levels for them, where 6 pay). Where no
    # chain has copies, the states repeated in many strings (escapes, hex digits) are the copies:
    # their twins pay (Github_hard o21192: 208 copies, 6.5M token arcs, against 10.5M as one).
    acyclic = acyclic_states(S, src, dst, is_abs)
    chain = acyclic & chain_positions(S, degree >= chain_blocks.MIN_DEGREE, src, dst)
    n = 1  # (the copies, counted from the first round's classes)

    def levels_for(first: np.ndarray) -> list[int]:  # (one shared block per level serves every copy: more levels pay)
        nonlocal n
        n = copies(first, labels, degree, chain)
        if n == 1:
            n = copies(first, labels, degree, acyclic)
        return walk_levels(trie, n)

    levels = chain_blocks.level_classes(S, src, byte, dst, is_abs, K, degree, levels_for)
    below = twins_below(trie, n, [j for j, _ in levels if j < chain_blocks.FULL]) if n > 1 else 0
    made: dict[tuple[int, bool], np.ndarray] = {}  # (levels past the refinement's fixpoint share one array)
    for i, (limit, cls) in enumerate(levels):
        key = (id(cls), limit == below)
        if key not in made:
            made[key] = twin_classes(cls, labels, n) if limit == below else within_copies(cls, labels)
        levels[i] = (limit, made[key])
    return levels
