"""A compile whose request gave up (504 over the compile budget, or the request's time limit) is
stopped at its next checkpoint, so its pool thread is free for the next request
(`fstbeam.serve.engine.Cancellable`, `fstbeam.cancel`), and the server answers the next one."""
from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from fstbeam.cancel import checkpoint
from fstbeam.serve.engine import Cancellable, CompileCancelled

sys.path.insert(0, os.path.dirname(__file__))
from serve_helpers import Server  # noqa: E402


def _busy(started: threading.Event, seconds: float = 30.0):
    def work():
        started.set()
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:  # checkpoints, as the compiler's stages and loops have
            checkpoint()
            n += 1
        return n
    return work


def test_cancel_stops_running_work_and_frees_the_thread():
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        started = threading.Event()
        task = Cancellable(_busy(started))
        fut = pool.submit(task)
        assert started.wait(10)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(CompileCancelled):
            fut.result(10)
        assert time.monotonic() - t0 < 5  # stopped, not run to its 30 s
        assert pool.submit(lambda: 42).result(5) == 42  # the thread is free
    finally:
        pool.shutdown(wait=False)


def test_cancel_before_start_and_after_the_end():
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        early = Cancellable(lambda: 1)
        early.cancel()
        with pytest.raises(CompileCancelled):
            pool.submit(early).result(5)
        done = Cancellable(lambda: 2)
        assert pool.submit(done).result(5) == 2
        done.cancel()  # too late: nothing is raised in the thread's next work
        started = threading.Event()
        assert pool.submit(_busy(started, 0.3)).result(10) > 0
    finally:
        pool.shutdown(wait=False)


def _slow_body() -> dict:
    """A regex whose character automaton has 2**14 states (the 15th character from the end is an
    ``a``): about 2 s to compile here, and nothing of it is kept unless it ends (a repeat of a
    phrase set, whose per-phrase pieces a stopped compile may leave behind, took 20 ms against
    a 50 ms budget: a repeat that was not stopped)."""
    return {"model": "tiny", "prompt": "the cat", "max_tokens": 8, "constraints": {"regex": "[a-z ]*a[a-z ]{14}"}}


def test_an_except_exception_on_the_way_does_not_swallow_the_stop():
    """A stop is a BaseException (as asyncio's CancelledError): a handler for ``Exception`` in
    the compile (a cache read's "damaged: rebuild it") lets it through instead of finishing."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        started = threading.Event()
        busy = _busy(started)

        def guarded():
            try:
                return busy()
            except Exception:  # noqa: BLE001 - the handler under test
                return "swallowed"

        task = Cancellable(guarded)
        fut = pool.submit(task)
        assert started.wait(10)
        task.cancel()
        with pytest.raises(CompileCancelled):
            fut.result(10)
    finally:
        pool.shutdown(wait=False)


def test_an_over_budget_compile_is_stopped_in_the_server(model_dir):
    s = Server(["--model", model_dir, "--device", "cpu", "--model-name", "tiny", "--compile-timeout", "0.05",
                "--compile-threads", "1"])
    try:
        end = time.monotonic() + 60  # the phrase index is built in the compile thread after ready: let it finish
        while not any("phrase index" in line for line in s.lines) and time.monotonic() < end:
            time.sleep(0.05)
        r = httpx.post(s.url + "/v1/completions", json=_slow_body(), timeout=60)
        assert r.status_code == 504, r.text
        assert "compile budget" in r.json()["error"]["message"]
        end = time.monotonic() + 30
        while not any("compile stopped after" in line for line in s.lines) and time.monotonic() < end:
            time.sleep(0.05)
        # logged only where the exception reached the compile itself (not one that had finished)
        assert any("compile stopped after" in line for line in s.lines), s.lines[-5:]
        # the same constraints again: nothing was cached by the stopped compile, which is stopped again
        assert httpx.post(s.url + "/v1/completions", json=_slow_body(), timeout=60).status_code == 504
        end = time.monotonic() + 30
        while sum("compile stopped after" in line for line in s.lines) < 2 and time.monotonic() < end:
            time.sleep(0.05)
        assert sum("compile stopped after" in line for line in s.lines) == 2, "\n".join(s.lines[-12:])
        small = {"model": "tiny", "prompt": "a dog", "max_tokens": 4}
        assert httpx.post(s.url + "/v1/completions", json=small, timeout=60).status_code == 200
    finally:
        assert s.stop() == 0
