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

from ...fst.labels import token_to_label
from ...fst.vector_fst import vector_fst_bytes_by_count
from ..char_dfa import CharDFA
from . import shared_walks
from .token_trie import TokenTrie

log = logging.getLogger(__name__)
UNREACHABLE = np.iinfo(np.int32).max


@dataclass(frozen=True, eq=False)
class TokenFSA:
    """Factored token automaton (see docs/tables.md). States are renumbered, start = 0."""

    width: int
    final: np.ndarray  # bool [S]
    dist_to_final: np.ndarray  # int32 [S]
    state_block_ptr: np.ndarray  # int64 [S+1]
    state_block_byte: np.ndarray  # uint8 [NSB]
    state_block_id: np.ndarray  # int32 [NSB]
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
        return len(self.block_tokens) + len(self.state_block_id)

    def expanded_arcs(self) -> int:
        """Arcs a flat (unfactored) token automaton would need."""
        sizes = np.diff(self.block_ptr)
        return int(sizes[self.state_block_id].sum())


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
        if isinstance(dfa, CharDFA):
            q, b = np.nonzero(dfa.next >= 0)  # row-major: sorted by state, then byte
            return _Arcs(dfa.num_states, dfa.start, dfa.final, q, b, dfa.next[q, b].astype(np.int64))
        # a TextDFA (fstbeam.fst.wordlist.text_dfa): start 0, arcs already sorted
        return _Arcs(dfa.num_states, 0, dfa.final, dfa.src, dfa.byte.astype(np.int64), dfa.dst)

    @staticmethod
    def plain(num_states: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray) -> "_Arcs":
        """Arcs sorted by (state, byte), start 0, no final states (a walk needs none)."""
        return _Arcs(num_states, 0, np.zeros(num_states, bool), src, byte, dst)

    @cached_property
    def ptr(self) -> np.ndarray:
        return _csr(self.src, self.num_states)

    @cached_property
    def key(self) -> np.ndarray:
        return self.src * 256 + self.byte  # sorted

    def step(self, state: np.ndarray, byte: np.ndarray) -> np.ndarray:
        """Next state for each (state, byte) pair, -1 where there is no arc."""
        key = state * 256 + byte
        pos = np.minimum(np.searchsorted(self.key, key), max(len(self.key) - 1, 0))
        if not len(self.key):
            return np.full(len(key), -1, np.int64)
        return np.where(self.key[pos] == key, self.dst[pos], -1)


def lift(dfa, trie: TokenTrie, width: int, *, allowed_tokens: np.ndarray | None = None,
         share_walks: bool | None = None) -> TokenFSA:
    """Token automaton for ``dfa`` (a `CharDFA` or a word list's `TextDFA`) over the tokens in
    ``trie`` (optionally only ``allowed_tokens``). ``share_walks``: take the walks of large
    components' interiors from the process's memo (`shared_walks`; default: for a `CharDFA`,
    i.e. grammars and structured constraints, not word lists, whose text is one component)."""
    t0 = time.perf_counter()
    if share_walks is None:
        share_walks = isinstance(dfa, CharDFA)
    dfa = _Arcs.of(dfa)
    S = dfa.num_states
    # 1. Distinct (first byte, state after it) pairs become blocks.
    has_tok = trie.depth1[dfa.byte] >= 0
    q_idx, b_idx, r_idx = dfa.src[has_tok], dfa.byte[has_tok], dfa.dst[has_tok]
    pair_key = b_idx.astype(np.int64) * S + r_idx
    uniq_keys, pair_block = np.unique(pair_key, return_inverse=True)
    nb = len(uniq_keys)
    blk_byte = (uniq_keys // S).astype(np.int64)
    blk_state = (uniq_keys % S).astype(np.int64)

    # 2. BFS over (trie node, char state, block), emitting (block, node, state) at token ends.
    node = trie.depth1[blk_byte]
    state = blk_state
    block = np.arange(nb, dtype=np.int64)
    empty = np.zeros(0, np.int64)
    out_block, out_node, out_state = [empty], [empty], [empty]
    step = _Stepper(dfa, trie)
    if share_walks:  # interiors of large components from the memo; the BFS goes on from their exits
        shared = shared_walks.share(dfa, trie, blk_byte, blk_state, _Arcs.plain, _Stepper)
        if shared is not None:
            handled, (e_b, e_n, e_s), (c_b, c_n, c_s) = shared
            out_block.append(e_b)
            out_node.append(e_n)
            out_state.append(e_s)
            node = np.concatenate([node[~handled], c_n])
            state = np.concatenate([state[~handled], c_s])
            block = np.concatenate([block[~handled], c_b])
    while len(node):
        has = trie.tok_ptr[node + 1] > trie.tok_ptr[node]
        out_block.append(block[has])
        out_node.append(node[has])
        out_state.append(state[has])
        src, node, state = step(node, state)
        block = block[src]
    e_block = np.concatenate(out_block)
    e_node = np.concatenate(out_node)
    e_state = np.concatenate(out_state)
    # Expand nodes into their token ids. Nearly every node spells one token: those are a gather;
    # only the few with several ids (bytes shared by two ids) are expanded. The order does not
    # matter: `_assemble` sorts the arcs.
    first = trie.tok_ptr[e_node]
    n_tok = trie.tok_ptr[e_node + 1] - first
    multi = np.flatnonzero(n_tok > 1)
    more = concat_ranges(first[multi] + 1, first[multi] + n_tok[multi])  # the ids after each first
    tokens = np.concatenate([trie.tok_ids[first], trie.tok_ids[more]]).astype(np.int64)
    extra = np.repeat(multi, n_tok[multi] - 1)
    tblock = np.concatenate([e_block, e_block[extra]])
    tnext = np.concatenate([e_state, e_state[extra]])
    if allowed_tokens is not None:
        ok = np.zeros(width, bool)
        ok[allowed_tokens] = True
        sel = ok[tokens]
        tokens, tblock, tnext = tokens[sel], tblock[sel], tnext[sel]

    # 3. Keep what is reachable from the start at token boundaries and can still finish.
    fsa = _assemble(dfa, width, q_idx, b_idx, pair_block, tblock, tokens, tnext)
    log.info(
        "lift: %d char states -> %d token states, %d blocks, %d token arcs stored (%d unfactored) in %.3f s",
        S, fsa.num_states, fsa.num_blocks, len(fsa.block_tokens), fsa.expanded_arcs(), time.perf_counter() - t0,
    )
    return fsa


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
        n_children = trie.child_hi - trie.child_lo
        parent = np.repeat(np.arange(trie.num_nodes), n_children)  # of nodes 1..N-1, in id order
        self.child_key = parent * 256 + trie.node_byte[1:]  # sorted: children are id ranges by byte

    def __call__(self, node: np.ndarray, state: np.ndarray):
        """(source pair index, child node, next state) of every surviving extension."""
        t = self.trie
        lo, hi = t.child_lo[node], t.child_hi[node]
        alo, ahi = self.arc_ptr[state], self.arc_ptr[state + 1]
        by_trie = (hi - lo) <= (ahi - alo)
        i = np.flatnonzero(by_trie)
        rep = np.repeat(i, (hi - lo)[i])
        child = concat_ranges(lo[i], hi[i])
        ns = self.dfa.step(state[rep], t.node_byte[child].astype(np.int64))
        keep = ns >= 0
        src1, child1, ns1 = rep[keep], child[keep], ns[keep]
        j = np.flatnonzero(~by_trie)
        rep = np.repeat(j, (ahi - alo)[j])
        arc = concat_ranges(alo[j], ahi[j])
        key = node[rep] * 256 + self.arc_byte[arc]
        pos = np.minimum(np.searchsorted(self.child_key, key), len(self.child_key) - 1)
        found = self.child_key[pos] == key if len(self.child_key) else np.zeros(len(key), bool)
        return (
            np.concatenate([src1, rep[found]]),
            np.concatenate([child1, pos[found] + 1]),
            np.concatenate([ns1, self.arc_next[arc[found]]]),
        )


def _csr(keys: np.ndarray, n: int) -> np.ndarray:
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr


def _distances(final, sb_state, sb_block, e_block, e_next, nb, S) -> np.ndarray:
    """Fewest tokens from each state to a final state (UNREACHABLE if none): a breadth-first
    search backwards from the final states, each arc and state-block link visited once."""
    dist = np.full(S, UNREACHABLE, np.int64)
    seen = np.asarray(final, bool).copy()
    dist[seen] = 0
    blocks_by_next, next_ptr = grouped(e_next, e_block, S)
    states_by_block, block_ptr = grouped(sb_block, sb_state, nb)
    block_seen = np.zeros(nb, bool)
    b_stamp, s_stamp = np.zeros(nb, np.int64), np.zeros(S, np.int64)
    frontier, d = np.flatnonzero(seen), 0
    while len(frontier):
        d += 1
        blocks = _first_seen(blocks_by_next[_ranges(next_ptr, frontier)], block_seen, b_stamp)
        frontier = _first_seen(states_by_block[_ranges(block_ptr, blocks)], seen, s_stamp)
        dist[frontier] = d
    return dist


def _reachable(start, sb_state, sb_block, e_block, e_next, nb, S) -> np.ndarray:
    seen = np.zeros(S, bool)
    seen[start] = True
    blocks_by_state, sb_ptr = grouped(sb_state, sb_block, S)
    next_by_block, e_ptr = grouped(e_block, e_next, nb)
    frontier = np.array([start])
    block_seen = np.zeros(nb, bool)
    b_stamp, s_stamp = np.zeros(nb, np.int64), np.zeros(S, np.int64)
    while len(frontier):
        blocks = _first_seen(blocks_by_state[_ranges(sb_ptr, frontier)], block_seen, b_stamp)
        frontier = _first_seen(next_by_block[_ranges(e_ptr, blocks)], seen, s_stamp)
    return seen


def _first_seen(ids: np.ndarray, seen: np.ndarray, stamp: np.ndarray) -> np.ndarray:
    """The ids not yet ``seen``, each once (marked seen); O(len(ids)), no sort."""
    ids = ids[~seen[ids]]
    pos = np.arange(len(ids))
    stamp[ids] = pos  # the last write wins: keep one occurrence of each id
    ids = ids[stamp[ids] == pos]
    seen[ids] = True
    return ids


def order_by(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """``np.lexsort((minor, major))`` for non-negative ints; one argsort of a packed key when
    both fit in 63 bits (a third of lexsort's time on millions of arcs), none when the pairs
    are already in order."""
    if not len(major):
        return np.zeros(0, np.int64)
    shift = int(minor.max()).bit_length()
    if shift + int(major.max()).bit_length() > 63:
        return np.lexsort((minor, major))
    key = (major.astype(np.int64) << shift) | minor
    if not (key[1:] < key[:-1]).any():
        return np.arange(len(key))
    return np.argsort(key, kind="stable")


def grouped(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(``values`` ordered by ``keys``, ties by value; CSR pointers over keys ``0..n-1``), for
    non-negative ints. One unstable sort of packed (key, value) words where they fit in 63 bits:
    5x faster than a stable argsort plus a gather at ten million entries."""
    ptr = _csr(keys, n)
    if not len(keys):
        return np.zeros(0, np.int64), ptr
    shift = int(values.max()).bit_length()
    if shift + int(n).bit_length() > 63:
        return values[np.lexsort((values, keys))].astype(np.int64), ptr
    packed = np.sort((keys.astype(np.int64) << shift) | values)
    return packed & ((1 << shift) - 1), ptr


def sorted_triples(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, c)`` reordered by ``(a, b)`` (non-negative ints, pairs distinct); one sort of a
    packed word when all three fit in 63 bits, else a lexsort."""
    if not len(a):
        return a, b, c
    sb, sc = int(b.max()).bit_length(), int(c.max()).bit_length()
    if sb + sc + int(a.max()).bit_length() > 63:
        o = np.lexsort((b, a))
        return a[o], b[o], c[o]
    packed = np.sort((((a.astype(np.int64) << sb) | b) << sc) | c)
    return packed >> (sb + sc), (packed >> sc) & ((1 << sb) - 1), packed & ((1 << sc) - 1)


def concat_ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(lo[i], hi[i])`` for every i, without a Python loop."""
    counts = hi - lo
    out = np.arange(int(counts.sum()), dtype=np.int64)
    out += np.repeat(lo - (np.cumsum(counts) - counts), counts)  # one repeat, added in place
    return out


def _ranges(ptr: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of CSR rows ``ids`` in ``ptr``'s value arrays, concatenated."""
    return concat_ranges(ptr[ids], ptr[ids + 1])


def _assemble(dfa, width, q_idx, b_idx, pair_block, e_block, e_tok, e_next) -> TokenFSA:
    S, nb = dfa.num_states, int(pair_block.max()) + 1 if len(pair_block) else 0
    final = dfa.final
    dist = _distances(final, q_idx, pair_block, e_block, e_next, nb, S)
    alive_arc = dist[e_next] < UNREACHABLE
    if not alive_arc.all():  # (a word list: every arc is alive; skip copying ten million arcs)
        e_block, e_tok, e_next = e_block[alive_arc], e_tok[alive_arc], e_next[alive_arc]
    blk_nonempty = np.bincount(e_block, minlength=nb) > 0
    sb_keep = blk_nonempty[pair_block]
    q_idx, b_idx, pair_block = q_idx[sb_keep], b_idx[sb_keep], pair_block[sb_keep]
    reach = _reachable(dfa.start, q_idx, pair_block, e_block, e_next, nb, S)
    keep_state = reach & (dist < UNREACHABLE)
    if not keep_state[dfa.start]:
        keep_state[:] = False
        keep_state[dfa.start] = True  # an empty language: just the start, no arcs, not final
    # Renumber states (start first) and blocks.
    order = np.concatenate([[dfa.start], np.nonzero(keep_state & (np.arange(S) != dfa.start))[0]])
    new_id = np.full(S, -1, np.int64)
    new_id[order] = np.arange(len(order))
    sb_keep = keep_state[q_idx]
    q_idx, b_idx, pair_block = new_id[q_idx[sb_keep]], b_idx[sb_keep], pair_block[sb_keep]
    used = np.zeros(nb, bool)
    used[pair_block] = True
    blk_new = np.full(nb, -1, np.int64)
    blk_new[used] = np.arange(int(used.sum()))
    pair_block = blk_new[pair_block]
    e_keep = used[e_block]
    if not e_keep.all():
        e_block, e_tok, e_next = e_block[e_keep], e_tok[e_keep], e_next[e_keep]
    e_block, e_next = blk_new[e_block], new_id[e_next]
    nbn, Sn = int(used.sum()), len(order)

    sb_order = order_by(q_idx, b_idx)
    e_block, e_tok, e_next = sorted_triples(e_block, e_tok, e_next)
    fin = final[order].copy()
    d = dist[order].astype(np.int32)
    if not (dist[dfa.start] < UNREACHABLE):
        fin[:] = False
    return TokenFSA(
        width=width,
        final=fin,
        dist_to_final=d,
        state_block_ptr=_csr(q_idx, Sn),
        state_block_byte=b_idx[sb_order].astype(np.uint8),
        state_block_id=pair_block[sb_order].astype(np.int32),
        block_ptr=_csr(e_block, nbn),
        block_tokens=e_tok.astype(np.int32),
        block_next=e_next.astype(np.int32),
        char_state=order.astype(np.int32),
    )


def token_fst_bytes(fsa: TokenFSA) -> bytes:
    """The factored token automaton as an OpenFst acceptor: state q --eps--> block state, and
    block state --(token id + 1)--> next state. Its language is exactly the token language."""
    S, NB = fsa.num_states, fsa.num_blocks
    counts = np.concatenate([np.diff(fsa.state_block_ptr), np.diff(fsa.block_ptr)])
    final = np.concatenate([fsa.final, np.zeros(NB, bool)])
    # Arcs in state order: every state's eps links (to S + block), then every block's tokens.
    parts = [(0, S + fsa.state_block_id.astype(np.int64)), (token_to_label(fsa.block_tokens), fsa.block_next)]
    return vector_fst_bytes_by_count(S + NB, 0, final, counts, parts)
