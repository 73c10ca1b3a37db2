"""The hard automaton's device-ready tables (layout: docs/tables.md) and host-side lookups.

Written by `fstbeam.compiler.hard.tables.build_tables`, read by the runtime and the matcher.
"""
from __future__ import annotations

from dataclasses import dataclass

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

    ARRAYS = (
        "final", "dist_to_final", "state_block_key", "state_block_id", "state_block_ptr", "block_key",
        "block_next", "block_ptr", "state_block_dense", "dense_masks", "state_dense_row", "state_sparse_ptr",
        "state_sparse_tokens", "token_first_byte", "eos_ids",
    )

    @property
    def num_states(self) -> int:
        return len(self.final)

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, n).nbytes for n in self.ARRAYS)

    def arrays(self) -> dict[str, np.ndarray]:
        return {n: getattr(self, n) for n in self.ARRAYS}

    # ---- host-side lookups (tests, matcher, debugging) ----------------------------------------
    def next_state(self, state: int, token: int) -> int:
        """Next state after text token ``token`` in ``state``; -1 if not allowed."""
        if not 0 <= token < self.width or self.token_first_byte[token] < 0:
            return -1
        key = state * BYTE_KEYS + int(self.token_first_byte[token])
        i = int(np.searchsorted(self.state_block_key, key))
        if i >= len(self.state_block_key) or self.state_block_key[i] != key:
            return -1
        bkey = int(self.state_block_id[i]) * self.width + token
        j = int(np.searchsorted(self.block_key, bkey))
        if j >= len(self.block_key) or self.block_key[j] != bkey:
            return -1
        return int(self.block_next[j])

    def allowed_text_tokens(self, state: int) -> np.ndarray:
        """Sorted ids of the text tokens allowed in ``state`` (EOS excluded)."""
        lo, hi = self.state_block_ptr[state], self.state_block_ptr[state + 1]
        parts = []
        for b in self.state_block_id[lo:hi]:
            parts.append(self.block_key[self.block_ptr[b]:self.block_ptr[b + 1]] % self.width)
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    def mask_row(self, state: int) -> tuple[np.ndarray, np.ndarray]:
        """(dense bit row, sparse token ids) for ``state`` — what the decoder builds a mask from."""
        return (
            self.dense_masks[self.state_dense_row[state]],
            self.state_sparse_tokens[self.state_sparse_ptr[state]:self.state_sparse_ptr[state + 1]],
        )

    def token_fst(self) -> bytes:
        """The factored token automaton as an OpenFst acceptor (the artifact's ``token.fst``):
        state q --eps--> block state S + b, block state --(token id + 1)--> next state. Its
        language is exactly the tables'. Written on demand (saving an artifact): building the
        42 MB of bytes for a CEFR C2 compile cost 0.2 s of every compile."""
        S, NB = self.num_states, len(self.block_ptr) - 1
        sizes = np.diff(self.block_ptr)
        tokens = self.block_key - np.repeat(np.arange(NB, dtype=np.int64), sizes) * self.width
        counts = np.concatenate([np.diff(self.state_block_ptr), sizes])
        final = np.concatenate([np.asarray(self.final, bool), np.zeros(NB, bool)])
        # Arcs in state order: every state's eps links (to S + block), then every block's tokens.
        parts = [(0, S + self.state_block_id.astype(np.int64)), (tokens + TOKEN_LABEL_OFFSET, self.block_next)]
        return vector_fst_bytes_by_count(S + NB, int(self.start), final, counts, parts)
