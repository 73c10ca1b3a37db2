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
