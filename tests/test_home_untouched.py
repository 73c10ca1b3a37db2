"""``pytest`` never writes to the user's ``~/.cache``: a part of the suite that fills fstbeam's
cache (word lists compiled to disk-cached tables, tokenizer tries) and matplotlib's runs in a
child pytest with a fresh HOME, and that home's ``.cache`` must be exactly as it was."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time."""
    out = {}
    for p in sorted(root.rglob("*")) if root.exists() else ():
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def test_the_suite_leaves_the_home_cache_untouched(tmp_path):
    home = tmp_path / "home"
    (home / ".cache" / "other-tool").mkdir(parents=True)
    (home / ".cache" / "other-tool" / "keep.txt").write_text("x")
    before = _listing(home / ".cache")
    env = {k: v for k, v in os.environ.items()
           if k not in ("FSTBEAM_CACHE", "XDG_CACHE_HOME", "MPLCONFIGDIR", "FSTBEAM_TEST_CACHE_SET",
                        "FSTBEAM_TEST_SOURCE_CACHE")}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/compiler/test_leading_space.py",
         "tests/fst/test_draw.py::test_png_with_matplotlib"],  # matplotlib keeps a font list in ~/.cache
        cwd=ROOT, env=env, check=False, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert _listing(home / ".cache") == before  # no fstbeam folder, nothing else changed


def test_the_session_cache_is_not_the_users():
    from fstbeam.files.cache import cache_root

    root = cache_root()
    assert "fstbeam-test-cache-" in str(root)
    assert not str(root).startswith(str(Path.home() / ".cache"))
