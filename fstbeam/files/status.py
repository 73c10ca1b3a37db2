"""A status line on stderr for steps that may be slow (the first run converts the default model,
builds indexes, compiles kernels): a user should never wait in silence.

    with status("converting the default model from GGUF (once, about a minute)"):
        ...

Nothing is printed when the step ends within ``after`` seconds (the common, warm case). Past
that, one line says what is going on, then one line every ``every`` seconds with the time spent,
and one when it ends. Plain lines, not a redrawn bar, so they read the same in a terminal, a log
file or CI. ``FSTBEAM_QUIET=1`` turns them off.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PREFIX", "status"]

#: Every status line starts with this (tests and scripts can tell them from results).
PREFIX = "[fstbeam] "


def _say(text: str) -> None:
    try:
        sys.stderr.write(f"{PREFIX}{text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed (a pipe that went away): the step goes on
        pass


@contextmanager
def status(what: str, *, after: float = 2.0, every: float = 5.0) -> Iterator[None]:
    """Report ``what`` on stderr while the block runs, if it runs longer than ``after`` s."""
    if os.environ.get("FSTBEAM_QUIET", "") not in ("", "0"):
        yield
        return
    done = threading.Event()
    said = threading.Event()
    t0 = time.monotonic()

    def watch() -> None:
        if done.wait(after):
            return
        said.set()
        _say(f"{what} ...")
        while not done.wait(every):
            _say(f"{what} ... {time.monotonic() - t0:.0f} s")

    watcher = threading.Thread(target=watch, name="fstbeam-status", daemon=True)
    try:  # started inside: an exception as it starts (a KeyboardInterrupt) stops the watcher too
        watcher.start()
        yield
    finally:
        done.set()
        if watcher.ident is not None:
            watcher.join()
        if said.is_set():
            _say(f"{what}: done in {time.monotonic() - t0:.0f} s")
