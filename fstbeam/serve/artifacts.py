"""Compiled constraints the server keeps: stored artifacts by id, and caches by content.

- **Stored artifacts**: those loaded at start (``--constraints name=path``) stay; those POSTed
  (``POST /v1/constraints``) are kept least-recently-used first within ``max_artifacts`` and
  ``max_artifact_bytes`` (the oldest unused one is dropped to make room) and can be deleted
  (``DELETE /v1/constraints/{id}``). A POSTed artifact's id is a hash of its content, so posting
  the same constraints twice gives the same id.
- **Bases**: the compiled hard part (word list, CEFR level, grammar) by content; a request's
  phrases go on top of a cached base in milliseconds.
- **Compiled requests** by the content of their ``constraints`` object (least recently used
  ones are dropped past ``cache_size``).

Compiles run in several threads (``ServeEngine``): the tables are guarded by one lock, and a base
is built once (a second request for the same base waits for the first one's build).
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Callable

from .errors import RequestError

__all__ = ["ArtifactStore"]


def _size(cc) -> int:
    hard = getattr(cc, "hard", None)
    return int(getattr(hard, "nbytes", 0) or 0) + 1024


class ArtifactStore:
    def __init__(self, vocab, *, continues_text: bool, limits, cache_size: int = 256):
        self.vocab = vocab
        self.continues_text = continues_text
        self.limits = limits
        self.pinned: dict[str, object] = {}  # loaded at start
        self.posted: OrderedDict[str, object] = OrderedDict()  # POSTed, least recently used first
        self._bases: OrderedDict[str, object] = OrderedDict()
        self._building: dict[str, threading.Lock] = {}
        self._compiled: OrderedDict[str, object] = OrderedDict()
        self.cache_size = cache_size
        self._lock = threading.RLock()

    @property
    def stored(self) -> list[str]:
        with self._lock:
            return sorted(self.pinned) + sorted(self.posted)

    # ---- stored artifacts ------------------------------------------------------------------
    def add(self, ident: str, cc) -> str:
        """Store a POSTed artifact, dropping the least recently used ones past the limits."""
        lim = self.limits
        if _size(cc) > lim.max_artifact_bytes:
            raise RequestError(413, f"the compiled constraints take {_size(cc)} bytes, over this server's limit of "
                                    f"{lim.max_artifact_bytes} for stored artifacts", "body")
        with self._lock:
            if ident in self.pinned:
                return ident
            self.posted[ident] = cc
            self.posted.move_to_end(ident)
            while len(self.posted) > 1 and (len(self.posted) + len(self.pinned) > lim.max_artifacts or
                                            sum(map(_size, self.posted.values())) > lim.max_artifact_bytes):
                self.posted.popitem(last=False)
        return ident

    def load(self, name: str, path, tokenizer) -> str:
        from ..contract.compiled import load_constraints

        cc = load_constraints(path, tokenizer=tokenizer)
        with self._lock:
            self.pinned[name] = cc
        return name

    def get(self, ident: str):
        with self._lock:
            cc = self.pinned.get(ident)
            if cc is None:
                cc = self.posted.get(ident)
                if cc is not None:
                    self.posted.move_to_end(ident)
        if cc is None:
            raise RequestError(404, f"no stored artifact {ident!r}: POST /v1/constraints first (a POSTed artifact may "
                                    "have been dropped to make room: post it again)", "constraints.artifact")
        return cc

    def delete(self, ident: str) -> None:
        with self._lock:
            if ident in self.pinned:
                raise RequestError(403, f"artifact {ident!r} was loaded at start (--constraints): it stays until "
                                        "the server restarts", "id")
            if self.posted.pop(ident, None) is None:
                raise RequestError(404, f"no stored artifact {ident!r}", "id")

    @staticmethod
    def content_id(key: str) -> str:
        return "cc-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]

    # ---- caches ----------------------------------------------------------------------------
    def base(self, key: str, build: Callable[[], object]):
        with self._lock:
            hit = self._bases.get(key)
            if hit is not None:
                self._bases.move_to_end(key)
                return hit
            building = self._building.setdefault(key, threading.Lock())
        with building:  # one build per base; others wait for it
            with self._lock:
                hit = self._bases.get(key)
            if hit is None:
                hit = build()
                with self._lock:
                    self._bases[key] = hit
                    while len(self._bases) > max(8, self.cache_size // 8):
                        self._bases.popitem(last=False)
        with self._lock:
            self._building.pop(key, None)
        return hit

    def cached(self, key: str):
        with self._lock:
            hit = self._compiled.get(key)
            if hit is not None:
                self._compiled.move_to_end(key)
            return hit

    def remember(self, key: str, cc):
        with self._lock:
            self._compiled[key] = cc
            self._compiled.move_to_end(key)
            while len(self._compiled) > self.cache_size:
                self._compiled.popitem(last=False)
        return cc
