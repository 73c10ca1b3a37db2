"""fstbeam's on-disk cache: one root, filled atomically and safely across processes.

Every cache entry (the assembled GGUF, the converted model and tokenizer folders, the CEFR table,
the vocabulary and trie indexes) is filled the same way:

- a lock file (``<entry>.lock``, ``fcntl.flock``) serializes processes filling the same entry, so
  two first runs on an empty cache build it once and the second one waits and reuses it;
- the entry is built under a temporary name in the same folder and renamed into place
  (``os.replace`` is atomic), so no process ever sees half an entry;
- an entry carries a checksum (its own trailer, a ``.complete`` manifest, or the zip CRCs of
  ``.npz``); one that fails it is rebuilt with a warning, never trusted.

A cache root that is not a writable directory is a :class:`~fstbeam.errors.CacheError` naming
``FSTBEAM_CACHE`` and the fix, never a raw ``OSError``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ..errors import CacheError

log = logging.getLogger(__name__)

_FIX = "point FSTBEAM_CACHE at a writable folder (or unset it to use ~/.cache/fstbeam)"
#: Files up to this size are checked by sha256 on every use; larger ones by size (the loaders
#: of safetensors / GGUF check their own headers).
_HASH_LIMIT = 64 << 20


def cache_root() -> Path:
    """Root of fstbeam's cache (``$FSTBEAM_CACHE`` or ``$XDG_CACHE_HOME/fstbeam``), created on demand."""
    env = os.environ.get("FSTBEAM_CACHE")
    root = env or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "fstbeam")
    path = Path(root)
    name = f"FSTBEAM_CACHE={env}" if env else f"the cache folder {path}"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CacheError(f"{name} is a file, not a directory: {_FIX}") from None
    except OSError as exc:
        raise CacheError(f"{name} cannot be created ({exc.strerror or exc}): {_FIX}") from None
    if not path.is_dir():
        raise CacheError(f"{name} is not a directory: {_FIX}")
    return path


def subdir(*parts: str) -> Path:
    d = cache_root().joinpath(*parts)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheError(f"cannot create cache folder {d} ({exc.strerror or exc}): {_FIX}") from None
    if not d.is_dir():
        raise CacheError(f"cache entry {d} is not a directory: remove it, or {_FIX}")
    return d


@contextmanager
def locked(entry: Path) -> Iterator[None]:
    """Hold an exclusive lock for filling ``entry`` (blocks while another process fills it)."""
    import fcntl

    lock = entry.with_name(entry.name + ".lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise CacheError(f"cannot write to the cache at {entry.parent} ({exc.strerror or exc}): {_FIX}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock; the lock file stays (removing it would race)


def _tmp_name(entry: Path) -> str:
    """A fresh, empty file beside ``entry`` (mkstemp: never an existing path or a planted link)."""
    fd, name = tempfile.mkstemp(prefix=f".{entry.name}.", suffix=".tmp", dir=entry.parent)
    os.close(fd)
    return name


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fill_file(entry: Path, build: Callable[[Path], None], *, valid: Callable[[Path], bool]) -> Path:
    """``entry`` if it exists and is ``valid``; otherwise ``build(tmp)`` writes it under a temporary
    name, which must then be ``valid``, and it is renamed into place. Under the entry's lock."""
    if entry.is_file() and valid(entry):
        return entry
    with locked(entry):
        if entry.exists():
            if entry.is_file() and valid(entry):
                return entry  # another process filled it while we waited
            log.warning("fstbeam cache: %s is damaged (fails its checksum); rebuilding it", entry)
            _remove(entry)
        try:
            tmp = Path(_tmp_name(entry))
        except OSError as exc:
            raise CacheError(f"cannot write to the cache at {entry.parent} ({exc.strerror or exc}): {_FIX}") from None
        try:
            build(tmp)
            if not valid(tmp):
                raise CacheError(f"rebuilding the cache entry {entry} gave a file that fails its own check: "
                                 "report this, or remove the cache folder and retry")
            os.replace(tmp, entry)
        except OSError as exc:
            raise CacheError(f"cannot write the cache entry {entry} ({exc.strerror or exc}): {_FIX}") from None
        finally:
            _remove(tmp)
    return entry


def write_text_checked(path: Path, text: str) -> None:
    """Write ``text`` followed by a ``#sha256 <hex>`` trailer line (see :func:`read_text_checked`)."""
    body = text.encode("utf-8")
    path.write_bytes(body + b"#sha256 " + hashlib.sha256(body).hexdigest().encode() + b"\n")


def read_text_checked(path: Path) -> str | None:
    """The text written by :func:`write_text_checked`, or ``None`` if the trailer is missing or
    does not match (a truncated or edited file)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    at = raw.rfind(b"#sha256 ")
    if at < 0 or (at > 0 and raw[at - 1:at] != b"\n"):
        return None
    body, trailer = raw[:at], raw[at + 8:].strip()
    if hashlib.sha256(body).hexdigest().encode() != trailer:
        return None
    return body.decode("utf-8", "replace")


def text_valid(path: Path) -> bool:
    return read_text_checked(path) is not None


# ---- folders (converted model / tokenizer) ------------------------------------------------------
_COMPLETE = ".complete"


def _dir_manifest(folder: Path) -> dict:
    out = {}
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != _COMPLETE):
        size = f.stat().st_size
        out[str(f.relative_to(folder))] = [size, sha256_file(f) if size <= _HASH_LIMIT else None]
    return out


def dir_valid(folder: Path) -> bool:
    """The folder's ``.complete`` manifest matches its files (sizes; sha256 of files <= 64 MiB)."""
    try:
        marker = (folder / _COMPLETE).read_text(encoding="utf-8")
        if marker == "ok\n":  # written before checksums (fstbeam 0.1): record them now, once
            (folder / _COMPLETE).write_text(json.dumps(_dir_manifest(folder)), encoding="utf-8")
            return True
        want = json.loads(marker)
        if not isinstance(want, dict) or not want:
            return False
        for rel, (size, digest) in want.items():
            f = folder / rel
            if not f.is_file() or f.stat().st_size != size:
                return False
            if digest is not None and sha256_file(f) != digest:
                return False
        return True
    except (OSError, ValueError, TypeError):
        return False


def fill_dir(entry: Path, build: Callable[[Path], None]) -> Path:
    """A cache folder filled by ``build(tmpdir)``: atomic, locked, checked like :func:`fill_file`."""
    if entry.is_dir() and dir_valid(entry):
        return entry
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheError(f"cannot create cache folder {entry.parent} ({exc.strerror or exc}): {_FIX}") from None
    with locked(entry):
        if entry.exists():
            if entry.is_dir() and dir_valid(entry):
                return entry
            log.warning("fstbeam cache: %s is incomplete or damaged (fails its checksum); rebuilding it", entry)
            _remove(entry)
        try:
            tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=entry.parent))
        except OSError as exc:
            raise CacheError(f"cannot write to the cache at {entry.parent} ({exc.strerror or exc}): {_FIX}") from None
        try:
            build(tmp)
            (tmp / _COMPLETE).write_text(json.dumps(_dir_manifest(tmp)), encoding="utf-8")
            os.replace(tmp, entry)
        except OSError as exc:
            raise CacheError(f"cannot write the cache entry {entry} ({exc.strerror or exc}): {_FIX}") from None
        finally:
            _remove(tmp)
    return entry


def invalidate(entry: Path, why: str) -> None:
    """Remove a damaged entry (under its lock) so the next use rebuilds it."""
    log.warning("fstbeam cache: %s is damaged (%s); rebuilding it", entry, why)
    with locked(entry):
        _remove(entry)


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists() or path.is_symlink():
            path.unlink()
    except OSError:
        pass
