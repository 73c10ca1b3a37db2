"""Process start-up of the commands (``fstbeam generate``, ``fstbeam serve``): timed stages and
no garbage collection while the model loads.

Importing torch and transformers and building the model create ~600k Python objects, none of
them garbage; CPython's cyclic collector runs dozens of passes over them meanwhile (0.5 s of a
3.3 s import on the 2-core dev machine). :func:`no_gc` turns it off for the start-up and then
freezes what exists (``gc.freeze``: those objects live as long as the process, so later passes
skip them). Only the commands use it; a program that makes a ``Decoder`` keeps its own settings.
:func:`lower_thread_priority` lets a background thread of ``fstbeam serve`` yield the CPU.
"""
from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["LOW_PRIORITY_NICE", "Stages", "lower_thread_priority", "no_gc"]


@contextlib.contextmanager
def no_gc(freeze: bool = True) -> Iterator[None]:
    """No cyclic garbage collection inside the block; after it, the objects made so far are
    frozen (``freeze``) and collection is back on (if it was on)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if freeze and not gc.get_freeze_count():
                gc.freeze()
                # frozen objects are skipped by the collection at exit too; extension modules
                # (nanobind's) then report them as leaked: thaw them before that
                atexit.register(gc.unfreeze)
            elif freeze:
                gc.freeze()
            gc.enable()


class Stages:
    """Wall and CPU seconds of named start-up stages, in order; ``report(name, wall, cpu)`` is
    called as each ends (a log line, a ``--timings`` line)."""

    def __init__(self, report: Callable[[str, float, float], None] | None = None):
        self.report = report
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.t0, self.c0 = time.perf_counter(), time.process_time()

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0, time.process_time() - c0)

    def add(self, name: str, wall: float, cpu: float) -> None:
        self.wall[name] = round(wall, 3)
        self.cpu[name] = round(cpu, 3)
        if self.report is not None:
            self.report(name, wall, cpu)

    def total(self) -> tuple[float, float]:
        """(wall, CPU) seconds since this object was made."""
        return time.perf_counter() - self.t0, time.process_time() - self.c0


log = logging.getLogger(__name__)
LOW_PRIORITY_NICE = 10


def lower_thread_priority() -> None:
    """This thread yields the CPU to the others: the server's large-compile threads and its
    batches of many phrase automata call it (serve/engine.py), so on a busy machine small
    requests' decode steps and the quick lane come first, where those threads' pure-Python
    work would otherwise take the GIL from them half the time (tests/serve/test_fairness.py).
    On Linux a thread has its own nice value, and raising it needs no privilege; elsewhere it
    would nice the whole process."""
    if sys.platform.startswith("linux"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOW_PRIORITY_NICE)
        except OSError:  # a sandbox may forbid it: the thread runs at the usual priority
            log.debug("could not lower a thread's priority", exc_info=True)
