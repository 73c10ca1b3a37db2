"""One in-memory cache with one byte budget for everything built per tokenizer or per automaton
(vocabularies, token tries, token indexes, character automata).

Least recently used entries go first once the estimated bytes exceed the budget; an entry larger
than the whole budget is returned but not kept. ``FSTBEAM_CACHE_BYTES`` sets the process-wide
budget (default 2 GiB; Gemma's vocabulary, trie and index take about 250 MB together).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

import numpy as np

__all__ = ["ByteCache", "approx_nbytes", "shared_cache"]

_DEFAULT_BYTES = 2 << 30


def approx_nbytes(obj: Any, depth: int = 2) -> int:
    """Rough size of ``obj``: numpy arrays and bytes, through containers and attributes."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (bytes, bytearray, str)):
        return len(obj) + 33
    if depth <= 0:
        return 64
    if isinstance(obj, (tuple, list)):
        if len(obj) > 64 and all(isinstance(x, (bytes, type(None))) for x in obj[:64]):
            return sum(len(x) + 33 if x else 16 for x in obj) + 8 * len(obj)
        return sum(approx_nbytes(x, depth - 1) for x in obj) + 8 * len(obj)
    if isinstance(obj, dict):
        return sum(approx_nbytes(v, depth - 1) for v in obj.values()) + 64 * len(obj)
    d = getattr(obj, "__dict__", None)
    if d is not None:
        return sum(approx_nbytes(v, depth - 1) for v in d.values()) + 64
    return 64


class ByteCache:
    """Thread-safe LRU of built objects under ``max_bytes`` (estimated by `approx_nbytes`)."""

    def __init__(self, max_bytes: int = _DEFAULT_BYTES):
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.RLock()
        self._building: dict[Hashable, threading.Lock] = {}

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get(self, key: Hashable, build: Callable[[], Any], size: Callable[[Any], int] | None = None) -> Any:
        """The cached value for ``key``, built (once, also across threads) when missing.
        ``size(value)`` estimates its bytes where `approx_nbytes` cannot see them."""
        with self._lock:
            hit = self._lookup(key)
            if hit is not None:
                return hit[0]
            lock = self._building.setdefault(key, threading.Lock())
        with lock:  # one builder per key; others wait for its result
            with self._lock:
                hit = self._lookup(key)
                if hit is not None:
                    return hit[0]
            value = build()
            self.put(key, value, None if size is None else size(value))
            with self._lock:
                self._building.pop(key, None)
            return value

    def peek(self, key: Hashable) -> Any:
        """The cached value for ``key`` (marked as recently used), or None; never builds."""
        with self._lock:
            hit = self._lookup(key)
        return None if hit is None else hit[0]

    def put(self, key: Hashable, value: Any, size: int | None = None) -> None:
        size = approx_nbytes(value) if size is None else int(size)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self.max_bytes:
                return
            self._items[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes and self._items:
                _, (_, s) = self._items.popitem(last=False)
                self._bytes -= s

    def discard(self, which: Callable[[Hashable], bool]) -> None:
        """Drop every entry whose key satisfies ``which``."""
        with self._lock:
            for key in [k for k in self._items if which(k)]:
                self._bytes -= self._items.pop(key)[1]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def _lookup(self, key: Hashable) -> Any:
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
        return hit


_SHARED: ByteCache | None = None
_SHARED_LOCK = threading.Lock()


def shared_cache() -> ByteCache:
    """The process-wide cache (budget from ``FSTBEAM_CACHE_BYTES``)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            raw = os.environ.get("FSTBEAM_CACHE_BYTES", "")
            _SHARED = ByteCache(int(raw) if raw.strip().isdigit() else _DEFAULT_BYTES)
        return _SHARED
