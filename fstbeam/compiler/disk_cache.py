"""Per-tokenizer indexes and compiled word lists cached on disk as ``.npz`` (no pickle), keyed
by content hashes.

Parsing Gemma's 33 MB tokenizer.json (~1 s) and building its byte trie (~1.3 s) happen once per
machine instead of once per process; so does compiling a word list for a tokenizer (key: the
list, its options, the tokenizer fingerprint and the builder's source). A damaged cache file is
rebuilt, never trusted. ``FSTBEAM_NO_DISK_CACHE=1`` turns the cache off.
"""
from __future__ import annotations

import hashlib
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
    hit = load_arrays(kind, key)
    if hit is not None:
        return hit
    arrays = build()
    store_arrays(kind, key, arrays)
    return arrays


def _path(kind: str, key: str) -> Path | None:
    d = _dir()
    return None if d is None else d / f"{kind}-v{_VERSION}-{key[:32]}.npz"


def load_arrays(kind: str, key: str) -> dict[str, np.ndarray] | None:
    """The arrays stored under (kind, key), or None (absent, disabled, or damaged)."""
    path = _path(kind, key)
    if path is None or not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as exc:  # damaged: rebuild
        log.warning("ignoring damaged cache file %s (%s)", path, exc)
        return None


def store_arrays(kind: str, key: str, arrays: dict[str, np.ndarray], *, keep: int | None = None) -> None:
    """Write atomically (a temporary file renamed into place): a reader in another process sees
    the old file, the new one or none, never half of one. ``keep``: at most this many entries of
    ``kind`` stay, the least recently written are removed."""
    path = _path(kind, key)
    if path is None:
        return
    if keep is not None:
        try:  # another process may be removing the same files
            old = sorted(path.parent.glob(f"{kind}-v*.npz"), key=lambda p: p.stat().st_mtime)
            for p in old[: max(0, len(old) - keep + 1)]:
                p.unlink(missing_ok=True)
        except OSError:
            pass
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:  # a read-only cache is not an error
        log.info("could not write cache %s: %s", path, exc)


def source_fingerprint(*modules) -> str:
    """Hash of the given modules' source files: a key part that retires cache entries written by
    another version of the code that built them."""
    h = hashlib.sha256()
    for m in modules:
        h.update(Path(m.__file__).read_bytes())
    return h.hexdigest()
