"""Key numba's on-disk cache on more than the module's own file.

numba's cache index looks only at the timestamp and size of the file that defines a function;
code it inlines from other modules (the LLVM IR intrinsics of `_simd.py`, built by `_simd_ir.py`)
can change without it noticing. `key_cache_on` stores a hash of those other files next to the
cached code and drops the module's cached code when the hash changes.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["key_cache_on"]


def key_cache_on(module_file: str | Path, sources, *dispatchers) -> None:
    """Drop the cached code of ``module_file``'s numba ``dispatchers`` if one of ``sources`` (a
    path or a sequence of paths: every module the compiled code comes from) changed since it
    was cached."""
    paths = [Path(sources)] if isinstance(sources, (str, Path)) else [Path(s) for s in sources]
    stem = Path(module_file).stem
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest = h.hexdigest() if len(paths) > 1 else hashlib.sha256(paths[0].read_bytes()).hexdigest()
    dirs = {getattr(getattr(d, "_cache", None), "_cache_path", None) for d in dispatchers} - {None}
    for folder in map(Path, dirs):
        stamp = folder / f"{stem}.{'+'.join(p.stem for p in paths)}-sha256"
        try:
            if stamp.exists() and stamp.read_text() == digest:
                continue
            for f in folder.glob(f"{stem}.*.nb[ci]"):
                f.unlink(missing_ok=True)
            stamp.write_text(digest)
        except OSError:  # a read-only cache folder: numba does not write there either
            pass
