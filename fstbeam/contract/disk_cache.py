"""Per-tokenizer indexes and compiled word lists cached on disk as ``.npz`` (no pickle), keyed
by content hashes.

Parsing Gemma's 33 MB tokenizer.json (~1 s) and building its byte trie (~1.3 s) happen once per
machine instead of once per process; so does compiling a word list for a tokenizer (key: the
list, its options, the tokenizer fingerprint and the builder's source). Every entry is filled by
`fstbeam.files.cache.fill_file` (locked, atomic, checked by the zip CRCs); a damaged one is rebuilt,
never trusted. ``FSTBEAM_NO_DISK_CACHE=1`` turns the cache off.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import Callable

import numpy as np

log = logging.getLogger(__name__)
_VERSION = "1"


def _dir() -> Path | None:
    if os.environ.get("FSTBEAM_NO_DISK_CACHE"):
        return None
    from ..files.cache import subdir

    return subdir("index")  # a CacheError names FSTBEAM_CACHE and the fix


def cached_arrays(kind: str, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The arrays stored under (kind, key), built and stored when missing or damaged."""
    d = _dir()
    if d is None:
        return build()
    path = _path(d, kind, key)
    hit = _read(path) if path.is_file() else None
    if hit is not None:
        return hit
    return _fill(path, build)


def load_arrays(kind: str, key: str) -> dict[str, np.ndarray] | None:
    """The arrays stored under (kind, key), or None (absent, disabled, or damaged: the next
    `store_arrays` replaces a damaged file)."""
    d = _dir()
    path = None if d is None else _path(d, kind, key)
    return _read(path) if path is not None and path.is_file() else None


def store_arrays(kind: str, key: str, arrays: dict[str, np.ndarray], *, keep: int | None = None) -> None:
    """Store ``arrays`` under (kind, key) like `cached_arrays` does. ``keep``: at most this many
    entries of ``kind`` stay; the least recently written are removed first."""
    d = _dir()
    if d is None:
        return
    if keep is not None:
        _prune(d, kind, keep - 1)
    _fill(_path(d, kind, key), lambda: arrays)


def source_fingerprint(*modules: ModuleType) -> str:
    """Hash of the given modules' source files: a key part that retires cache entries written by
    another version of the code that built them. Remembered per process (the loaded code does
    not change while it runs; reading and hashing two dozen files was 26 ms of every compile)."""
    return _files_fingerprint(tuple(str(m.__file__) for m in modules))


@functools.lru_cache(maxsize=64)
def _files_fingerprint(paths: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()


def _path(d: Path, kind: str, key: str) -> Path:
    return d / f"{kind}-v{_VERSION}-{key[:32]}.npz"


def _fill(path: Path, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    from ..files.cache import fill_file

    built: dict[str, np.ndarray] = {}

    def write(tmp: Path) -> None:
        built.update(build())
        with open(tmp, "wb") as fh:
            np.savez(fh, **built)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle

    fill_file(path, write, valid=lambda p: _read(p) is not None)  # locked, atomic; damaged -> rebuilt
    if built:
        return built
    arrays = _read(path)  # another process filled it while we waited
    return arrays if arrays is not None else build()


def _prune(d: Path, kind: str, keep: int) -> None:
    """Remove all but the ``keep`` most recently written entries of ``kind`` (their lock files stay:
    removing one could let two processes fill the same entry at once)."""
    try:  # another process may be removing the same files
        old = sorted(d.glob(f"{kind}-v*.npz"), key=lambda p: p.stat().st_mtime)
        for p in old[: max(0, len(old) - keep)]:
            p.unlink(missing_ok=True)
    except OSError:
        pass


def _read(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of a cache file, or None if it is damaged (the zip CRCs check every member)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception:  # noqa: BLE001 - any failure to read a cache file means: rebuild it
        return None
