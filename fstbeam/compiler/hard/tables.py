"""Build the hard automaton's device-ready tables (`fstbeam.contract.hard`, docs/tables.md).

Large blocks (the word-boundary fan-out) become bit-packed dense rows shared by every state
that uses the same combination of them; the rest of a state's tokens is a short sorted list.
One mask row for one hypothesis is then a row pointer plus a short list, independent of how
many tokens are allowed.
"""
from __future__ import annotations

import numpy as np

from ...contract.bitmask import bitmask_width, pack_bool_mask
from ...contract.cache import shared_cache
from ...contract.hard import HardTables
from ...contract.layout import BYTE_KEYS
from ...contract.vocab import Vocab
from .array_ops import TRIM_ABOVE, narrow, run_starts, step_slices, trim_heap, unique
from .lift.token_fsa import TokenFSA, concat_ranges, order_by

# A block with at least this many tokens is stored as bits. Below it a sorted id list is smaller
# (32 KiB per dense row at 262,144 ids vs 4 bytes per listed token) and cheaper to build per step.
DENSE_MIN_TOKENS = 256
# A state whose small blocks add up to more than this (the start state: every word-initial token
# without a space) gets them in its own dense row instead, so no mask needs a long sparse list.
SPARSE_MAX_TOKENS = 512

# A small block joins a dense row used by at least this many states if this fraction of them
# have it.
SHARED_MIN_STATES = 64
SHARED_FRACTION = 0.9


def build_tables(
    fsa: TokenFSA | list[TokenFSA],
    vocab: Vocab,
    *,
    dense_min: int = DENSE_MIN_TOKENS,
    sparse_max: int = SPARSE_MAX_TOKENS,
) -> HardTables:
    """The tables of ``fsa``. Given as ``[fsa]``, it is taken out of the list (emptied): where the
    caller keeps no other reference, its token column (80 MB on a large schema) goes once the
    block keys are built, before the dense rows (`automaton.compile_hard`)."""
    if isinstance(fsa, list):
        fsa_ = fsa.pop()
        fsa.clear()
        fsa = fsa_
        del fsa_
    V, S = vocab.width, fsa.num_states
    sizes = np.diff(fsa.block_ptr)
    NB = fsa.num_blocks
    link_state = np.repeat(np.arange(S, dtype=np.int32 if S < 2**31 else np.int64), np.diff(fsa.state_block_ptr))
    # (state, block) pairs: each link's block, then the exit blocks of links into shared
    # interiors (a state's tokens are the union of both; its pairs stay contiguous). As int32
    # where they fit: held through both dense searches (kb_1004's 6.5 million pairs, 52 MB less)
    has_exit = fsa.state_block_exit >= 0
    n_links = len(link_state)
    sb_state = np.concatenate([link_state, link_state[has_exit]])
    sb_block = narrow(np.concatenate([fsa.state_block_id, fsa.state_block_exit[has_exit]]))
    if has_exit.any():
        o = np.argsort(sb_state, kind="stable")
        sb_state, sb_block, is_link = sb_state[o], sb_block[o], o < n_links
        del o
    else:
        is_link = np.ones(n_links, bool)
    overrides = bool(has_exit.any())
    del has_exit
    pair_size = sizes[sb_block]
    dense_pairs = pair_size >= dense_min
    sparse_total = np.bincount(sb_state, weights=np.where(dense_pairs, 0, pair_size), minlength=S)
    dense_pairs |= sparse_total[sb_state] > sparse_max
    del pair_size, sparse_total
    # A small block that (nearly) every state of a large dense row also uses (punctuation after
    # each word end) joins that row: those states keep sharing one row instead of each repeating
    # the block in its sparse list (C2: 10.3M sparse ids -> 1.7M). A row splits only where a
    # few states lack the block, so the number of rows barely grows.
    row0, _ = _dense_combinations(sb_state[dense_pairs], sb_block[dense_pairs], S)
    row_size = np.bincount(row0, minlength=int(row0.max()) + 1)
    key = row0[sb_state].astype(np.int64) * (NB + 1) + sb_block
    cand = ~dense_pairs & (row0[sb_state] > 0)
    uniq, inv, cnt = np.unique(key[cand], return_inverse=True, return_counts=True)
    size = row_size[uniq // (NB + 1)]
    in_all = (cnt >= SHARED_FRACTION * size) & (size >= SHARED_MIN_STATES)
    dense_pairs[np.flatnonzero(cand)[in_all[inv]]] = True
    del row0, row_size, key, cand, uniq, inv, cnt, size, in_all
    # (the per-link columns of the result now, and every per-pair temporary gone, before the
    # large arrays below: the tables' peak is their sum)
    state_block_dense = dense_pairs[is_link]  # the link's own block is in the state's dense row
    state_block_key = link_state.astype(np.int64) * BYTE_KEYS + fsa.state_block_byte
    del link_state, is_link

    # Dense rows: distinct combinations of dense blocks per state (row 0 = none).
    state_row, combo_blocks = _dense_combinations(sb_state[dense_pairs], sb_block[dense_pairs], S)

    # Sparse lists: tokens of each state's small blocks, sorted.
    sp = ~dense_pairs
    sp_state, sp_block = sb_state[sp], sb_block[sp]
    del sp, sb_state, sb_block, dense_pairs
    tok_state, toks = _sparse_pairs(sp_state, sp_block, fsa.block_ptr, fsa.block_tokens, V)
    del sp_state, sp_block
    if overrides:  # an exit block may override its interior's tokens (`near_blocks`): each token once
        once = run_starts(tok_state, toks)
        tok_state, toks = tok_state[once], toks[once]
        del once
    sparse_ptr = np.zeros(S + 1, dtype=np.int64)
    np.cumsum(np.bincount(tok_state, minlength=S), out=sparse_ptr[1:])

    sparse_tokens = toks.astype(np.int32)
    del tok_state, toks  # (per sparse token: gone before the per-arc key below)
    if len(fsa.block_tokens) > TRIM_ABOVE:  # the per-link temporaries above, freed into glibc's heap,
        trim_heap()  # handed back before the keys and the dense rows (mapped anew: they cannot reuse it)
    first = _first_bytes(vocab)
    # (block * V + token) built in one int64 column, in place: a lift's tens of millions of arcs
    block_key = np.repeat(np.arange(len(sizes), dtype=np.int64) * V, sizes)
    block_key += fsa.block_tokens
    # the rows read their tokens from the keys: the token column can go with the automaton
    fields = {k: getattr(fsa, k) for k in ("final", "dist_to_final", "state_block_id", "state_block_ptr", "block_next",
                                          "block_ptr", "state_block_offset", "state_block_exit")}
    del fsa
    dense_masks, row_of_combo = _dense_rows(combo_blocks, fields["block_ptr"], block_key, V)
    state_row = row_of_combo[state_row]
    if overrides:  # (and a sparse token that the state's dense row holds too: there only)
        sparse_ptr, sparse_tokens = _outside_rows(sparse_ptr, sparse_tokens, dense_masks, state_row)
    # (the token automaton's arrays are shared, not copied: both are read-only, and the lift's
    # next states alone are 80 MB on a large schema)
    return HardTables(
        start=0,
        width=V,
        final=fields["final"],
        dist_to_final=fields["dist_to_final"],
        state_block_key=state_block_key,
        state_block_id=fields["state_block_id"],
        state_block_ptr=fields["state_block_ptr"],
        block_key=block_key,
        block_next=fields["block_next"],
        block_ptr=fields["block_ptr"],
        state_block_dense=state_block_dense,
        dense_masks=dense_masks,
        state_dense_row=state_row,
        state_sparse_ptr=sparse_ptr,
        state_sparse_tokens=sparse_tokens,
        token_first_byte=first,
        eos_ids=np.asarray(vocab.eos_ids, dtype=np.int32),
        state_block_offset=fields["state_block_offset"].astype(np.int64, copy=False),
        state_block_exit=fields["state_block_exit"].astype(np.int32, copy=False),
    )


def _dense_combinations(dstate: np.ndarray, dblock: np.ndarray, S: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """(row of each state, blocks of each row): states with equal lists of dense blocks share a
    row, row 0 has none; the other rows are ordered by the length of their list, then by the list
    (compared block by block). ``dstate`` is sorted: a state's blocks are contiguous.

    States are grouped by their list's length and two polynomial hashes of it, every state is
    then compared with its group's first state block by block (a hash collision falls back to
    `_dense_combinations_by_position`), and only the groups are sorted: no Python per state, and
    no pass per list position (the lists of a string interior's states are ~200 blocks long)."""
    count = np.bincount(dstate, minlength=S)
    first = np.cumsum(count) - count
    has = np.flatnonzero(count)
    if not len(has):
        return np.zeros(S, np.int32), [dblock[:0]]
    pos = np.arange(len(dblock)) - np.repeat(first[has], count[has])  # each pair's place in its list
    block = dblock.astype(np.int64)
    hashes = []
    for base in (1_000_003, 998_244_353):
        power = np.ones(int(count.max()), np.int64)
        for k in range(1, len(power)):  # (a few hundred steps at most: the longest list)
            power[k] = power[k - 1] * base % _HASH_MOD
        term = power[pos]  # ((block + 1) * power[pos] % mod, in place: one column per pair, not three)
        term *= block + 1
        term %= _HASH_MOD
        hashes.append(np.add.reduceat(term, first[has]))
        del term
    _, grp_first, grp = np.unique(np.stack([count[has], *hashes], axis=1), axis=0, return_index=True,
                                  return_inverse=True)
    grp = grp.ravel()
    rep = has[grp_first]  # a state of each group
    at = np.repeat(first[rep[grp]], count[has])  # each pair's counterpart in its group's first list
    at += pos
    del pos
    same = block == block[at]
    del at
    if not same.all():  # two lists with equal hashes (never seen): compare them position by position
        return _dense_combinations_by_position(dstate, dblock, S)
    # groups in (length, list) order: the rows' order
    lists = [dblock[first[q]:first[q] + count[q]] for q in rep.tolist()]
    n_grp = len(rep)
    order = _by_length_then_list(dblock, first[rep], count[rep])
    row_of_grp = np.empty(n_grp, np.int64)
    row_of_grp[order] = np.arange(1, n_grp + 1)
    row = np.zeros(S, np.int64)
    row[has] = row_of_grp[grp]
    return row.astype(np.int32), [dblock[:0]] + [lists[g] for g in order.tolist()]


_HASH_MOD = (1 << 31) - 1
# Lists of dense blocks sorted as one padded [lists, longest] matrix up to this many cells.
SORT_MATRIX_CELLS = 1 << 24
# ... filled in one pass up to this many cells, else a list position at a time
FILL_AT_ONCE_CELLS = 1 << 20


def _by_length_then_list(dblock: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Order of the lists ``dblock[start[g]:start[g] + length[g]]``: by length, then by the list
    (compared block by block), as Python sorts ``(len, list)``; one lexsort over the lists padded
    to a matrix (a Python sort of 12,700 lists of ~200 blocks was 0.5 CPU-s of jscsrc's tables)."""
    n, longest = len(start), int(length.max()) if len(length) else 0
    if n * longest > SORT_MATRIX_CELLS:
        lists = [dblock[a:a + k].tolist() for a, k in zip(start.tolist(), length.tolist())]
        return np.array(sorted(range(n), key=lambda g: (len(lists[g]), lists[g])), np.int64)
    # (equal lengths compare equal paddings)
    padded = np.full((longest, n), -1, np.int32 if len(dblock) and int(dblock.max()) < 2**31 else np.int64)
    if n * longest <= FILL_AT_ONCE_CELLS:
        col = np.repeat(np.arange(n), length)
        flat = concat_ranges(start, start + length)
        padded[np.arange(len(flat)) - np.repeat(np.cumsum(length) - length, length), col] = dblock[flat]
    else:  # a position at a time: a whole fill's index columns were four int64 per block (o21328's peak)
        for j in range(longest):
            has = np.flatnonzero(length > j)
            padded[j, has] = dblock[start[has] + j]
    return np.lexsort((*padded[::-1], length)).astype(np.int64)


def _dense_combinations_by_position(dstate: np.ndarray, dblock: np.ndarray, S: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """`_dense_combinations` comparing the lists exactly, one position at a time."""
    count = np.bincount(dstate, minlength=S)
    first = np.cumsum(count) - count  # dstate is sorted: a state's blocks are contiguous
    rank = np.zeros(S, np.int64)
    for j in range(int(count.max()) if S else 0):
        has = np.flatnonzero(count > j)
        key = rank[has] * (int(dblock.max()) + 1) + dblock[first[has] + j]
        _, inv = np.unique(key, return_inverse=True)
        rank[has] = int(rank.max()) + 1 + inv
    rank[count == 0] = -1  # keep row 0 for "no dense block"
    uniq, row = np.unique(rank, return_inverse=True)
    if not len(uniq) or uniq[0] != -1:
        row = row + 1
    reps = np.zeros(int(row.max()) + 1 if S else 1, np.int64)
    reps[row] = np.arange(S)
    blocks = [dblock[first[q]:first[q] + count[q]] for q in reps.tolist()]
    blocks[0] = dblock[:0]
    return row.astype(np.int32), blocks


def _dense_rows(combo_blocks: list[np.ndarray], ptr: np.ndarray, block_key: np.ndarray,
                V: int) -> tuple[np.ndarray, np.ndarray]:
    """(bit rows, row of each combination): the OR of each combination's blocks, each distinct row
    stored once. Combinations of different blocks often hold the same tokens: blocks belong to
    states, and every string interior's blocks hold the same ~250k tokens (jscsrc: 12,696
    combinations, 183 distinct rows: 397 MB -> 6 MB). Blocks holding the same tokens are one
    *class* (`_token_classes`): a combination is its set of classes, and a set met before takes
    its row without marking anything (a median schema: ~100 combinations of ~2,000 blocks,
    ~30 sets of ~300 classes). The current row's tokens are marked in one
    reused row, packed once per row (packing every block into its own 32 KiB row first cost
    a gigabyte of zeroed rows at a million words). Going from one row to the next only unmarks
    the classes it drops and marks the ones it adds: the rows that share a string's ~250k interior
    tokens (its UTF-8 continuation states) do not mark them again. A mark counts the row's
    classes that hold the token, so classes that share tokens (an exit block that overrides its
    interior's, `near_blocks`) unmark exactly (marking a row anew wherever they met cost 8x the
    marking of 30 median schemas). A block's tokens are read from its keys (``block * V + token``, `build_tables`)."""
    width = bitmask_width(V)
    marks = np.zeros(width * 32, dtype=np.int32)  # per token: the current row's classes holding it
    rows = [np.zeros(width, dtype=np.int32)]  # row 0: no dense block
    row_of: dict[bytes, int] = {rows[0].tobytes(): 0}
    row_of_combo = np.zeros(len(combo_blocks), dtype=np.int32)
    cls, first_block = _token_classes(combo_blocks, ptr, block_key, V)

    def toks(c: int) -> np.ndarray:  # class c's tokens, from its first block's keys (b * V + token)
        b = int(first_block[c])
        return block_key[ptr[b]:ptr[b + 1]] - b * V

    row_of_set: dict[bytes, int] = {}
    current: set[int] = set()
    for row, blocks in enumerate(combo_blocks):
        if not len(blocks):
            continue
        classes = unique(cls[blocks])
        key = classes.tobytes()
        found = row_of_set.get(key)
        if found is None:
            ids = set(classes.tolist())
            for c in current - ids:
                marks[toks(c)] -= 1
            for c in ids - current:
                marks[toks(c)] += 1
            current = ids
            packed = pack_bool_mask(marks > 0)  # (packs to exactly ``width`` words)
            found = row_of_set[key] = row_of.setdefault(packed.tobytes(), len(rows))
            if found == len(rows):
                rows.append(packed)
        row_of_combo[row] = found
    return np.stack(rows), row_of_combo


def _token_classes(combo_blocks: list[np.ndarray], ptr: np.ndarray, block_key: np.ndarray,
                   V: int) -> tuple[np.ndarray, np.ndarray]:
    """(class of each block, first block of each class): the blocks of the combinations grouped
    by their tokens (other blocks: -1). Candidates are found by each block's size and the sums of
    its keys and their squares (one pass over the keys, no gather: ``sum(t)`` and ``sum(t * t)``
    follow from them and the block's ``b * V``), then compared token by token with their
    candidate class's first block; a block that differs (never seen) is a class of its own."""
    cls = np.full(len(ptr) - 1, -1, np.int64)
    used = unique(np.concatenate(combo_blocks)) if len(combo_blocks) > 1 else np.zeros(0, np.int64)
    if not len(used):
        return cls, used
    n = (ptr[used + 1] - ptr[used]).astype(np.uint64)
    key = block_key.view(np.uint64)  # (keys are non-negative: the same values, no copy)
    nonempty = np.flatnonzero(np.diff(ptr) > 0)  # (reduceat over the nonempty blocks: every key counted once)
    s1 = np.zeros(len(ptr) - 1, np.uint64)
    s2 = np.zeros(len(ptr) - 1, np.uint64)
    # (a few million keys at a time: a large schema's keys are tens of millions, and a temporary
    # per key, as the squares, was half a gigabyte of jscsrc's tables stage)
    lo_, hi_ = ptr[nonempty], ptr[nonempty + 1]
    cuts = step_slices(hi_ - lo_, CLASS_CHUNK_KEYS) if len(nonempty) else np.zeros(1, np.int64)
    for i, j in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        k = key[lo_[i]:hi_[j - 1]]
        at = lo_[i:j] - lo_[i]
        s1[nonempty[i:j]] = np.add.reduceat(k, at)
        s2[nonempty[i:j]] = np.add.reduceat(k * k, at)
        del k
    off = used.astype(np.uint64) * np.uint64(V)  # (sums mod 2**64: exact for equal token lists)
    t1 = s1[used] - n * off
    t2 = s2[used] - np.uint64(2) * off * t1 - n * off * off
    _, first, inv = np.unique(np.stack([n, t1, t2], axis=1), axis=0, return_index=True, return_inverse=True)
    inv = inv.ravel()
    # compare each block with its candidate's first block where they are not the same block
    dup = np.flatnonzero(first[inv] != np.arange(len(used)))
    wrong = np.zeros(len(used), bool)
    a, b = used[dup], used[first[inv[dup]]]
    lens = ptr[a + 1] - ptr[a]
    cuts = step_slices(lens, CLASS_CHUNK_KEYS)
    for i, j in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        aa, bb = a[i:j], b[i:j]
        diff = block_key[concat_ranges(ptr[aa], ptr[aa + 1])] - block_key[concat_ranges(ptr[bb], ptr[bb + 1])]
        diff -= np.repeat((aa - bb) * V, lens[i:j])
        wrong[dup[i + np.unique(np.repeat(np.arange(j - i), lens[i:j])[diff != 0])]] = True
        del diff
    if wrong.any():
        inv = np.where(wrong, len(first) + np.arange(len(used)), inv)
        _, first, inv = np.unique(inv, return_index=True, return_inverse=True)
    cls[used] = inv
    return cls, used[first]


# Keys read at a time by `_token_classes` (`step_slices`: a block larger than this is read alone),
# and sparse tokens by `_outside_rows`.
CLASS_CHUNK_KEYS = 1 << 20  # (a chunk's temporaries: some five int64 columns of its keys)


SPARSE_SLICE_TOKENS = 1 << 21  # sparse tokens per slice of `_sparse_pairs` (a few int64 columns of a slice)


def _sparse_pairs(sp_state: np.ndarray, sp_block: np.ndarray, block_ptr: np.ndarray, block_tokens: np.ndarray,
                  width: int) -> tuple[np.ndarray, np.ndarray]:
    """(state, token) of every token of each (state, small block) pair, sorted by state, then
    token (int32 where they fit). Packed as ``state << bits | token`` a slice of pairs at a time
    into one int64 column, sorted in place and unpacked: whole, the positions, the states, the
    tokens, their order and its gathers were at once the tables' peak (o21328, kb_251)."""
    lo = block_ptr[sp_block]
    counts = block_ptr[sp_block + 1] - lo
    bits = max(int(width - 1).bit_length(), 1)
    n_states = int(sp_state.max()) + 1 if len(sp_state) else 0
    if n_states.bit_length() + bits > 63:  # (never at a real vocabulary: the plain sort by pairs)
        pos = concat_ranges(lo, lo + counts)
        tok_state, toks = np.repeat(sp_state, counts), block_tokens[pos]
        order = order_by(tok_state, toks)
        return tok_state[order], toks[order]
    key = np.empty(int(counts.sum()), np.int64)
    at = 0
    cuts = step_slices(counts, SPARSE_SLICE_TOKENS)
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        n = counts[a:b]
        part = np.repeat(sp_state[a:b].astype(np.int64) << bits, n)
        part |= block_tokens[concat_ranges(lo[a:b], lo[a:b] + n)]
        key[at:at + len(part)] = part
        at += len(part)
    del lo, counts
    key.sort()
    toks = np.empty(len(key), np.int32 if width <= 2**31 else np.int64)
    for a in range(0, len(key), SPARSE_SLICE_TOKENS):  # (unpacked a slice at a time, in place)
        toks[a:a + SPARSE_SLICE_TOKENS] = key[a:a + SPARSE_SLICE_TOKENS] & ((1 << bits) - 1)
    key >>= bits
    return narrow(key), toks


def _first_bytes(vocab: Vocab) -> np.ndarray:
    """int16 [V]: each token's first byte, -1 for tokens without text (kept per tokenizer in the
    process's byte-budget cache)."""

    def build() -> np.ndarray:
        first = np.full(vocab.width, -1, dtype=np.int16)
        for i, b in enumerate(vocab.token_bytes):
            if b:
                first[i] = b[0]
        return first

    return shared_cache().get(("first-bytes", vocab.fingerprint), build).copy()


def _outside_rows(ptr: np.ndarray, tokens: np.ndarray, dense_masks: np.ndarray,
                  state_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each state's sparse tokens less those its dense row holds (the two parts stay disjoint
    where an exit block overrides tokens of a dense interior block)."""
    S = len(ptr) - 1
    keep = np.empty(len(tokens), bool)
    counts = np.zeros(S, np.int64)
    for a in range(0, len(tokens), CLASS_CHUNK_KEYS):  # (a slice at a time: whole, five int64 columns per token)
        b = min(len(tokens), a + CLASS_CHUNK_KEYS)
        state = np.searchsorted(ptr, np.arange(a, b), side="right") - 1
        t = tokens[a:b].astype(np.int64)
        word = dense_masks[state_row[state], t >> 5]
        k = ((word >> (t & 31)) & 1) == 0
        keep[a:b] = k
        counts += np.bincount(state[k], minlength=S)
    if keep.all():
        return ptr, tokens
    out = np.zeros_like(ptr)
    np.cumsum(counts, out=out[1:])
    return out, tokens[keep]
