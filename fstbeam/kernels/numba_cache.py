"""Key numba's on-disk cache on more than the module's own file.

numba's cache index looks only at the timestamp and size of the file that defines a function;
code it inlines from another module (`_simd.py`'s LLVM IR intrinsics) can change without it
noticing. `key_cache_on` stores a hash of those other files next to the cached code and drops the
module's cached code when the hash changes.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["key_cache_on"]


def key_cache_on(module_file: str | Path, source: str | Path, *dispatchers) -> None:
    """Drop the cached code of ``module_file``'s numba ``dispatchers`` if ``source`` changed
    since it was cached."""
    stem = Path(module_file).stem
    digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()
    dirs = {getattr(getattr(d, "_cache", None), "_cache_path", None) for d in dispatchers} - {None}
    for folder in map(Path, dirs):
        stamp = folder / f"{stem}.{Path(source).stem}-sha256"
        try:
            if stamp.exists() and stamp.read_text() == digest:
                continue
            for f in folder.glob(f"{stem}.*.nb[ci]"):
                f.unlink(missing_ok=True)
            stamp.write_text(digest)
        except OSError:  # a read-only cache folder: numba does not write there either
            pass
