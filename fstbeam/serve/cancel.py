"""Work in a pool thread that can be stopped part-way: a compile whose request ran out of time.

A Python thread cannot be killed, but it can be sent an exception: ``cancel`` raises
:class:`CompileCancelled` in the thread running the work, at its next Python step (between the
compiler's stages and inside its loops; a single long call into OpenFst finishes first). The work
then unwinds like any failing compile (``with`` blocks release their locks, caches are filled
only by finished work), and the pool thread is free for the next request instead of finishing a
result nobody waits for.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Callable, Generic, TypeVar

__all__ = ["CompileCancelled", "Cancellable"]

T = TypeVar("T")


class CompileCancelled(Exception):
    """Raised in a pool thread whose work was cancelled (its request got its 504 or 503)."""


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Schedule ``exc`` in thread ``thread_id`` (None: clear one scheduled there)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exc) if exc is not None else None)


class Cancellable(Generic[T]):
    """``fn`` as a callable for a pool; :meth:`cancel` stops it (or keeps it from starting)."""

    def __init__(self, fn: Callable[[], T]):
        self.fn = fn
        self.cancelled = False
        self._lock = threading.Lock()
        self._thread: int | None = None

    def __call__(self) -> T:
        with self._lock:
            if self.cancelled:
                raise CompileCancelled("cancelled before it started")
            self._thread = threading.get_ident()
        try:
            return self.fn()
        finally:
            with self._lock:
                if self.cancelled and self._thread is not None:
                    _raise_in(self._thread, None)  # one sent as fn returned must not fire in the pool's own code
                self._thread = None

    def cancel(self) -> None:
        with self._lock:
            if self.cancelled:
                return
            self.cancelled = True
            if self._thread is not None:
                _raise_in(self._thread, CompileCancelled)
