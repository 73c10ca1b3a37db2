"""Lift a character DFA to token ids: a token sequence is accepted iff its bytes are.

The token automaton keeps the character DFA's states (those reached at token boundaries).
Transitions are grouped into **blocks**: block ``(b, r)`` holds every token whose first byte is
``b``, walked through the trie from ``r = delta(q, b)``. All states that reach ``r`` on ``b``
share the block, so the word-boundary fan-out (thousands of ``▁word`` tokens after every
word-final state) is computed and stored once. The walk is a level-synchronous BFS over
(trie node, char state) pairs in numpy, so no Python runs per token.
"""
from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...contract.hard import factored_fst_bytes
from ..char_dfa import ByteArcs, CharDFA
from . import chain_blocks, shared_walks
from .array_ops import TRIM_ABOVE, Parts, concat_ranges, csr, grouped, narrow, order_by, rank_step, sorted_triples, step_slices, trim_heap  # noqa: F401  (re-exported)
from .assemble import Interiors, assemble
from .token_trie import TokenTrie, spelled_taking  # noqa: F401  (re-exported)
from .token_trie import spelled as _expand

log = logging.getLogger(__name__)

# A DFA with at most this many (state, byte) cells steps through a dense [S, 256] table (one gather,
# a fifth of a rank query's time; 40 MB at most: o77304's 34k states, not jscsrc's 114k) instead
# of its arcs; a word list's million states keep the search.
DENSE_STEP_CELLS = 10 << 20
# From this many arcs per state (on average), a step looks arcs up by rank in a bitmap of the
# [S, 256] cells (64 bytes a state, no more than the arcs' own int64 keys), not by binary search
# (a word list's DFA, about one arc a state, keeps the search).
RANK_ARCS_PER_STATE = 8

# A step's candidate (pair, child) extensions taken this many at a time (`_Stepper`): each slice's
# temporaries are some ten int64 columns of its candidates.
STEP_SLICE_CANDIDATES = 1 << 20

# Per trie, built once (`_Stepper`): the sorted (parent, byte) key of every non-root node, and
# the number of children of every node.
_TRIE_AUX: weakref.WeakKeyDictionary[TokenTrie, tuple[np.ndarray, np.ndarray]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class TokenFSA:
    """Factored token automaton (see docs/tables.md). States are renumbered, start = 0."""

    width: int
    final: np.ndarray  # bool [S]
    dist_to_final: np.ndarray  # int32 [S]
    state_block_ptr: np.ndarray  # int64 [S+1]
    state_block_byte: np.ndarray  # uint8 [NSB]
    state_block_id: np.ndarray  # int32 [NSB]
    state_block_offset: np.ndarray  # int64 [NSB]: added to block_next of the link's block (a shared interior)
    state_block_exit: np.ndarray  # int32 [NSB]: the link's exit block (absolute next states), -1 for none
    block_ptr: np.ndarray  # int64 [NB+1]
    block_tokens: np.ndarray  # int32 [NT] sorted within each block
    block_next: np.ndarray  # int32 [NT]
    char_state: np.ndarray  # int32 [S] the character-DFA state each token state came from

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def num_blocks(self) -> int:
        return len(self.block_ptr) - 1

    @property
    def num_arcs(self) -> int:
        """Token arcs stored (blocks counted once) plus state->block links."""
        return len(self.block_tokens) + len(self.state_block_id) + int((self.state_block_exit >= 0).sum())

    def expanded_arcs(self) -> int:
        """Arcs a flat (unfactored) token automaton would need."""
        sizes = np.diff(self.block_ptr)
        ex = self.state_block_exit[self.state_block_exit >= 0]
        return int(sizes[self.state_block_id].sum() + sizes[ex].sum())


@dataclass(frozen=True, eq=False)
class _Arcs:
    """A character DFA as arcs sorted by (state, byte): what the lift reads (no [S, 256] table,
    which would take a gigabyte at a million words)."""

    num_states: int
    start: int
    final: np.ndarray
    src: np.ndarray  # int64 [A]
    byte: np.ndarray  # int64 [A]
    dst: np.ndarray  # int64 [A]

    @staticmethod
    def of(dfa) -> "_Arcs":
        if isinstance(dfa, _Arcs):  # (`char_arcs`: read from a `CharDFA` beforehand)
            return dfa
        if isinstance(dfa, ByteArcs):  # (read from OpenFst bytes: the arcs of its `CharDFA`, no table)
            return _Arcs(dfa.num_states, dfa.start, dfa.final, dfa.src, dfa.byte, dfa.dst)
        if isinstance(dfa, CharDFA):
            q, b = np.nonzero(dfa.next >= 0)  # row-major: sorted by state, then byte
            arcs = _Arcs(dfa.num_states, dfa.start, dfa.final, q, b, dfa.next[q, b].astype(np.int64))
            if dfa.next.size <= DENSE_STEP_CELLS:
                arcs.__dict__["table"] = dfa.next  # (the cached_property below, already at hand)
            return arcs
        # a TextDFA (fstbeam.fst.wordlist.text_dfa): start 0, arcs already sorted
        return _Arcs(dfa.num_states, 0, dfa.final, dfa.src, dfa.byte.astype(np.int64), dfa.dst)

    @staticmethod
    def plain(num_states: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray) -> "_Arcs":
        """Arcs sorted by (state, byte), start 0, no final states (a walk needs none)."""
        return _Arcs(num_states, 0, np.zeros(num_states, bool), src, byte, dst)

    @cached_property
    def ptr(self) -> np.ndarray:
        return csr(self.src, self.num_states)

    @cached_property
    def key(self) -> np.ndarray:
        return self.src * 256 + self.byte  # sorted

    @cached_property
    def table(self) -> np.ndarray | None:
        """[S, 256] next state (-1: no arc) where it is small enough (`DENSE_STEP_CELLS`), else None."""
        if self.num_states * 256 > DENSE_STEP_CELLS:
            return None
        table = np.full((self.num_states, 256), -1, np.int32)
        table[self.src, self.byte] = self.dst
        return table

    @cached_property
    def rank(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(bit per (state, byte) cell packed in uint64 words, arcs before each word) where the
        arcs are dense enough that it is no larger than their keys (`RANK_ARCS_PER_STATE`):
        a step is then a few gathers (a rank query), not a binary search over every arc
        (o21267: 4.5 million arcs, 6.6 CPU-s of searches in its lift)."""
        if len(self.src) < RANK_ARCS_PER_STATE * self.num_states or not len(self.src):
            return None
        key = self.src * 256 + self.byte  # sorted, distinct
        word = key >> 6
        bit = np.left_shift(np.uint64(1), (key & 63).astype(np.uint64))
        bits = np.zeros(self.num_states * 4, np.uint64)
        first = np.flatnonzero(np.r_[True, word[1:] != word[:-1]])
        bits[word[first]] = np.bitwise_or.reduceat(bit, first)
        count = np.bitwise_count(bits).astype(np.int64)
        before = np.cumsum(count) - count
        return bits, before

    def step(self, state: np.ndarray, byte: np.ndarray) -> np.ndarray:
        """Next state for each (state, byte) pair, -1 where there is no arc."""
        if self.table is not None:
            return self.table[state, byte]
        if self.rank is not None:
            return rank_step(self.rank, self.dst, state, byte)
        key = state.astype(np.int64) * 256 + byte  # (a frontier's states may come as int32)
        pos = np.minimum(np.searchsorted(self.key, key), max(len(self.key) - 1, 0))
        if not len(self.key):
            return np.full(len(key), -1, np.int64)
        return np.where(self.key[pos] == key, self.dst[pos], -1)


def char_arcs(dfa: CharDFA | ByteArcs) -> _Arcs:
    """The arcs `lift` reads of ``dfa`` (its [S, 256] table kept only where it is the lift's step
    table, `DENSE_STEP_CELLS`, and built from the arcs of a `ByteArcs` there): the caller can let
    the table go before the lift. ``lift`` of the result is ``lift`` of ``dfa``."""
    return _Arcs.of(dfa)


def lift(dfa, trie: TokenTrie, width: int, *, allowed_tokens: np.ndarray | None = None,
         share_walks: bool | None = None) -> TokenFSA:
    """Token automaton for ``dfa`` (a `CharDFA`, its `char_arcs` (also as ``[arcs]``, taken out of
    the list), or a word list's `TextDFA`) over the tokens in
    ``trie`` (optionally only ``allowed_tokens``). ``share_walks``: take the walks of large
    components' interiors from the process's memo (`shared_walks`; default: for a `CharDFA`,
    i.e. grammars and structured constraints, not word lists, whose text is one component)."""
    t0 = time.perf_counter()
    if isinstance(dfa, list):  # taken out of the list: the caller's arcs go once renumbered (`_chains`)
        dfa = dfa.pop()
    if share_walks is None:
        share_walks = isinstance(dfa, (CharDFA, ByteArcs, _Arcs))
    dfa = _Arcs.of(dfa)
    chains = _chains(dfa, trie) if share_walks else None
    chained = chains is not None
    if chains is not None:
        dfa, old_id, levels, is_abs = chains
    del chains  # (its arcs are `dfa`: let go with it, before `assemble`)
    if chained and len(dfa.src) > TRIM_ABOVE:  # the renumbering's and the classes' per-arc temporaries (under
        trim_heap()  # glibc's mmap threshold: 200 MB resident through the search on a large schema) handed back
    S = dfa.num_states
    # 1. Distinct (first byte, state after it) pairs become blocks.
    has_tok = trie.depth1[dfa.byte] >= 0
    q_idx, b_idx, r_idx = dfa.src[has_tok], dfa.byte[has_tok], dfa.dst[has_tok]
    pair_key = b_idx.astype(np.int64) * S + r_idx
    uniq_keys, pair_block = np.unique(pair_key, return_inverse=True)
    del pair_key, r_idx, has_tok
    # the links held through the search and `assemble` as int32 and bytes (not three int64 columns)
    q_idx, b_idx, pair_block = narrow(q_idx), b_idx.astype(np.uint8), narrow(pair_block)
    nb = len(uniq_keys)
    blk_byte = (uniq_keys // S).astype(np.int64)
    blk_state = (uniq_keys % S).astype(np.int64)
    del uniq_keys

    # 2. BFS over (trie node, char state, block), emitting (block, node, state) at token ends.
    node = trie.depth1[blk_byte]
    state = blk_state
    block = np.arange(nb, dtype=np.int64)
    empty = np.zeros(0, np.int64)
    ok = None
    if allowed_tokens is not None:
        ok = np.zeros(width, bool)
        ok[allowed_tokens] = True
    # the token arcs (block, token, next state), spelled as the search finds their ends, as int32
    # pieces (ends spelled all at once were a fourth column of tens of millions, the lift's peak)
    out = (Parts([empty]), Parts([np.zeros(0, np.int32)]), Parts([empty]))
    step = _Stepper(dfa, trie)
    shared = shared_walks.share(dfa, trie, blk_byte, blk_state, _Arcs.plain, _Stepper) if share_walks else None
    walk = np.ones(nb, bool)
    chain = None
    if chained:  # grouped blocks are not walked: their representative's inside walk is, once per group
        grp, shift, reps, limit = chain_blocks.groups(blk_byte, blk_state, levels, shared.handled if shared is not None else None)
        own = limit < chain_blocks.FULL
        walk = grp < 0
        log.info("lift: %d blocks in %d groups of shift-equivalent blocks (%d partial)", int((grp >= 0).sum()), len(reps),
                 int(own.sum()))
    if shared is not None:  # interiors of large components from the memo; the BFS goes on from their exits
        walk &= ~shared.handled
        c_b, c_n, c_s = shared.conts
        node = np.concatenate([node[walk], c_n])
        state = np.concatenate([state[walk], c_s])
        block = np.concatenate([block[walk], c_b])
        a_b, a_n, a_s = shared.absolute  # token ends inside interiors walked from the memo, not shared
        _spell_into(out, trie, a_b, a_n, a_s, ok)
        del c_b, c_n, c_s, a_b, a_n, a_s
    elif chained:
        node, state, block = node[walk], state[walk], block[walk]
    if chained:  # the representatives' walks: inside arcs kept per group, exits walked on as usual
        ends, (x_g, x_n, x_s), fronts = _walk_inside(dfa, trie, is_abs, blk_byte[reps], blk_state[reps], limit)
        # the groups' inside arcs spelled now, as int32 where they fit, and the token ends let go:
        # held through the search and `assemble` they were 100 MB (int64) on a large schema
        chain = chain_blocks.Chains(grp, shift, reps, _expand(trie, *(narrow(x) for x in ends), ok), own)
        del ends
        # a partial group's exits are walked once, into a block nb + group, copied to its members below;
        # its members walk on from the representative's walk at the step limit, shifted
        f_b, f_n, f_s = chain_blocks.to_members(grp, shift, *fronts)
        node = np.concatenate([node, x_n, f_n])
        state = np.concatenate([state, x_s, f_s])
        block = np.concatenate([block, np.where(own[x_g], nb + x_g, reps[x_g]), f_b])
        del x_g, x_n, x_s, f_b, f_n, f_s, fronts  # (in the frontier now: not kept through the search)
    spells = trie.tok_ptr[1:] > trie.tok_ptr[:-1]  # (per trie node: a bool per frontier pair, not two int64 gathers)
    # the frontier as int32 (a wide one is millions of pairs, its steps' peak); a step's slices come int32 too
    node, state, block = narrow(node), narrow(state), narrow(block)
    if len(node) > TRIM_ABOVE:  # (the temporaries of the blocks, walks and groups above, handed back)
        trim_heap()
    while len(node):
        has = spells[node]
        _spell_into(out, trie, block[has], node[has], state[has], ok)
        del has
        block, node, state = step(node, state, block)
        if len(node) > TRIM_ABOVE:  # (a level's freed slices, under the next level's pieces)
            trim_heap()
    inner = None
    if shared is not None and shared.copies:  # the interiors' token arcs, once per (shape, canonical state, first byte)
        i_k, i_tok, i_rel = shared.inner_arcs  # (sorted by interior, then token: filtering keeps the order)
        n_inner = int(shared.blk_inner.max()) + 1
        distinct = None
        if ok is not None:
            sel = ok[i_tok]
            i_k, i_tok, i_rel = i_k[sel], i_tok[sel], i_rel[sel]
        else:  # (with tokens filtered out, an interior may reach fewer states)
            u_k, u_rel = shared.inner_next
            distinct = (csr(u_k, n_inner), u_rel)
        inner = Interiors(shared.blk_inner, shared.blk_copy, shared.copies, csr(i_k, n_inner), i_tok, i_rel, distinct)
        del i_k, i_tok, i_rel
    # `assemble` reads the DFA's final states and start only: its arcs (three int64 columns per
    # character arc) and what holds them (the steppers, the memo's walks) go before the arcs'
    # columns are built
    head = _Arcs(S, dfa.start, dfa.final, empty, empty, empty)
    del dfa, step, shared, blk_byte, blk_state, node, state, block, spells
    if len(q_idx) > TRIM_ABOVE:  # (theirs, and the search's last freed slices, under the arcs' columns)
        trim_heap()
    # (the arcs as int32 pieces, taken once; they go to `assemble` in a list it empties, so no
    # copy of them stays referenced here while it runs)
    arcs = [part.take() for part in out]
    del out
    if chained and own.any():  # a partial group's exits: every member's own (tens of millions of arcs)
        arcs = [*chain_blocks.with_members(grp, arcs, nb)]

    # 3. Keep what is reachable from the start at token boundaries and can still finish.
    links = [q_idx, b_idx, pair_block]  # (taken by `assemble`, as the arcs: its filtered copies replace them)
    del q_idx, b_idx, pair_block
    fields = assemble(head, width, links, arcs, inner, chain)
    if chained:
        fields["char_state"] = old_id[fields["char_state"]].astype(np.int32)
    fsa = TokenFSA(**fields)
    log.info(
        "lift: %d char states -> %d token states, %d blocks, %d token arcs stored (%d unfactored) in %.3f s",
        S, fsa.num_states, fsa.num_blocks, len(fsa.block_tokens), fsa.expanded_arcs(), time.perf_counter() - t0,
    )
    return fsa


def _chains(dfa: _Arcs, trie: TokenTrie) -> tuple[_Arcs, np.ndarray, np.ndarray, np.ndarray] | None:
    """(the DFA renumbered (`chain_blocks.depth_first`), old id of each new state, shift class
    of each state, absolute arcs) where chains of shift-equivalent states are worth sharing
    (`chain_blocks`), else None (the DFA is left as it is, and so are its tables)."""
    S = dfa.num_states
    degree = np.diff(dfa.ptr)
    if int((degree >= chain_blocks.MIN_DEGREE).sum()) < chain_blocks.MIN_SHIFTED:
        return None
    is_abs = chain_blocks.absolute_arcs(S, dfa.src, dfa.dst, dfa.byte)  # (numbering-free: a first, cheap rejection)
    if not chain_blocks.worth_sharing(chain_blocks.unshifted_classes(dfa.ptr, dfa.src, dfa.byte, dfa.dst, is_abs), degree):
        return None
    old_id = chain_blocks.depth_first(S, dfa.start, dfa.ptr, dfa.dst)
    new_id = np.empty_like(old_id)
    new_id[old_id] = np.arange(len(old_id))
    src, dst = new_id[dfa.src], new_id[dfa.dst]
    o = order_by(src, dfa.byte)
    src, byte, dst = src[o], dfa.byte[o], dst[o]
    is_abs = is_abs[o]  # (how many states enter an arc's target does not depend on the numbering)
    levels = chain_blocks.level_classes(S, src, byte, dst, is_abs, chain_blocks.max_token_bytes(trie), degree[old_id],
                                        chain_blocks.walk_levels(trie))
    if not levels:
        return None
    return _Arcs(S, int(new_id[dfa.start]), dfa.final[old_id], src, byte, dst), old_id, levels, is_abs


def _walk_inside(dfa: _Arcs, trie: TokenTrie, is_abs: np.ndarray, byte: np.ndarray, state: np.ndarray,
                 limit: np.ndarray) -> tuple[tuple[np.ndarray, ...], ...]:
    """Each group representative's walk from ``state`` after first ``byte`` (group = index) until
    an absolute arc or its step ``limit``: ((group, node, state) of the token ends inside,
    (group, child node, state after the absolute arc) of the exits, (group, node, state) of the
    walk at the limit, its token ends not counted inside)."""
    S = dfa.num_states
    step = _Stepper(_Arcs.plain(S + 1, dfa.src, dfa.byte, np.where(is_abs, S, dfa.dst)), trie)
    g, node = np.arange(len(byte), dtype=np.int64), trie.depth1[byte]
    ends, exits, fronts = [], [], []
    steps = 0
    while len(node):
        cut = limit[g] <= steps
        if cut.any():
            fronts.append((g[cut], node[cut], state[cut]))
            g, node, state = g[~cut], node[~cut], state[~cut]
        has = trie.tok_ptr[node + 1] > trie.tok_ptr[node]
        ends.append((g[has], node[has], state[has]))
        s, node, nxt = step(node, state)
        g, state = g[s], state[s]
        out = nxt == S
        exits.append((g[out], node[out], state[out]))
        g, node, state = g[~out], node[~out], nxt[~out].astype(np.int64)
        steps += 1
    e_g, e_n, e_s = _cat(ends)
    x_g, x_n, x_s = _cat(exits)
    x_s = dfa.step(x_s, trie.node_byte[x_n].astype(np.int64)).astype(np.int64)  # (an absolute arc: defined)
    return (e_g, e_n, e_s), (x_g, x_n, x_s), _cat(fronts)


def _spell_into(out: tuple[Parts, Parts, Parts], trie: TokenTrie, block: np.ndarray, node: np.ndarray,
                state: np.ndarray, ok: np.ndarray | None) -> None:
    """The token arcs of the ends ``(block, node, state)`` (`spelled`) appended to ``out``."""
    for part, col in zip(out, _expand(trie, block, node, state, ok)):
        part.append(col)


def _cat(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    return tuple(np.concatenate(x) for x in zip(*parts)) if parts else (np.zeros(0, np.int64),) * 3


class _Stepper:
    """One BFS step over (trie node, char state) pairs: every (child, next state) pair.

    A pair can be extended from either side: the node's trie children (checked against the
    DFA row) or the state's DFA arcs (looked up among the node's children). Each pair takes the
    side with fewer candidates: inside words a state has a few arcs while a short token's node
    has dozens of children, and at word starts it is the other way round."""

    def __init__(self, dfa: _Arcs, trie: TokenTrie):
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
        cand = self.arc_ptr[state + 1]  # (a bound; built in place: a wide frontier is millions of pairs)
        cand -= self.arc_ptr[state]
        cand += self.n_children[node]
        cuts = step_slices(cand, STEP_SLICE_CANDIDATES)
        del cand  # (int64 per pair: not held through the slices)
        if len(cuts) == 2:
            src, child, nxt = self._step(node, state)
            return (src if carry is None else carry[src]), child, nxt
        # each slice's columns kept int32 where they fit, each output column built and its pieces
        # let go before the next (a wide frontier's three int64 columns and their pieces at once
        # were the lift's peak)
        first: list[list[np.ndarray]] = [[], [], []]
        second: list[list[np.ndarray]] = [[], [], []]
        # (pair index, node and state bounded below 2**31: int32 without `narrow`'s two scans)
        fits = max(len(node), self.trie.num_nodes, self.dfa.num_states) < 2**31
        for a, b in zip(cuts[:-1], cuts[1:]):
            one, two = self._step(node[a:b], state[a:b], a)
            if carry is not None:
                one, two = (carry[one[0]], *one[1:]), (carry[two[0]], *two[1:])
            for k in range(3):
                exact = fits and (k or carry is None)  # (carried values: narrowed where they fit)
                first[k].append(one[k].astype(np.int32) if exact else narrow(one[k]))
                second[k].append(two[k].astype(np.int32) if exact else narrow(two[k]))
            del one, two
        out = []
        for k in range(3):
            out.append(np.concatenate(first[k] + second[k]))
            first[k] = second[k] = []
        return out[0], out[1], out[2]

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


def token_fst_bytes(fsa: TokenFSA) -> bytes:
    """The factored token automaton as an OpenFst acceptor: state q --eps--> block state, and
    block state --(token id + 1)--> next state. Its language is exactly the token language."""
    return factored_fst_bytes(0, fsa.final, fsa.state_block_ptr, fsa.state_block_id, fsa.state_block_offset,
                              fsa.state_block_exit, fsa.block_ptr, fsa.block_tokens.astype(np.int64), fsa.block_next)
