"""Ending a command's process once its work is done and its output flushed."""
from __future__ import annotations

import logging
import sys
import threading
import time
import traceback


def end_process(code: int) -> None:  # pragma: no cover - ends the process
    """Flush, run the ``atexit`` functions (logging's flush, fstbeam/_startup's unfreeze, ...) and
    exit with ``code``, without joining threads that are still busy (see :func:`busy_threads`)."""
    import atexit
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more to say
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def busy_threads(wait_s: float) -> list[str]:
    """The threads other than this one that the interpreter would join at exit (not daemons: a
    thread pool's workers), after waiting up to ``wait_s`` for them to finish; each described by
    its name and where it runs now."""
    end = time.monotonic() + wait_s
    left = []
    frames = None
    for t in threading.enumerate():
        if t is threading.current_thread() or t.daemon:
            continue
        t.join(max(0.0, end - time.monotonic()))
        if t.is_alive():
            left.append(t)
    if left:
        frames = sys._current_frames()
    out = []
    for t in left:
        frame = frames.get(t.ident) if frames and t.ident is not None else None
        where = traceback.extract_stack(frame)[-3:] if frame is not None else []
        out.append(f"{t.name} at " + " <- ".join(f"{fs.filename.rsplit('/', 1)[-1]}:{fs.lineno} {fs.name}" for fs in reversed(where)))
    return out


def end_server_process(code: int, log: logging.Logger, wait_s: float = 5.0) -> None:  # pragma: no cover
    """A server has answered every request: leave even if a pool thread is still busy (a compile
    stopped part-way finishes its call into OpenFst first; a request no longer waits for it), and
    say which thread was left and where."""
    for desc in busy_threads(wait_s):
        log.warning("exit: thread %s still busy after the shutdown: left", desc)
    end_process(code)
