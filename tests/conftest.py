"""Session-wide test settings.

fstbeam's cache goes to a temporary folder for the session, and so does every other library's
(``XDG_CACHE_HOME``: matplotlib's font list, Hugging Face's folders; ``MPLCONFIGDIR``), so
``pytest`` never writes to the user's ``~/.cache`` (tests/test_home_untouched.py checks it). The converted default model,
tokenizer and GGUF file are large and slow to make (minutes), so when the user's cache already
holds them they are linked into the session's cache and read from there, never written: the
cache replaces a damaged entry by unlinking it, which leaves the user's copy alone.
``FSTBEAM_TEST_SOURCE_CACHE`` names another folder to take them from (CI warms one per run).

Slow tests are marked ``slow`` and left out of the default run (``addopts`` in pyproject.toml);
``pytest -m slow`` runs them, ``pytest -m "slow or not slow"`` runs everything.

A test that runs longer than ``FSTBEAM_TEST_HEARTBEAT`` seconds (default 30; 0: off) gets a
line on the terminal every that many seconds (``... tests/x.py::test_y still running (60 s)``):
a ``pytest -q`` run that is silent for minutes looks hung.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

_SESSION_CACHE: Path | None = None


def user_cache() -> Path:
    """The cache folder fstbeam would use outside the tests."""
    env = os.environ.get("FSTBEAM_TEST_SOURCE_CACHE") or os.environ.get("FSTBEAM_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fstbeam"


def _link_converted(source: Path, target: Path) -> None:
    """Symlink the expensive, finished entries of ``source`` into ``target`` (read-only use)."""
    if not source.is_dir() or source.resolve() == target.resolve():
        return
    entries: list[Path] = []
    for model in source.glob("gemma3-270m-v*"):
        entries += [d for d in (model / "model", model / "tokenizer") if (d / ".complete").is_file()]
    entries += [f for f in source.glob("gguf/*.gguf") if f.is_file()]
    entries += [f for f in source.glob("grammars/*.tsv") if f.is_file()]
    entries += [f for f in source.glob("index/*.npz") if f.is_file()]
    for entry in entries:
        link = target / entry.relative_to(source)
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(entry.resolve())


def pytest_configure(config):
    global _SESSION_CACHE
    if os.environ.get("FSTBEAM_TEST_CACHE_SET") == "1":  # a nested pytest of a test: keep the parent's
        return
    source = user_cache()
    _SESSION_CACHE = Path(tempfile.mkdtemp(prefix="fstbeam-test-cache-"))
    _link_converted(source, _SESSION_CACHE)
    os.environ["FSTBEAM_CACHE"] = str(_SESSION_CACHE)
    for var, sub in (("XDG_CACHE_HOME", "xdg-cache"), ("MPLCONFIGDIR", "matplotlib")):
        os.environ[var] = str(_SESSION_CACHE / sub)
    os.environ["FSTBEAM_TEST_SOURCE_CACHE"] = str(source)  # for subprocesses that make their own
    os.environ["FSTBEAM_TEST_CACHE_SET"] = "1"


def pytest_unconfigure(config):
    if _SESSION_CACHE is not None:
        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)  # links only: the source stays


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """The heartbeat of a long test (see the module docstring)."""
    every = float(os.environ.get("FSTBEAM_TEST_HEARTBEAT", "30") or 0)
    reporter = item.config.pluginmanager.get_plugin("terminalreporter")
    if every <= 0 or reporter is None:
        yield
        return
    done = threading.Event()
    t0 = time.monotonic()

    capture = item.config.pluginmanager.get_plugin("capturemanager")

    def beat() -> None:
        while not done.wait(every):
            line = f"... {item.nodeid} still running ({time.monotonic() - t0:.0f} s)"
            if capture is None:
                reporter.write_line(line)
                continue
            with capture.global_and_fixture_disabled():  # the test's output stays captured around it
                reporter.write_line(line)

    watcher = threading.Thread(target=beat, name="pytest-heartbeat", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
