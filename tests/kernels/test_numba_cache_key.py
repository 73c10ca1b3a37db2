"""numba's on-disk cache of `cpu_fast` is keyed on a hash of `_simd.py` too (issue 10)."""
from __future__ import annotations

import pytest

pytest.importorskip("numba")


def test_stale_numba_cache_is_dropped_when_simd_changes(tmp_path):
    from pathlib import Path

    from fstbeam.kernels import cpu_fast
    from fstbeam.kernels.numba_cache import key_cache_on

    simd = Path(cpu_fast.__file__).with_name("_simd.py")

    class FakeCache:
        _cache_path = str(tmp_path)

    class FakeDispatcher:
        _cache = FakeCache()

    stale = tmp_path / "cpu_fast._phase1-170.py311.nbi"
    other = tmp_path / "other_module._f-1.py311.nbi"
    stale.write_bytes(b"x")
    other.write_bytes(b"x")
    (tmp_path / "cpu_fast._simd-sha256").write_text("an older _simd.py")
    key_cache_on(cpu_fast.__file__, simd, FakeDispatcher())
    assert not stale.exists() and other.exists()
    stamp = (tmp_path / "cpu_fast._simd-sha256").read_text()
    assert len(stamp) == 64
    stale.write_bytes(b"x")  # compiled again against the current _simd.py: kept from now on
    key_cache_on(cpu_fast.__file__, simd, FakeDispatcher())
    assert stale.exists()


def test_every_source_of_the_intrinsics_keys_the_cache(tmp_path):
    """The intrinsics live in _simd.py and their IR in _simd_ir.py: an edit to either drops the
    cached code (a copy of the two files stands in for them)."""
    from pathlib import Path

    from fstbeam.kernels import cpu_kernels
    from fstbeam.kernels.numba_cache import key_cache_on

    here = Path(cpu_kernels.__file__).parent
    src = tmp_path / "src"
    src.mkdir()
    files = [src / "_simd.py", src / "_simd_ir.py"]
    for f in files:
        f.write_bytes((here / f.name).read_bytes())
    cache = tmp_path / "cache"
    cache.mkdir()

    class FakeCache:
        _cache_path = str(cache)

    class FakeDispatcher:
        _cache = FakeCache()

    compiled = cache / "cpu_kernels.phase1-40.py311.nbi"
    compiled.write_bytes(b"x")
    key_cache_on(cpu_kernels.__file__, files, FakeDispatcher())  # first stamp: no stamp matched yet
    compiled.write_bytes(b"x")
    key_cache_on(cpu_kernels.__file__, files, FakeDispatcher())
    assert compiled.exists()  # unchanged sources: kept
    for f in files:
        f.write_text(f.read_text() + "\n# an edit\n")
        key_cache_on(cpu_kernels.__file__, files, FakeDispatcher())
        assert not compiled.exists(), f.name  # either file: dropped
        compiled.write_bytes(b"x")
        key_cache_on(cpu_kernels.__file__, files, FakeDispatcher())
        assert compiled.exists()
