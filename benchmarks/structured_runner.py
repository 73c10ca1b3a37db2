"""bench_structured's worker processes: one engine at a time, in a process of its own that a hang
or a runaway compile cannot take down with it.

The worker loads the engine and its tokenizer once, then takes one schema at a time: compile it,
fill the first mask (time to first mask), walk every test instance's tokens, and report the
schema's peak RSS (the high-water mark is reset before each schema through /proc/self/clear_refs,
so it is this schema's peak, the loaded tokenizer included). A schema that passes the compile
time-out (or the walk time-out), counted in the worker's CPU seconds, has its worker killed and a
fresh one started. Times are taken twice: wall (perf_counter) and the worker's CPU time
(process_time: what the engine itself spent, on a machine other processes share).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import re
import time
from typing import Any, Iterable

THREAD_VARS = {"RAYON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "NUMBA_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "FSTBEAM_NO_DISK_CACHE": "1"}


WALL_FACTOR = 8  # a time-out in CPU seconds also ends after this many times as much wall time


def _rss_mb(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    """Start the next schema's peak from what the worker holds now, with the memory the previous
    schema freed handed back to the system first (garbage collected, glibc's free lists trimmed):
    else a schema's peak includes every earlier schema's leftovers (the same for every engine).
    The previous schema's compiled form is let go before (`_worker`): it held a large schema's
    tables (660 MB after Github_ultra---o48781) through the next schema's compile."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def reason(exc: BaseException | str) -> str:
    """A short, groupable reason: quoted values, numbers and JSON pointers replaced (a quoted
    keyword kept)."""
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    text = text.strip().splitlines()[0] if text.strip() else "error"
    text = re.sub(r"(#?/[\w$~.%-]+)+", "<path>", text)
    # a quoted keyword (a short identifier) stays: it is the reason; other quoted text (values, names) goes
    text = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", lambda m: m[0] if re.fullmatch(r".[A-Za-z$][\w$-]{0,24}.", m[0]) else "<x>", text)
    text = re.sub(r"\{.*", "{...}", text)  # a schema fragment quoted in the message
    text = re.sub(r"\d+", "N", text)
    return text[:90]


def _one_thread() -> None:
    """torch to one thread where the engine loaded it (XGrammar's bitmasks are torch tensors);
    a worker imports only what its engine needs, so an engine's peak RSS holds no library it
    never uses (torch alone is 266 MB; the thread variables cover a later import)."""
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _worker(engine: str, conn: Any) -> None:
    from structured_engines import ENGINES, walk

    t = time.perf_counter()
    adapter = ENGINES[engine]()
    label = adapter.setup()
    _one_thread()
    conn.send(("ready", {"label": label, "setup_s": round(time.perf_counter() - t, 2), "rss_mb": round(_rss_mb("VmRSS"), 1)}))
    while True:
        handle: Any = None  # (the previous schema's compiled form: never part of the next schema's peak)
        try:
            job = conn.recv()
        except EOFError:  # the parent is gone
            return
        if job is None:
            return
        schema, instances = job
        _reset_peak()
        out: dict[str, Any] = {}
        t, c = time.perf_counter(), time.process_time()
        try:
            handle = adapter.compile(schema)
            adapter.fill(adapter.start(handle))
        except Exception as exc:  # the engine refused the schema: why, grouped by the caller
            conn.send(("result", {"compiled": False, "error": f"{type(exc).__name__}: {str(exc)[:400]}",
                                  "peak_rss_mb": round(_rss_mb("VmHWM"), 1)}))
            continue
        out["ttfm_s"], out["ttfm_cpu_s"] = time.perf_counter() - t, time.process_time() - c
        conn.send(("compiled", out["ttfm_s"]))
        walks, times, cpu = [], [], []
        for valid, ids in instances:
            ok, at, ts = walk(adapter, handle, ids)
            walks.append({"valid": valid, "accepted": ok, "at": at, "tokens": len(ids)})
            times += ts
            cpu += walk(adapter, handle, ids[:at + 1], clock=time.process_time)[2]  # again, in CPU time
        out.update(compiled=True, walks=walks, mask_s=times, mask_cpu_s=cpu, peak_rss_mb=round(_rss_mb("VmHWM"), 1))
        conn.send(("result", out))


class Worker:
    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.proc: Any = None
        self.info: dict[str, Any] = {}

    def start(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(self.engine, child), daemon=True)
        self.proc.start()
        kind, self.info = self._recv(600)
        if kind != "ready":
            raise RuntimeError(f"{self.engine}: worker did not start: {self.info}")

    def _cpu_s(self) -> float:
        """The worker's CPU seconds (user + system) so far."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def _recv(self, timeout: float) -> tuple[str, Any]:
        """The next message; "timeout" once the worker has spent ``timeout`` CPU seconds on it (the
        machine is shared: wall time would count other processes' turns) or WALL_FACTOR x that in
        wall time."""
        cpu0, end = self._cpu_s(), time.monotonic() + WALL_FACTOR * timeout
        while not self.conn.poll(0.5):
            if not self.proc.is_alive():
                return "died", None
            if time.monotonic() >= end or self._cpu_s() - cpu0 >= timeout:
                return "timeout", None
        try:
            return self.conn.recv()
        except EOFError:
            return "died", None

    def stop(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.proc = None

    def run(self, schema: Any, instances: list[tuple[bool, list[int]]], compile_timeout: float, walk_timeout: float) -> dict[str, Any]:
        if self.proc is None or not self.proc.is_alive():
            self.start()
        self.conn.send((schema, instances))
        kind, msg = self._recv(compile_timeout)
        if kind == "compiled":
            kind, msg = self._recv(walk_timeout)
            if kind in ("timeout", "died"):
                self.stop()
                return {"compiled": True, "error": f"walk {kind} (> {walk_timeout:.0f} s)" if kind == "timeout" else "worker died in the walk",
                        "walk_failed": True}
        if kind == "result":
            return msg
        self.stop()  # a hang or a crash (out of memory): a fresh worker for the next schema
        return {"compiled": False, "error": f"time-out (> {compile_timeout:.0f} s)" if kind == "timeout" else "worker died (crash or out of memory)"}


def run_engine(engine: str, cases: Iterable[Any], token_ids: dict[str, list[tuple[bool, list[int]]]],
               compile_timeout: float, walk_timeout: float, log: Any = print, save: Any = None) -> dict[str, Any]:
    """Every case through ``engine``'s worker; ``save(partial run)`` after each schema (a run cut
    short keeps what it measured)."""
    os.environ.update(THREAD_VARS)
    w = Worker(engine)
    w.start()
    info = dict(w.info)
    per: dict[str, Any] = {}
    try:
        for i, c in enumerate(cases):
            r = w.run(c.schema, token_ids[c.name], compile_timeout, walk_timeout)
            per[c.name] = r
            if save is not None:
                save({"info": info, "schemas": per, "partial": True})
            if not r.get("compiled"):
                log(f"  {engine} [{i + 1}] {c.name}: not compiled: {r.get('error', '')[:120]}")
            elif (i + 1) % 25 == 0:
                log(f"  {engine} [{i + 1}] ...")
    finally:
        w.stop()
    return {"info": info, "schemas": per}
