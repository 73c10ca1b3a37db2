"""Compiled constraints the server keeps: stored artifacts by id, and caches by content.

- **Stored artifacts** (``POST /v1/constraints``, ``--constraints name=path`` at start): an id
  names one; requests refer to it with ``{"artifact": ID}``. A POSTed artifact's id is a hash of
  its content, so posting the same constraints twice gives the same id.
- **Bases**: the compiled hard part (word list, CEFR level, grammar) by content; a request's
  phrases go on top of a cached base in milliseconds.
- **Compiled requests** by the content of their ``constraints`` object (least recently used
  ones are dropped past ``cache_size``), each with its checked runtime form.

Every method is called from one compile thread (``ServeEngine``), so no locking is needed here.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Callable

from .errors import RequestError

__all__ = ["ArtifactStore"]


class ArtifactStore:
    def __init__(self, vocab, *, continues_text: bool, limits, cache_size: int = 256):
        self.vocab = vocab
        self.continues_text = continues_text
        self.limits = limits
        self.stored: dict[str, object] = {}
        self._bases: OrderedDict[str, object] = OrderedDict()
        self._compiled: OrderedDict[str, object] = OrderedDict()
        self.cache_size = cache_size

    # ---- stored artifacts ------------------------------------------------------------------
    def add(self, ident: str, cc) -> str:
        if ident not in self.stored and len(self.stored) >= self.limits.max_artifacts:
            raise RequestError(429, f"the artifact store is full ({self.limits.max_artifacts} artifacts): restart the "
                                    "server with the ones you need as --constraints name=path")
        self.stored[ident] = cc
        return ident

    def load(self, name: str, path, tokenizer) -> str:
        from ..contract.compiled import load_constraints

        return self.add(name, load_constraints(path, tokenizer=tokenizer))

    def get(self, ident: str):
        cc = self.stored.get(ident)
        if cc is None:
            raise RequestError(404, f"no stored artifact {ident!r}: POST /v1/constraints first (stored: "
                                    f"{', '.join(sorted(self.stored)[:10]) or 'none'})", "constraints.artifact")
        return cc

    @staticmethod
    def content_id(key: str) -> str:
        return "cc-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]

    # ---- caches ----------------------------------------------------------------------------
    def base(self, key: str, build: Callable[[], object]):
        return self._lru(self._bases, key, build)

    def cached(self, key: str):
        hit = self._compiled.get(key)
        if hit is not None:
            self._compiled.move_to_end(key)
        return hit

    def remember(self, key: str, cc):
        self._compiled[key] = cc
        self._compiled.move_to_end(key)
        while len(self._compiled) > self.cache_size:
            self._compiled.popitem(last=False)
        return cc

    def _lru(self, table: OrderedDict, key: str, build):
        hit = table.get(key)
        if hit is None:
            hit = table[key] = build()
            while len(table) > max(8, self.cache_size // 8):
                table.popitem(last=False)
        table.move_to_end(key)
        return hit
