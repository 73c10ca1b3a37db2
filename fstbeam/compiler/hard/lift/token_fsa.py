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
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ....cancel import checkpoint
from ....contract.hard import factored_fst_bytes
from ...char_dfa import ByteArcs, CharDFA
from ..array_ops import (  # noqa: F401  (re-exported)
    TRIM_ABOVE,
    Parts,
    concat_ranges,
    csr,
    grouped,
    index_concat,
    narrow,
    order_by,
    rank_bits,
    rank_step,
    sorted_triples,
    step_slices,
    trim_heap,
)
from ..token_trie import TokenTrie, spelled_taking  # noqa: F401  (re-exported)
from ..token_trie import spelled as _expand
from . import chain_blocks, chain_levels, group_exits, near_blocks, shared_walks
from .assemble import Interiors, assemble
from .trie_step import Stepper as _Stepper
from .trie_step import coalesced

log = logging.getLogger(__name__)

# Token arcs a lift may find (its search's token ends, and the ends inside chain groups): above
# it the lift stops with `LiftSizeError` before it holds them (12 bytes and more each). The
# largest JSON Schemas of the development sample that compile have 40M (Github_ultra o21328,
# 1.6 GB); WashingtonPost wp_35's 1.3M-state document went to 165M ends in its chain groups
# alone and past 22 GB.
MAX_TOKEN_ARCS = 64_000_000


class LiftSizeError(ValueError):
    """The token automaton would pass `MAX_TOKEN_ARCS` (the caller names the constraint)."""

    def __init__(self, found: int) -> None:
        super().__init__(f"more than {MAX_TOKEN_ARCS:,} token arcs (at least {found:,} found)")
        self.found = found


def _within_budget(found: int) -> None:
    """Every level of the lift's searches: within `MAX_TOKEN_ARCS`, and not asked to stop."""
    checkpoint()
    if found > MAX_TOKEN_ARCS:
        raise LiftSizeError(found)

# A DFA with at most this many (state, byte) cells steps through a dense [S, 256] table (one gather,
# a fifth of a rank query's time; 40 MB at most: o77304's 34k states, not jscsrc's 114k) instead
# of its arcs; a word list's million states keep the search.
DENSE_STEP_CELLS = 10 << 20
# From this many arcs per state (on average), a step looks arcs up by rank in a bitmap of the
# [S, 256] cells (64 bytes a state, no more than the arcs' own int64 keys), not by binary search
# (a word list's DFA, about one arc a state, keeps the search).
RANK_ARCS_PER_STATE = 8


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
    src: np.ndarray  # int64 [A] (int32 once renumbered by `_chains`)
    byte: np.ndarray  # int64 [A] (uint8 once renumbered)
    dst: np.ndarray  # int64 [A] (int32 once renumbered)

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
        return (self.src.astype(np.int64) << 8) | self.byte  # sorted (int64: the states may come as int32)

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
        return rank_bits(self.num_states, self.src, self.byte)

    def with_dst(self, dst: np.ndarray) -> "_Arcs":
        """These arcs with other targets (start 0, no final states, as `plain`), reading this
        DFA's lookups (the rank's bits, the pointers, the keys depend on sources and bytes
        only): built again they were the peak of a large schema's lift (o21328: 230 MB)."""
        out = _Arcs.plain(self.num_states, self.src, self.byte, dst)
        out.__dict__["ptr"], out.__dict__["rank"] = self.ptr, self.rank  # (built here if not yet: once for both)
        if "key" in self.__dict__:  # (not the dense table: it holds the targets)
            out.__dict__["key"] = self.key
        return out

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
    if shared is not None and len(dfa.src) > TRIM_ABOVE:  # (the walks' and shapes' temporaries: 300 MB on o21267)
        trim_heap()
    walk = np.ones(nb, bool)
    near = None
    if shared is not None and shared.copies:  # blocks read like an interior's but for a few tokens
        near = near_blocks.find(dfa, trie, step, blk_byte, blk_state, ~shared.handled, shared, ok)
        if near is not None:
            walk[near.block] = False
            shared.blk_inner[near.block] = shared.blk_inner[near.partner]
            shared.blk_copy[near.block] = shared.blk_copy[near.partner]
            log.info("lift: %d blocks read a shared interior's block, %d token ends of their own",
                     len(near.block), len(near.ends[0]))
        if len(dfa.src) > TRIM_ABOVE:
            trim_heap()
    chain = None
    if chained:  # grouped blocks are not walked: their representative's inside walk is, once per group
        skip = None if shared is None else ~walk | shared.handled  # (near blocks and interiors: walked otherwise)
        grp, shift, reps, limit = chain_blocks.groups(blk_byte, blk_state, levels, skip)
        levels = []  # (a class per state and level: not held through the search)
        walk &= grp < 0
        log.info("lift: %d blocks in %d groups of shift-equivalent blocks (%d partial)", int((grp >= 0).sum()), len(reps),
                 int((limit < chain_blocks.FULL).sum()))
    if shared is not None:  # interiors of large components from the memo; the BFS goes on from their exits
        walk &= ~shared.handled
        (c_b, c_n, c_s), (a_b, a_n, a_s) = shared.take_starts()
        if near is not None:  # the near blocks' own arcs: their exit ends, and pairs walked on
            _spell_into(out, trie, *near.ends, ok)
            c_b, c_n, c_s = (np.concatenate(pair) for pair in zip((c_b, c_n, c_s), near.conts))
            near = None
        node = index_concat([node[walk], c_n], trie.num_nodes)  # (int32 where they fit: 33 MB of o21328's
        state = index_concat([state[walk], c_s], S)  # first frontier, held through the groups' walks below)
        block = index_concat([block[walk], c_b], nb)
        _spell_into(out, trie, a_b, a_n, a_s, ok)  # (token ends inside interiors walked from the memo, not shared)
        del c_b, c_n, c_s, a_b, a_n, a_s
    elif chained:
        node, state, block = node[walk], state[walk], block[walk]
    if chained:  # the representatives' walks: inside arcs kept per group, exits walked on as usual
        ends, exits, fronts = _walk_inside(dfa, trie, is_abs, blk_byte[reps], blk_state[reps], limit)
        # the exits walked on once per exit identity (into a member's block, or a pseudo block copied below)
        (x_b, x_n, x_s), exit_of, ident = group_exits.member_exits(grp, shift, blk_state, limit, exits, trie.node_byte,
                                                                   dfa.step, S)
        # the groups' inside arcs spelled now, as int32 where they fit, and the token ends let go:
        # held through the search and `assemble` they were 100 MB (int64) on a large schema
        chain = chain_blocks.Chains(grp, shift, reps, spelled_taking(trie, ends, ok), exit_of)  # (`ends` emptied)
        # a partial group's members walk on from the representative's walk at the step limit, shifted
        f_b, f_n, f_s = group_exits.to_members(grp, shift, *fronts)
        node = index_concat([node, x_n, f_n], trie.num_nodes)  # (int32 where they fit: the frontier's first level)
        state = index_concat([state, x_s, f_s], S)
        block = index_concat([block, x_b, f_b], 2 * nb)  # (pseudo blocks nb + identity: fewer than nb)
        del exits, x_b, x_n, x_s, f_b, f_n, f_s, fronts  # (in the frontier now: not kept through the search)
    spells = trie.tok_ptr[1:] > trie.tok_ptr[:-1]  # (per trie node: a bool per frontier pair, not two int64 gathers)
    # The frontier is kept in pieces (in order), each walked and let go in turn: a wide level's
    # pairs are never held twice (old and new frontier whole, and the new one concatenated).
    block = narrow(block)  # (as `_Stepper.pieces` gives them; one column at a time, each int64 one let go
    node = narrow(node)  # as its int32 copy is made: kb_145's first frontier held both forms, its peak)
    state = narrow(state)
    front = [(block, node, state)]  # (the names rebound to the same columns by the first step's pop)
    if len(front[0][0]) > TRIM_ABOVE:  # (the temporaries of the blocks, walks and groups above, handed back)
        trim_heap()
    while front:
        first: list[tuple[np.ndarray, ...]] = []
        second: list[tuple[np.ndarray, ...]] = []
        front.reverse()  # (popped from the end: in order)
        while front:
            block, node, state = front.pop()
            has = spells[node]
            _spell_into(out, trie, block[has], node[has], state[has], ok)
            del has
            for one, two in step.pieces(node, state, block):  # (a step's trie side before its arc side)
                first.append(one)
                second.append(two)
            del node, state, block
        front = coalesced(first + second)
        del first, second
        _within_budget(sum(len(p) for p in out[0]))
        if sum(len(p[0]) for p in front) > TRIM_ABOVE:  # (a level's freed slices, under the next level's pieces)
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
    del dfa, step, shared, blk_byte, blk_state, spells
    if len(q_idx) > TRIM_ABOVE:  # (theirs, and the search's last freed slices, under the arcs' columns)
        trim_heap()
    # (the arcs as int32 pieces, taken once; they go to `assemble` in a list it empties, so no
    # copy of them stays referenced here while it runs)
    arcs = [part.take() for part in out]
    del out
    if chained and (ident >= 0).any():  # a partial group's exits: every member's own (tens of millions of arcs)
        arcs = [*group_exits.with_members(ident, arcs, nb)]

    # 3. Keep what is reachable from the start at token boundaries and can still finish.
    links = [q_idx, b_idx, pair_block]  # (taken by `assemble`, as the arcs: its filtered copies replace them)
    del q_idx, b_idx, pair_block
    chains = [chain] if chain is not None else None  # (taken by `assemble`: its group arcs go there)
    del chain
    fields = assemble(head, width, links, arcs, inner, chains)
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
    if (int((degree >= chain_blocks.MIN_DEGREE).sum()) < chain_blocks.MIN_SHIFTED
            or chain_levels.chain_states(S, dfa.ptr, dfa.src, dfa.dst) < chain_levels.MIN_CHAIN_STATES):
        return None  # (no chains: their classes would cost more than they share)
    is_abs = chain_blocks.absolute_arcs(S, dfa.src, dfa.dst, dfa.byte)  # (numbering-free: a first, cheap rejection)
    if not chain_blocks.worth_sharing(chain_blocks.unshifted_classes(dfa.ptr, dfa.src, dfa.byte, dfa.dst, is_abs), degree):
        return None
    old_id = chain_blocks.depth_first(S, dfa.start, dfa.ptr, dfa.dst)
    # the renumbered arcs, held through the whole lift, as int32 states and uint8 bytes (three
    # int64 columns were 132 MB of o21328's lift, under each of its peaks)
    new_id = np.empty(len(old_id), np.int32 if S < 2**31 else np.int64)
    new_id[old_id] = np.arange(len(old_id))
    src, dst = new_id[dfa.src], new_id[dfa.dst]
    o = order_by(src, dfa.byte)
    src, byte, dst, is_abs = src[o], dfa.byte[o].astype(np.uint8), dst[o], is_abs[o]  # (is_abs: numbering-free)
    del o  # (an int64 per arc, not held through the classes: 49 MB of kb_145's lift peak)
    levels = chain_levels.level_classes(S, src, byte, dst, is_abs, degree[old_id], trie)
    if not levels:
        return None
    return _Arcs(S, int(new_id[dfa.start]), dfa.final[old_id], src, byte, dst), old_id, levels, is_abs


def _walk_inside(dfa: _Arcs, trie: TokenTrie, is_abs: np.ndarray, byte: np.ndarray, state: np.ndarray,
                 limit: np.ndarray) -> tuple[list[np.ndarray], tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Each group representative's walk from ``state`` after first ``byte`` (group = index) until
    an absolute arc or its step ``limit``: ([group, node, state] of the token ends inside, int32
    where they fit; (group, child node, state before the absolute arc) of the exits; (group, node,
    state) of the walk at the limit, its token ends not counted inside)."""
    S = dfa.num_states
    to_exit = dfa.dst.astype(np.int32) if S < 2**31 - 1 else dfa.dst.copy()
    to_exit[is_abs] = S  # (an absolute arc leads out of the walk, to S: no state's id)
    step = _Stepper(dfa.with_dst(to_exit), trie)
    del to_exit
    g, node = np.arange(len(byte), dtype=np.int64), trie.depth1[byte]
    # the token ends as int32 pieces, joined a piece at a time: the int64 pieces and their join
    # (and the caller's int32 copy of it) were o45482's lift peak, 20 strings counted to 255
    ends = (Parts(), Parts(), Parts())
    exits, fronts = [], []
    steps = found = 0
    while len(node):
        cut = limit[g] <= steps
        if cut.any():
            fronts.append((g[cut], node[cut], state[cut]))
            g, node, state = g[~cut], node[~cut], state[~cut]
        has = trie.tok_ptr[node + 1] > trie.tok_ptr[node]
        for part, col in zip(ends, (g[has], node[has], state[has])):
            part.append(col)
        found += len(ends[0][-1])
        _within_budget(found)
        s, node, nxt = step(node, state)
        g, state = g[s], state[s]
        out = nxt == S
        exits.append((g[out], node[out], state[out]))
        g, node, state = g[~out], node[~out], nxt[~out].astype(np.int64)
        steps += 1
    return [p.take() for p in ends], _cat(exits), _cat(fronts)


def _spell_into(out: tuple[Parts, Parts, Parts], trie: TokenTrie, block: np.ndarray, node: np.ndarray,
                state: np.ndarray, ok: np.ndarray | None) -> None:
    """The token arcs of the ends ``(block, node, state)`` (`spelled`) appended to ``out``."""
    for part, col in zip(out, _expand(trie, block, node, state, ok)):
        part.append(col)


def _cat(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    return tuple(np.concatenate(x) for x in zip(*parts)) if parts else (np.zeros(0, np.int64),) * 3


def token_fst_bytes(fsa: TokenFSA) -> bytes:
    """The factored token automaton as an OpenFst acceptor: state q --eps--> block state, and
    block state --(token id + 1)--> next state. Its language is exactly the token language."""
    return factored_fst_bytes(0, fsa.final, fsa.state_block_ptr, fsa.state_block_id, fsa.state_block_offset,
                              fsa.state_block_exit, fsa.block_ptr, fsa.block_tokens.astype(np.int64), fsa.block_next)
