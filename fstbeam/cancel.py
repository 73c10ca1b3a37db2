"""Cooperative stops of long work in a thread (a compile whose request gave up: `fstbeam.serve`).

The work calls :func:`checkpoint` between its steps (each compile stage, each level of the lift's
searches, each automaton optimized while a schema is built); :func:`request_stop` makes the next
checkpoint in that thread raise :class:`CompileCancelled`. An exception sent into the thread
instead (``PyThreadState_SetAsyncExc``) could land anywhere, the logging module's handler lock
included, and leave it held: the server then hung on its next request's log line.
"""
from __future__ import annotations

import threading

__all__ = ["CompileCancelled", "checkpoint", "request_stop", "clear_stop"]


class CompileCancelled(BaseException):
    """Raised at a checkpoint of work whose stop was asked (its request got its 504 or 503). A
    BaseException, as asyncio's CancelledError: an ``except Exception`` on its way (a cache
    read's "damaged: rebuild it", a library's fallback) must not swallow it and finish the work."""


_STOPS: set[int] = set()  # the threads whose work should stop at its next checkpoint
_LOCK = threading.Lock()


def request_stop(thread_id: int) -> None:
    with _LOCK:
        _STOPS.add(thread_id)


def clear_stop(thread_id: int) -> None:
    with _LOCK:
        _STOPS.discard(thread_id)


def checkpoint() -> None:
    """Raise `CompileCancelled` where this thread's work was asked to stop (a set lookup)."""
    if _STOPS and threading.get_ident() in _STOPS:
        raise CompileCancelled("stopped at a checkpoint: its request gave up")
