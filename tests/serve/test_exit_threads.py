"""A server process leaves once every request is answered, even with a pool thread still busy
(fstbeam/cli/process_exit.py): which threads it would have waited for, and where they are."""
from __future__ import annotations

import threading

from fstbeam.cli.process_exit import busy_threads


def test_busy_threads_names_a_pool_thread_still_running_and_where():
    release = threading.Event()

    def long_compile():
        release.wait(30)

    t = threading.Thread(target=long_compile, name="test-compile-busy")  # not a daemon: joined at exit
    t.start()
    try:
        mine = [d for d in busy_threads(0.2) if d.startswith("test-compile-busy ")]
        assert len(mine) == 1 and mine[0].startswith("test-compile-busy at ") and "long_compile" in mine[0], mine
    finally:
        release.set()
        t.join(5)
    assert not [d for d in busy_threads(1.0) if d.startswith("test-compile-busy ")]  # finished: not named


def test_daemon_threads_are_not_waited_for():
    release = threading.Event()
    t = threading.Thread(target=release.wait, args=(30,), name="test-daemon-busy", daemon=True)
    t.start()
    try:
        assert not [d for d in busy_threads(0.1) if d.startswith("test-daemon-busy ")]
    finally:
        release.set()
        t.join(5)
