"""The hard automaton's device-ready tables (layout: docs/tables.md) and host-side lookups.

Written by `fstbeam.compiler.hard.tables.build_tables`, read by the runtime and the matcher.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..fst.labels import TOKEN_LABEL_OFFSET
from ..fst.vector_fst import vector_fst_bytes_by_count
from .layout import BYTE_KEYS

__all__ = ["HardTables"]


@dataclass(frozen=True, eq=False)
class HardTables:
    start: int
    width: int
    final: np.ndarray
    dist_to_final: np.ndarray
    state_block_key: np.ndarray
    state_block_id: np.ndarray
    state_block_ptr: np.ndarray
    block_key: np.ndarray
    block_next: np.ndarray
    block_ptr: np.ndarray
    state_block_dense: np.ndarray
    dense_masks: np.ndarray
    state_dense_row: np.ndarray
    state_sparse_ptr: np.ndarray
    state_sparse_tokens: np.ndarray
    token_first_byte: np.ndarray
    eos_ids: np.ndarray
    # Shared interiors (docs/tables.md): per link, the offset added to its block's next states
    # and its exit block (-1: none). Absent (older artifacts, word lists): zeros and -1.
    state_block_offset: np.ndarray = field(default=None)  # type: ignore[arg-type]
    state_block_exit: np.ndarray = field(default=None)  # type: ignore[arg-type]

    ARRAYS = (
        "final", "dist_to_final", "state_block_key", "state_block_id", "state_block_ptr", "block_key",
        "block_next", "block_ptr", "state_block_dense", "dense_masks", "state_dense_row", "state_sparse_ptr",
        "state_sparse_tokens", "token_first_byte", "eos_ids",
    )
    #: Stored only where some link uses them (`arrays`); read as zeros / -1 where absent.
    OPTIONAL = ("state_block_offset", "state_block_exit")

    def __post_init__(self) -> None:
        n = len(self.state_block_id)
        if self.state_block_offset is None:
            object.__setattr__(self, "state_block_offset", np.zeros(n, np.int64))
        if self.state_block_exit is None:
            object.__setattr__(self, "state_block_exit", np.full(n, -1, np.int32))

    @property
    def shared(self) -> bool:
        """Some link reads a shared interior (an offset) or an exit block."""
        return bool(self.state_block_offset.any() or (self.state_block_exit >= 0).any())

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays().values())

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to store: the optional ones only where some link uses them."""
        out = {n: getattr(self, n) for n in self.ARRAYS}
        if self.shared:
            out.update((n, getattr(self, n)) for n in self.OPTIONAL)
        return out

    # ---- host-side lookups (tests, matcher, debugging) ----------------------------------------
    def next_state(self, state: int, token: int) -> int:
        """Next state after text token ``token`` in ``state``; -1 if not allowed."""
        if not 0 <= token < self.width or self.token_first_byte[token] < 0:
            return -1
        key = state * BYTE_KEYS + int(self.token_first_byte[token])
        i = int(np.searchsorted(self.state_block_key, key))
        if i >= len(self.state_block_key) or self.state_block_key[i] != key:
            return -1
        exit_block = int(self.state_block_exit[i])
        if exit_block >= 0:  # a token that leaves a shared interior: absolute next state
            j = self._find(exit_block, token)
            if j >= 0:
                return int(self.block_next[j])
        j = self._find(int(self.state_block_id[i]), token)
        return -1 if j < 0 else int(self.block_next[j]) + int(self.state_block_offset[i])

    def _find(self, block: int, token: int) -> int:
        bkey = block * self.width + token
        j = int(np.searchsorted(self.block_key, bkey))
        return j if j < len(self.block_key) and self.block_key[j] == bkey else -1

    def allowed_text_tokens(self, state: int) -> np.ndarray:
        """Sorted ids of the text tokens allowed in ``state`` (EOS excluded)."""
        lo, hi = self.state_block_ptr[state], self.state_block_ptr[state + 1]
        parts = []
        blocks = np.concatenate([self.state_block_id[lo:hi], self.state_block_exit[lo:hi]])
        for b in blocks[blocks >= 0]:
            parts.append(self.block_key[self.block_ptr[b]:self.block_ptr[b + 1]] % self.width)
        if not parts:
            return np.zeros(0, np.int64)
        ids = np.concatenate(parts)
        if len(ids) < 4096:
            return np.unique(ids)  # (an exit may repeat its block's tokens)
        seen = np.zeros(self.width, bool)  # (a string's ~250k tokens: np.unique took 31 ms a step, this 1)
        seen[ids] = True
        return np.flatnonzero(seen)

    def mask_row(self, state: int) -> tuple[np.ndarray, np.ndarray]:
        """(dense bit row, sparse token ids) for ``state`` — what the decoder builds a mask from."""
        return (
            self.dense_masks[self.state_dense_row[state]],
            self.state_sparse_tokens[self.state_sparse_ptr[state]:self.state_sparse_ptr[state + 1]],
        )

    def token_fst_arcs(self) -> int:
        """How many arcs `token_fst` would write, counted without building it: a shared interior
        block is written once per offset a link reads it at, so this can be hundreds of times the
        tables' token arcs (a JSON Schema's string interiors)."""
        if not self.shared:  # (no token column needed: each block is one block state)
            return len(self.state_block_id) + len(self.block_key)
        NB = len(self.block_ptr) - 1
        tokens = self.block_key - np.repeat(np.arange(NB, dtype=np.int64), np.diff(self.block_ptr)) * self.width
        return factored_fst_arcs(self.state_block_ptr, self.state_block_id, self.state_block_offset,
                                 self.state_block_exit, self.block_ptr, tokens)

    def token_fst(self) -> bytes:
        """The factored token automaton as an OpenFst acceptor (the artifact's ``token.fst``):
        state q --eps--> block state, block state --(token id + 1)--> next state. Its language
        is exactly the tables'. Written on demand (saving an artifact): building the 42 MB of
        bytes for a CEFR C2 compile cost 0.2 s of every compile."""
        NB = len(self.block_ptr) - 1
        tokens = self.block_key - np.repeat(np.arange(NB, dtype=np.int64), np.diff(self.block_ptr)) * self.width
        return factored_fst_bytes(
            int(self.start), np.asarray(self.final, bool), self.state_block_ptr, self.state_block_id,
            self.state_block_offset, self.state_block_exit, self.block_ptr, tokens, self.block_next,
        )


def _shared_links(S: int, sb_id: np.ndarray, sb_off: np.ndarray, sb_exit: np.ndarray, block_ptr: np.ndarray,
                  tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The epsilon links of the shared form, main links then exits: (which links have an exit,
    each link's block, the distinct block states as rows (block, offset, block whose tokens it
    leaves out or -1), each link's block state among them), or None where no link is shared
    (each block is then one block state). A link whose exit block overrides tokens of its own
    block (`near_blocks`) reads a block state of its own without them: the flat automaton
    stays deterministic, and its language the tables'."""
    sb_off, sb_exit = np.asarray(sb_off, np.int64), np.asarray(sb_exit, np.int64)
    has = sb_exit >= 0
    if not (sb_off.any() or has.any()):
        return None
    sb_id = np.asarray(sb_id, np.int64)
    minus = np.where(exit_overrides(sb_id, sb_exit, block_ptr, tokens), sb_exit, -1)
    e_block = np.concatenate([sb_id, sb_exit[has]])
    e_off = np.concatenate([sb_off, np.zeros(int(has.sum()), np.int64)])
    e_minus = np.concatenate([minus, np.full(int(has.sum()), -1, np.int64)])
    rows, bstate = np.unique(np.stack([e_block, e_off, e_minus], 1), axis=0, return_inverse=True)
    return has, e_block, rows, bstate.reshape(-1)


def exit_overrides(sb_id: np.ndarray, sb_exit: np.ndarray, block_ptr: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """bool per link: its exit block holds a token of its own block (read first: it overrides)."""
    out = np.zeros(len(sb_id), bool)
    has = np.flatnonzero(sb_exit >= 0)
    if not len(has) or not len(tokens):
        return out
    pairs, inv = np.unique(np.stack([sb_exit[has], sb_id[has]], 1), axis=0, return_inverse=True)
    n, pos = _positions(block_ptr, pairs[:, 0])
    held = _held_by(block_ptr, tokens, pos, np.repeat(pairs[:, 1], n))
    out[has] = (np.bincount(np.repeat(np.arange(len(pairs)), n)[held], minlength=len(pairs)) > 0)[inv.reshape(-1)]
    return out


def _positions(block_ptr: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(size of each of ``blocks``, the positions of their tokens in the block arrays, in order)."""
    ptr = np.asarray(block_ptr, np.int64)
    n = ptr[blocks + 1] - ptr[blocks]
    return n, np.arange(int(n.sum()), dtype=np.int64) + np.repeat(ptr[blocks] - (np.cumsum(n) - n), n)


def _held_by(block_ptr: np.ndarray, tokens: np.ndarray, pos: np.ndarray, other: np.ndarray) -> np.ndarray:
    """bool per position ``pos`` of the block arrays: block ``other`` (-1: none) holds its token."""
    ptr, tokens = np.asarray(block_ptr, np.int64), np.asarray(tokens, np.int64)
    V = int(tokens.max()) + 1 if len(tokens) else 1
    keys = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64) * V, np.diff(ptr)) + tokens  # (sorted)
    want = np.maximum(other, 0) * V + tokens[pos]
    j = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
    return (other >= 0) & (keys[j] == want) if len(keys) else np.zeros(len(pos), bool)


def _block_state_arcs(rows: np.ndarray, block_ptr: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(arc count per block state, positions of its tokens in the block arrays, in order): each
    row's block, less the tokens of the block it leaves out."""
    n, pos = _positions(block_ptr, rows[:, 0])
    minus = rows[:, 2]
    if not (minus >= 0).any():
        return n, pos
    row = np.repeat(np.arange(len(rows)), n)
    keep = ~_held_by(block_ptr, tokens, pos, minus[row])
    return np.bincount(row[keep], minlength=len(rows)), pos[keep]


def factored_fst_arcs(sb_ptr: np.ndarray, sb_id: np.ndarray, sb_off: np.ndarray, sb_exit: np.ndarray,
                      block_ptr: np.ndarray, tokens: np.ndarray) -> int:
    """The arc count of `factored_fst_bytes` for the same tables (epsilon links plus each block
    state's tokens), in a few passes over the links only (and the tokens of overriding exits)."""
    S = len(sb_ptr) - 1
    sizes = np.diff(block_ptr)
    links = _shared_links(S, sb_id, sb_off, sb_exit, block_ptr, tokens)
    if links is None:
        return len(sb_id) + int(sizes.sum())
    _, e_block, rows, _ = links
    if not (rows[:, 2] >= 0).any():
        return len(e_block) + int(sizes[rows[:, 0]].sum())
    return len(e_block) + int(_block_state_arcs(rows, block_ptr, tokens)[0].sum())


def factored_fst_bytes(start: int, final: np.ndarray, sb_ptr: np.ndarray, sb_id: np.ndarray, sb_off: np.ndarray,
                       sb_exit: np.ndarray, block_ptr: np.ndarray, tokens: np.ndarray, nexts: np.ndarray) -> bytes:
    """OpenFst bytes of a factored token automaton. Without shared interiors each block is one
    block state; with them, one block state per distinct (block, offset) a link reads (a shared
    interior's next states are relative), plus the exit blocks, and a link with an exit has a
    second epsilon arc to it (a block it overrides is read less the exit's tokens: still
    deterministic)."""
    S = len(final)
    sizes = np.diff(block_ptr)
    links = _shared_links(S, sb_id, sb_off, sb_exit, block_ptr, tokens)
    if links is None:
        counts = np.concatenate([np.diff(sb_ptr), sizes])
        fin = np.concatenate([final, np.zeros(len(sizes), bool)])
        # Arcs in state order: every state's eps links (to S + block), then every block's tokens.
        parts = [(0, S + np.asarray(sb_id, np.int64)), (tokens + TOKEN_LABEL_OFFSET, nexts)]
        return vector_fst_bytes_by_count(S + len(sizes), start, fin, counts, parts)
    has, _, rows, bstate = links
    link_state = np.repeat(np.arange(S, dtype=np.int64), np.diff(sb_ptr))
    # eps arcs per state: its main links and its exits, grouped by state
    e_state = np.concatenate([link_state, link_state[has]])
    o = np.argsort(e_state, kind="stable")
    n_arcs, pos = _block_state_arcs(rows, block_ptr, tokens)
    counts = np.concatenate([np.bincount(e_state, minlength=S), n_arcs])
    fin = np.concatenate([final, np.zeros(len(rows), bool)])
    arc_next = np.asarray(nexts, np.int64)[pos] + np.repeat(rows[:, 1], n_arcs)
    parts = [(0, S + bstate[o]), (np.asarray(tokens, np.int64)[pos] + TOKEN_LABEL_OFFSET, arc_next)]
    return vector_fst_bytes_by_count(S + len(rows), start, fin, counts, parts)
