"""Step 5 of artifact validation (`artifact_validate`): every table's shape, dtype and index range
against the others, so neither the numpy lookups, the kernels (no bounds checks) nor the search can
read outside an array. Anything wrong raises :class:`~fstbeam.errors.ArtifactCorruptError`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from ..errors import ArtifactCorruptError

if TYPE_CHECKING:
    from .hard import HardTables
    from .light import LightAutomaton
    from .vocab import Vocab

_FIX = "the artifact is damaged or was edited: recompile it with compile-constraints"


def corrupt(path: Any, what: str) -> ArtifactCorruptError:
    return ArtifactCorruptError(f"{path}: {what}; {_FIX}")


def _need(ok: object, path: Any, what: str) -> None:
    if not bool(ok):
        raise corrupt(path, what)


def _ptr(p: np.ndarray, n: int, total: int, name: str, path: Any) -> None:
    _need(p.shape == (n + 1,), path, f"{name} must have {n + 1} entries")
    _need(p[0] == 0 and p[-1] == total and (np.diff(p) >= 0).all(), path,
          f"{name} must rise from 0 to {total} (offsets into an array of that length)")


def _range(a: np.ndarray, lo: int, hi: int, name: str, path: Any) -> None:
    _need(a.size == 0 or (int(a.min()) >= lo and int(a.max()) < hi), path, f"{name} must lie in [{lo}, {hi})")


def _keys(keys: np.ndarray, ptr: np.ndarray, radix: int, name: str, path: Any) -> None:
    """Sorted keys ``owner * radix + x`` whose owner matches the CSR row they sit in."""
    owner = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
    _need(keys.size == 0 or (int(keys.min()) >= 0 and (keys // radix == owner).all()), path,
          f"{name} must hold (row * {radix} + value) for the row each entry belongs to")
    _need(keys.size == 0 or (np.diff(keys) > 0).all(), path, f"{name} must be strictly increasing")


def check_hard(h: HardTables, width: int, eos_ids: Iterable[int], path: Any) -> None:
    """Every array of :class:`HardTables` against the others (docs/tables.md)."""
    from .bitmask import bitmask_width

    S, V = len(h.final), width
    E, K = len(h.state_block_key), len(h.block_key)
    NB = len(h.block_ptr) - 1
    _need(S >= 1 and 0 <= h.start < S, path, f"hard start state {h.start} must be one of the {S} states")
    _need(h.width == V, path, f"hard tables are {h.width} ids wide, the tokenizer {V}")
    for n in ("dist_to_final", "state_dense_row"):
        _need(getattr(h, n).shape == (S,), path, f"hard/{n} must have one entry per state ({S})")
    _need(int(h.dist_to_final.min()) >= 0, path, "hard/dist_to_final must be non-negative")
    _ptr(h.state_block_ptr, S, E, "hard/state_block_ptr", path)
    _keys(h.state_block_key, h.state_block_ptr, 256, "hard/state_block_key", path)
    _need(h.state_block_id.shape == (E,) and h.state_block_dense.shape == (E,), path,
          "hard/state_block_id and state_block_dense must match state_block_key")
    _need(NB >= 0, path, "hard/block_ptr is empty")
    _ptr(h.block_ptr, NB, K, "hard/block_ptr", path)
    _range(h.state_block_id, 0, NB, "hard/state_block_id", path)
    _keys(h.block_key, h.block_ptr, V, "hard/block_key", path)
    _need(h.block_next.shape == (K,), path, "hard/block_next must match hard/block_key")
    _range(h.block_next, 0, S, "hard/block_next", path)
    _check_shared(h, S, E, NB, V, path)
    W = bitmask_width(V)
    _need(h.dense_masks.ndim == 2 and h.dense_masks.shape[1] == W and h.dense_masks.shape[0] >= 1, path,
          f"hard/dense_masks must be [rows, {W}]")
    if V % 32:
        pad = np.int32(np.uint32(~((1 << (V % 32)) - 1) & 0xFFFFFFFF).view(np.int32))
        _need(not (h.dense_masks[:, -1] & pad).any(), path, "hard/dense_masks sets bits past the last token id")
    _range(h.state_dense_row, 0, h.dense_masks.shape[0], "hard/state_dense_row", path)
    _ptr(h.state_sparse_ptr, S, len(h.state_sparse_tokens), "hard/state_sparse_ptr", path)
    _range(h.state_sparse_tokens, 0, V, "hard/state_sparse_tokens", path)
    _need(h.token_first_byte.shape == (V,), path, f"hard/token_first_byte must have {V} entries")
    _range(h.token_first_byte, -1, 256, "hard/token_first_byte", path)
    _need(sorted(h.eos_ids.tolist()) == sorted(eos_ids), path, "hard/eos_ids disagrees with the tokenizer's EOS ids")


def _check_shared(h: HardTables, S: int, E: int, NB: int, V: int, path: Any) -> None:
    """Shared interiors (docs/tables.md): a link's offset keeps its block's next states in range;
    an exit block is a valid block, paired with one interior block only (its tokens read first:
    it may override some of the interior block's, `near_blocks`)."""
    off, ex = h.state_block_offset, h.state_block_exit
    _need(off.shape == (E,) and ex.shape == (E,), path,
          "hard/state_block_offset and state_block_exit must match state_block_key")
    _range(off, 0, S, "hard/state_block_offset", path)
    _range(ex, -1, NB, "hard/state_block_exit", path)
    if not (off.any() or (ex >= 0).any()):
        return
    sizes = np.diff(h.block_ptr)
    nonempty = sizes[h.state_block_id] > 0
    lo, hi = np.zeros(NB, np.int64), np.zeros(NB, np.int64)
    has = np.flatnonzero(sizes > 0)
    if len(has):
        starts = h.block_ptr[has]
        lo[has] = np.minimum.reduceat(h.block_next, starts)
        hi[has] = np.maximum.reduceat(h.block_next, starts)
    _need(((off + hi[h.state_block_id] < S) | ~nonempty).all(), path,
          f"hard/state_block_offset takes a link's next states past the {S} states")
    pairs = np.unique(np.stack([ex, h.state_block_id.astype(np.int64)], 1)[ex >= 0], axis=0)
    _need(len(np.unique(pairs[:, 0])) == len(pairs), path,
          "hard/state_block_exit: an exit block must belong to one interior block only")
    _need(not np.isin(pairs[:, 0], h.state_block_id).any(), path,
          "hard/state_block_exit: an exit block is read as a link's own block too")


def check_light(a: LightAutomaton, width: int, path: Any, where: str) -> None:
    """A light automaton's tables (docs/tables.md, "Light automata") against each other."""
    n, V = len(a.final), width
    _need(n >= 1 and 0 <= a.start < n, path, f"{where}: start {a.start} must be one of its {n} states")
    _need(a.width == V and len(a.literal) >= 1 and 0 not in a.literal, path, f"{where}: width or literal is wrong")
    _need(a.progress.shape == (n,), path, f"{where}: progress must have one entry per state")
    _range(a.progress, 0, a.length + 1, f"{where}/progress", path)  # length: max_progress for AnyOf / ordered
    _need(a.default_next.shape == (n, 4), path, f"{where}: default_next must be [{n}, 4]")
    _range(a.default_next, -1, n, f"{where}/default_next", path)
    X = len(a.exc_key)
    _need(a.exc_next.shape == (X,), path, f"{where}: exc_next must match exc_key")
    _range(a.exc_key, 0, n * V, f"{where}/exc_key", path)  # first: np.diff below must not overflow
    _need(X == 0 or (np.diff(a.exc_key) > 0).all(), path, f"{where}: exc_key must be strictly increasing")
    _range(a.exc_next, -1, n, f"{where}/exc_next", path)
    _ptr(a.adv_ptr, n, len(a.adv_tokens), f"{where}/adv_ptr", path)
    _range(a.adv_tokens, 0, V, f"{where}/adv_tokens", path)
    fb = a.fallback
    _need(fb.shape == (n,), path, f"{where}: fallback must have one entry per state")
    _range(fb, -1, n, f"{where}/fallback", path)
    has = np.flatnonzero(fb >= 0)
    if len(has):  # docs/tables.md, "Fallback states"
        f = fb[has]
        _need(a.kind == "phrase" and bool((a.default_next >= 0).all()) and bool((a.exc_next >= 0).all()), path,
              f"{where}: only a must-include automaton that disallows no token may have fallback states")
        _need(bool((fb[f] < 0).all()), path, f"{where}: a fallback state must have no fallback of its own")
        _need(bool((a.default_next[f] == a.default_next[has]).all()), path,
              f"{where}: a state and its fallback must have the same class defaults")
    tc = a.token_class
    _need(tc is not None and tc.shape == (V,), path, f"{where}: token_class must have {V} entries")
    _range(tc, 0, 5, f"{where}/token_class", path)


def check_against_vocab(h: HardTables, vocab: Vocab, path: Any) -> None:
    """The hard tables' first-byte table is the tokenizer's (lookups key on it)."""
    first = np.array([b[0] if b else -1 for b in vocab.token_bytes], dtype=np.int16)
    _need(np.array_equal(first, h.token_first_byte), path, "hard/token_first_byte disagrees with the tokenizer's tokens")
    # Each block holds tokens of one first byte, and is linked from states under that byte: what
    # the lookups (state, first byte) -> block -> token rely on.
    V = len(first)
    sizes = np.diff(h.block_ptr)
    tok_first = first[h.block_key % V].astype(np.int64)
    block_byte = np.full(len(sizes), -1, np.int64)
    block_byte[np.repeat(np.arange(len(sizes)), sizes)] = tok_first
    _need((tok_first >= 0).all() and (np.repeat(block_byte, sizes) == tok_first).all(), path,
          "hard/block_key mixes tokens of different first bytes (or tokens without text) in one block")
    linked = block_byte[h.state_block_id]
    _need(((linked < 0) | (linked == h.state_block_key % 256)).all(), path,
          "hard/state_block_key links a block under a byte its tokens do not start with")
    ex = h.state_block_exit
    linked = np.where(ex >= 0, block_byte[np.maximum(ex, 0)], -1)
    _need(((linked < 0) | (linked == h.state_block_key % 256)).all(), path,
          "hard/state_block_exit links an exit block under a byte its tokens do not start with")
