"""Progress of a batch job on stderr: rows done / total, rows per second, time left.

A tqdm bar on a terminal; otherwise (a log file, a CI job) one plain line every ``interval``
seconds and at the end. Rows already written by an earlier run count as done but not in the rate.
The lines come every ``interval`` seconds even while no row finishes (the model loading, Ray
starting its actors, a long first chunk): a job is never silent for longer.
"""
from __future__ import annotations

import sys
import threading
import time

__all__ = ["Progress", "format_eta", "INTERVAL"]

#: Seconds between progress lines off a terminal (read when a Progress is made).
INTERVAL = 10.0


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class Progress:
    def __init__(self, total: int, done: int = 0, *, stream=None, interval: float | None = None, bar: bool | None = None):
        interval = INTERVAL if interval is None else interval
        self.total, self.done, self.start_done = total, done, done
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.t0 = self.last = time.monotonic()
        self.printed = None
        use_bar = bar if bar is not None else bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if use_bar:
            from tqdm import tqdm

            # a bar redraws its elapsed time by itself (mininterval) once refreshed; the ticker below refreshes it
            self.bar = tqdm(total=total, initial=done, unit="row", file=self.stream, dynamic_ncols=True, smoothing=0.1)
        self._ticker = threading.Thread(target=self._tick, name="fstbeam-batch-progress", daemon=True)
        if interval > 0:  # interval=0: every update prints already
            self._ticker.start()

    def _tick(self) -> None:
        """A line (or a redrawn bar) every ``interval`` s while nothing else prints one."""
        while not self._stop.wait(min(self.interval, 1.0) if self.bar is not None else self.interval):
            with self._lock:
                if self.bar is not None:
                    self.bar.refresh()
                elif time.monotonic() - self.last >= self.interval - 1e-3:
                    self.last = time.monotonic()
                    self._print()

    def rate(self) -> float:
        dt = time.monotonic() - self.t0
        return (self.done - self.start_done) / dt if dt > 0 else 0.0

    def line(self) -> str:
        if self.done == self.start_done and self.done < self.total:  # nothing back yet: say how long it has been
            return (f"fstbeam batch: {self.done}/{self.total} rows, starting (loading the model, first rows) "
                    f"{format_eta(time.monotonic() - self.t0)}")
        rate = self.rate()
        eta = (self.total - self.done) / rate if rate > 0 else None
        pct = 100.0 * self.done / self.total if self.total else 100.0
        return (f"fstbeam batch: {self.done}/{self.total} rows ({pct:.1f}%), {rate:.2f} rows/s, "
                f"ETA {format_eta(eta) if self.done < self.total else '0s'}")

    def update(self, n: int) -> None:
        with self._lock:
            self.done += n
            if self.bar is not None:
                self.bar.update(n)
                return
            now = time.monotonic()
            if now - self.last >= self.interval:
                self.last = now
                self._print()

    def _print(self) -> None:
        self.printed = self.done
        try:
            print(self.line(), file=self.stream, flush=True)
        except (OSError, ValueError):  # stderr gone: the job goes on
            pass

    def close(self) -> None:
        self._stop.set()
        if self._ticker.is_alive() and self._ticker is not threading.current_thread():
            self._ticker.join()
        if self.bar is not None:
            self.bar.close()
        elif self.printed != self.done:
            self._print()
