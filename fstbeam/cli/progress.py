"""Progress of ``fstbeam generate`` on stderr: nobody waits minutes in silence.

Decoding a file of prompts or explaining outputs (each explanation runs a second search) can take
minutes on a CPU. While it runs, stderr gets a tqdm bar when it is a terminal, otherwise one
plain status line (``[fstbeam] decoding 12 input(s): 3 done, 40 s``) every ``every`` seconds
once the step has taken ``after`` seconds; nothing at all for a step that ends sooner (the
common, warm case). Results go to stdout as they finish, untouched. ``FSTBEAM_QUIET=1`` or
``--quiet`` turns the lines off.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TextIO, TypeVar

from ..files.status import PREFIX, status

__all__ = ["counted", "explaining", "AFTER", "EVERY"]

T = TypeVar("T")
#: Seconds of silence before the first status line, and between lines (read at each call).
AFTER, EVERY = 3.0, 10.0


def _quiet() -> bool:
    return os.environ.get("FSTBEAM_QUIET", "") not in ("", "0")


def counted(items: Iterable[T], total: int | None, what: str = "decoding", *, after: float | None = None,
            every: float | None = None, stream: TextIO | None = None, bar: bool | None = None) -> Iterator[T]:
    """Yield ``items`` (results as they finish) while reporting how many are done."""
    out = stream if stream is not None else sys.stderr
    after = AFTER if after is None else after
    every = EVERY if every is None else every
    if _quiet():
        yield from items
        return
    use_bar = bar if bar is not None else bool(getattr(out, "isatty", lambda: False)())
    if use_bar:
        from tqdm import tqdm  # type: ignore[import-untyped]

        with tqdm(total=total, unit="input", desc=what, file=out, dynamic_ncols=True, delay=after) as b:
            for x in items:
                b.update(1)
                yield x
        return
    done = [0]
    stop = threading.Event()
    t0 = time.monotonic()
    of = f" {total} input(s)" if total else ""

    def watch() -> None:
        if stop.wait(after):
            return
        while True:
            try:
                out.write(f"{PREFIX}{what}{of}: {done[0]} done, {time.monotonic() - t0:.0f} s\n")
                out.flush()
            except (OSError, ValueError):  # stderr gone: decoding goes on
                return
            if stop.wait(every):
                return

    watcher = threading.Thread(target=watch, name="fstbeam-progress", daemon=True)
    watcher.start()
    try:
        for x in items:
            done[0] += 1
            yield x
    finally:
        stop.set()
        watcher.join()


@contextmanager
def explaining(index: int, *, after: float | None = None, every: float | None = None) -> Iterator[None]:
    """A status line while one output is explained (a second, unconstrained search)."""
    after = AFTER if after is None else after
    every = EVERY if every is None else every
    with status(f"explaining output {index}: replaying it and running the unconstrained search", after=after, every=every):
        yield
