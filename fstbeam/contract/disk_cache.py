"""Per-tokenizer indexes cached on disk as ``.npz`` (no pickle), keyed by content hashes.

Parsing Gemma's 33 MB tokenizer.json (~1 s) and building its byte trie (~1.3 s) happen once per
machine instead of once per process. A damaged cache file is rebuilt, never trusted.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable

import numpy as np

log = logging.getLogger(__name__)
_VERSION = "1"


def _dir() -> Path | None:
    if os.environ.get("FSTBEAM_NO_DISK_CACHE"):
        return None
    from ..cachefs import subdir

    return subdir("index")  # a CacheError names FSTBEAM_CACHE and the fix


def cached_arrays(kind: str, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    d = _dir()
    if d is None:
        return build()
    from ..cachefs import fill_file

    path = d / f"{kind}-v{_VERSION}-{key[:32]}.npz"
    hit = _read(path) if path.is_file() else None
    if hit is not None:
        return hit
    built: dict[str, np.ndarray] = {}

    def write(tmp: Path) -> None:
        built.update(build())
        with open(tmp, "wb") as fh:
            np.savez(fh, **built)

    fill_file(path, write, valid=lambda p: _read(p) is not None)  # locked, atomic; damaged -> rebuilt
    if built:
        return built
    arrays = _read(path)
    return arrays if arrays is not None else build()


def _read(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of a cache file, or None if it is damaged (the zip CRCs check every member)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception:  # noqa: BLE001 - any failure to read a cache file means: rebuild it
        return None
