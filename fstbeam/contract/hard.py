"""The hard automaton's device-ready tables (layout: docs/tables.md) and host-side lookups.

Written by `fstbeam.compiler.hard.tables.build_tables`, read by the runtime and the matcher.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
