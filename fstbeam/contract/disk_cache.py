"""Per-tokenizer indexes cached on disk as ``.npz`` (no pickle), keyed by content hashes.

Parsing Gemma's 33 MB tokenizer.json (~1 s) and building its byte trie (~1.3 s) happen once per
machine instead of once per process. A damaged cache file is rebuilt, never trusted.
"""
from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

log = logging.getLogger(__name__)
_VERSION = "1"


def _dir() -> Path | None:
    if os.environ.get("FSTBEAM_NO_DISK_CACHE"):
        return None
    from ..default_model import cache_dir

    d = cache_dir() / "index"
    d.mkdir(parents=True, exist_ok=True)
    return d


def cached_arrays(kind: str, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    d = _dir()
    if d is None:
        return build()
    path = d / f"{kind}-v{_VERSION}-{key[:32]}.npz"
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except Exception as exc:  # damaged: rebuild
            log.warning("ignoring damaged cache file %s (%s)", path, exc)
    arrays = build()
    try:
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".npz.tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except OSError as exc:  # a read-only cache is not an error
        log.info("could not write cache %s: %s", path, exc)
    return arrays
