"""A key/value cache whose rows can be reordered, dropped and added without recomputation.

Hugging Face's ``DynamicCache`` concatenates a new column on every step (a full copy of the cache)
and knows nothing of rows joining mid-decode. :class:`RowCache` is a ``transformers`` ``Cache``
whose layers keep preallocated buffers ``[rows, heads, capacity, head_dim]``:

- ``update`` (called by the model) writes the new columns in place and returns views;
- :meth:`RowCache.select` reorders rows (beam reorder, retiring finished inputs). On CPU it works
  in place and copies only the rows that change (the search keeps a beam's first child at its
  parent's row, so most rows stay: about 8 of 40 move per step instead of 40); elsewhere, and
  when rows are repeated into a larger batch, it gathers into fresh buffers;
- :func:`fork_cache` gives a second handle on the same rows, for taking some rows out (both
  handles are marked shared: the next row operation on either writes fresh buffers, so the
  other is untouched);
- :func:`concat_caches` left-pads the shorter cache with empty columns and stacks the rows (new
  inputs joining the batch, for streaming). Which columns are real is tracked by the adapter
  (``kv_pos``), which masks the padding out with an explicit attention mask.
"""
from __future__ import annotations

import copy

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

__all__ = ["RowKVLayer", "RowCache", "concat_caches", "fork_cache", "moved_rows"]

_CHUNK = 32  # capacity grows in steps of this many columns


def _cap(n: int) -> int:
    return (n + _CHUNK - 1) // _CHUNK * _CHUNK + _CHUNK


class RowKVLayer(CacheLayerMixin):
    """One layer's keys and values in a growable buffer; ``keys``/``values`` are views."""

    is_croppable = False

    def __init__(self, **kwargs):  # noqa: D401 - no call to the mixin: keys/values are properties here
        self.kbuf: torch.Tensor | None = None
        self.vbuf: torch.Tensor | None = None
        self.T = 0
        self.is_initialized = False
        self.shared = False  # buffers also referenced by a fork: row operations copy

    # -- views used by the models -----------------------------------------------------------------
    @property
    def keys(self):
        return None if self.kbuf is None else self.kbuf[:, :, : self.T]

    @keys.setter
    def keys(self, value):
        self._set("kbuf", value)

    @property
    def values(self):
        return None if self.vbuf is None else self.vbuf[:, :, : self.T]

    @values.setter
    def values(self, value):
        self._set("vbuf", value)

    def _set(self, name, value):
        if value is None:
            setattr(self, name, None)
            return
        setattr(self, name, value)
        self.T = value.shape[2]
        self.is_initialized = True

    # -- CacheLayerMixin ------------------------------------------------------------------------
    def lazy_initialization(self, key_states, value_states) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        R, H, _, D = key_states.shape
        cap = _cap(key_states.shape[2])
        self.kbuf = key_states.new_empty(R, H, cap, D)
        self.vbuf = value_states.new_empty(R, value_states.shape[1], cap, value_states.shape[3])
        self.T = 0
        self.is_initialized = True

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized or self.kbuf is None:
            self.lazy_initialization(key_states, value_states)
        q = key_states.shape[2]
        if self.T + q > self.kbuf.shape[2]:
            self._grow(self.T + q)
        self.kbuf[:, :, self.T : self.T + q] = key_states
        self.vbuf[:, :, self.T : self.T + q] = value_states
        self.T += q
        return self.keys, self.values

    def _grow(self, need: int) -> None:
        cap = _cap(need)

        def grown(old: torch.Tensor) -> torch.Tensor:
            new = old.new_empty(old.shape[0], old.shape[1], cap, old.shape[3])
            new[:, :, : self.T] = old[:, :, : self.T]
            return new

        self.kbuf, self.vbuf = grown(self.kbuf), grown(self.vbuf)
        self.shared = False

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.T + query_length, 0

    def get_seq_length(self) -> int:
        return self.T

    def get_max_length(self) -> int:
        return -1

    def reset(self) -> None:
        self.kbuf = self.vbuf = None
        self.T = 0
        self.is_initialized = False

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.select(beam_idx)

    # -- row operations ---------------------------------------------------------------------------
    def select(self, idx: torch.Tensor, moved: "tuple[torch.Tensor, torch.Tensor] | None" = None) -> None:
        """Keep rows ``idx``; ``moved`` = (rows that change, their sources), from
        :func:`moved_rows`: then in place, else into fresh buffers."""
        if self.kbuf is None:
            return
        if moved is not None and not self.shared and idx.shape[0] <= self.kbuf.shape[0]:
            dst, src = moved
            for buf in (self.kbuf, self.vbuf):
                live = buf[:, :, : self.T]
                if dst.numel():  # through a copy of the sources: a source may itself be overwritten
                    live.index_copy_(0, dst, live.index_select(0, src))
            self.kbuf, self.vbuf = self.kbuf[: idx.shape[0]], self.vbuf[: idx.shape[0]]
            return

        def gathered(old: torch.Tensor) -> torch.Tensor:
            new = old.new_empty(idx.shape[0], old.shape[1], old.shape[2], old.shape[3])
            torch.index_select(old[:, :, : self.T], 0, idx, out=new[:, :, : self.T])
            return new

        self.kbuf, self.vbuf = gathered(self.kbuf), gathered(self.vbuf)
        self.shared = False

    def drop_left(self, n: int) -> None:
        """Remove the first ``n`` columns (padding that no row needs any more)."""
        if n <= 0 or self.kbuf is None:
            return
        def trimmed(old: torch.Tensor) -> torch.Tensor:
            new = old.new_empty(old.shape[0], old.shape[1], _cap(self.T - n), old.shape[3])
            new[:, :, : self.T - n] = old[:, :, n : self.T]
            return new

        self.kbuf, self.vbuf = trimmed(self.kbuf), trimmed(self.vbuf)
        self.T -= n
        self.shared = False


def _concat_layers(layers: list[RowKVLayer]) -> RowKVLayer:
    T = max(l.T for l in layers)
    ref = next(l for l in layers if l.kbuf is not None)
    rows = sum(l.kbuf.shape[0] for l in layers if l.kbuf is not None)
    out = RowKVLayer()
    out.dtype, out.device = ref.kbuf.dtype, ref.kbuf.device
    cap = _cap(T)

    def joined(r: torch.Tensor, bufs: list) -> torch.Tensor:
        new = r.new_zeros(rows, r.shape[1], cap, r.shape[3])
        at = 0
        for l, b in zip(layers, bufs):
            if b is None:
                continue
            n = b.shape[0]
            new[at : at + n, :, T - l.T : T] = b[:, :, : l.T]  # left-pad: real columns end at T
            at += n
        return new

    out.kbuf = joined(ref.kbuf, [l.kbuf for l in layers])
    out.vbuf = joined(ref.vbuf, [l.vbuf for l in layers])
    out.T = T
    out.is_initialized = True
    out.shared = False
    return out


class RowCache(Cache):
    """A ``transformers`` cache of :class:`RowKVLayer` (one per attention layer)."""

    def __init__(self):
        super().__init__(layer_class_to_replicate=RowKVLayer)

    @property
    def T(self) -> int:
        return self.layers[0].T if self.layers else 0

    @property
    def rows(self) -> int:
        return self.layers[0].kbuf.shape[0] if self.layers and self.layers[0].kbuf is not None else 0

    def select(self, idx: torch.Tensor) -> None:
        moved = moved_rows(idx) if idx.device.type == "cpu" and self.rows >= idx.shape[0] else None
        for layer in self.layers:
            layer.select(idx, moved)

    def drop_left(self, n: int) -> None:
        for layer in self.layers:
            layer.drop_left(n)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.select(beam_idx)

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self.select(indices)


def moved_rows(idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows ``j`` with ``idx[j] != j``, ``idx`` there): what an in-place select copies. On CPU
    only: the count is a host read (free there, a sync on an accelerator)."""
    dst = (idx != torch.arange(idx.shape[0], device=idx.device)).nonzero().squeeze(1)
    return dst, idx.index_select(0, dst)


def fork_cache(cache: RowCache) -> RowCache:
    """A cache with its own layer objects over the same buffers. Only for a row operation
    (``select``) right away; both handles are marked shared, so the next row operation on
    either writes fresh buffers (two handles must not both ``update``)."""
    out = RowCache()
    for layer in cache.layers:
        layer.shared = True
    out.layers = [copy.copy(layer) for layer in cache.layers]
    return out


def concat_caches(caches: list[RowCache]) -> RowCache:
    """Rows of ``caches`` stacked, each left-padded with zero columns to the longest."""
    out = RowCache()
    n_layers = max(len(c.layers) for c in caches)
    out.layers = [_concat_layers([c.layers[i] for c in caches]) for i in range(n_layers)]
    return out
