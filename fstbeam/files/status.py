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

__all__ = ["PREFIX", "status", "StatusSteps"]

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
    """Report ``what`` on stderr while the block runs, if it runs longer than ``after`` s (a
    `StatusSteps` of one step)."""
    steps = StatusSteps(after=after, every=every)
    try:  # (closed whatever lands in the step, a KeyboardInterrupt as its watcher starts included)
        with steps(what):
            yield
    finally:
        steps.close()


class _Step:
    __slots__ = ("what", "t0", "said", "due")

    def __init__(self, what: str, t0: float, due: float) -> None:
        self.what, self.t0, self.said, self.due = what, t0, False, due


class StatusSteps:
    """`status` for steps run one after another (a compile's stages), with one watcher thread
    for all of them, started with the first step and ended by `close`: a thread started and
    joined per step cost 0.1 ms, 2% of a median JSON Schema's compile over its 20 stages. Each
    step reports as `status` does."""

    def __init__(self, *, after: float = 2.0, every: float = 5.0) -> None:
        self.after, self.every = after, every
        self._quiet = os.environ.get("FSTBEAM_QUIET", "") not in ("", "0")
        self._cond = threading.Condition()
        self._step: _Step | None = None
        self._closed = False
        self._watcher: threading.Thread | None = None

    @contextmanager
    def __call__(self, what: str) -> Iterator[None]:
        if self._quiet or self._closed:
            yield
            return
        t0 = time.monotonic()
        step = _Step(what, t0, t0 + self.after)
        outer = self._step  # (a step inside another: the outer one is watched again after it)
        try:
            with self._cond:
                self._step = step
                if self._watcher is None:
                    self._watcher = threading.Thread(target=self._watch, name="fstbeam-status", daemon=True)
                    self._watcher.start()
                self._cond.notify()
            yield
        finally:
            with self._cond:  # (lines said under the lock: "done" never before "...")
                self._step = outer
                self._cond.notify()
                if step.said:
                    _say(f"{what}: done in {time.monotonic() - t0:.0f} s")

    def close(self) -> None:
        """End the watcher (the steps are over)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._watcher is not None and self._watcher.ident is not None:
            self._watcher.join()

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                step = self._step
                if step is None:
                    self._cond.wait()
                    continue
                now = time.monotonic()
                if now < step.due:
                    self._cond.wait(step.due - now)
                    continue
                _say(f"{step.what} ... {now - step.t0:.0f} s" if step.said else f"{step.what} ...")
                step.said, step.due = True, now + self.every
