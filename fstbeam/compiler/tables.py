"""Build the hard automaton's device-ready tables (`fstbeam.contract.hard`, docs/tables.md).

Large blocks (the word-boundary fan-out) become bit-packed dense rows shared by every state
that uses the same combination of them; the rest of a state's tokens is a short sorted list.
One mask row for one hypothesis is then a row pointer plus a short list, independent of how
many tokens are allowed.
"""
from __future__ import annotations

import numpy as np

from ..contract.bitmask import bitmask_width, pack_ids
from ..contract.hard import HardTables
from ..contract.layout import BYTE_KEYS
from ..contract.vocab import Vocab
from .token_fsa import TokenFSA, concat_ranges

# A block with at least this many tokens is stored as bits. Below it a sorted id list is smaller
# (32 KiB per dense row at 262,144 ids vs 4 bytes per listed token) and cheaper to build per step.
DENSE_MIN_TOKENS = 256
# A state whose small blocks add up to more than this (the start state: every word-initial token
# without a space) gets them in its own dense row instead, so no mask needs a long sparse list.
SPARSE_MAX_TOKENS = 512


def build_tables(
    fsa: TokenFSA, vocab: Vocab, *, dense_min: int = DENSE_MIN_TOKENS, sparse_max: int = SPARSE_MAX_TOKENS
) -> HardTables:
    V, S = vocab.width, fsa.num_states
    sizes = np.diff(fsa.block_ptr)
    sb_state = np.repeat(np.arange(S), np.diff(fsa.state_block_ptr))
    pair_size = sizes[fsa.state_block_id]
    dense_pairs = pair_size >= dense_min
    sparse_total = np.bincount(sb_state, weights=np.where(dense_pairs, 0, pair_size), minlength=S)
    dense_pairs |= sparse_total[sb_state] > sparse_max

    # Dense rows: distinct combinations of dense blocks per state (row 0 = none).
    combos: dict[tuple[int, ...], int] = {(): 0}
    state_row = np.zeros(S, dtype=np.int32)
    dstate, dblock = sb_state[dense_pairs], fsa.state_block_id[dense_pairs]
    if len(dstate):
        splits = np.flatnonzero(np.diff(dstate)) + 1
        for st, blks in zip(np.split(dstate, splits), np.split(dblock, splits)):
            state_row[st[0]] = combos.setdefault(tuple(blks.tolist()), len(combos))
    W = bitmask_width(V)
    dense_masks = np.zeros((len(combos), W), dtype=np.int32)
    block_rows = {}
    for combo, row in combos.items():
        acc = np.zeros(W, dtype=np.int32)
        for b in combo:
            if b not in block_rows:
                block_rows[b] = pack_ids(fsa.block_tokens[fsa.block_ptr[b]:fsa.block_ptr[b + 1]], V)
            acc |= block_rows[b]
        dense_masks[row] = acc

    # Sparse lists: tokens of each state's small blocks, sorted.
    sp = ~dense_pairs
    sp_state, sp_block = sb_state[sp], fsa.state_block_id[sp]
    lo, hi = fsa.block_ptr[sp_block], fsa.block_ptr[sp_block + 1]
    counts = hi - lo
    pos = concat_ranges(lo, hi)
    tok_state = np.repeat(sp_state, counts)
    toks = fsa.block_tokens[pos]
    order = np.lexsort((toks, tok_state))
    sparse_ptr = np.zeros(S + 1, dtype=np.int64)
    np.cumsum(np.bincount(tok_state, minlength=S), out=sparse_ptr[1:])

    first = np.full(V, -1, dtype=np.int16)
    for i, b in enumerate(vocab.token_bytes):
        if b:
            first[i] = b[0]
    blk_of_entry = np.repeat(np.arange(len(sizes)), sizes)
    return HardTables(
        start=0,
        width=V,
        final=fsa.final.copy(),
        dist_to_final=fsa.dist_to_final.copy(),
        state_block_key=sb_state.astype(np.int64) * BYTE_KEYS + fsa.state_block_byte,
        state_block_id=fsa.state_block_id.copy(),
        state_block_ptr=fsa.state_block_ptr.copy(),
        block_key=blk_of_entry.astype(np.int64) * V + fsa.block_tokens,
        block_next=fsa.block_next.copy(),
        block_ptr=fsa.block_ptr.copy(),
        state_block_dense=dense_pairs,
        dense_masks=dense_masks,
        state_dense_row=state_row,
        state_sparse_ptr=sparse_ptr,
        state_sparse_tokens=toks[order].astype(np.int32),
        token_first_byte=first,
        eos_ids=np.asarray(vocab.eos_ids, dtype=np.int32),
    )
