"""Peak RSS of named JSON Schemas as bench_structured's worker measures it, split by stage.

One process, like the bench worker (`structured_runner._worker`): the fstbeam adapter and the
default tokenizer loaded once, then per schema: garbage collected, glibc's free lists trimmed, the
high-water mark reset, compiled, the first mask filled, every test instance walked. A sampler
thread reads VmRSS every few milliseconds and charges it to the compile stage running at the time
(logger ``fstbeam.compiler.pipeline``), so the table says where each schema's peak is.

    python benchmarks/structured_memory.py DATA_DIR NAME [NAME ...] [--engine fstbeam-strict] [--out FILE]

Prints one row per schema (peak RSS as the worker reports it, CPU seconds to the first mask, the
peak per stage); writes JSON to benchmarks/results/structured_memory.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
SHOWN = ("structured language", "lift", "after lift", "tables", "first mask", "walks")


class StageSampler:
    """VmRSS sampled every ``every`` seconds, the highest figure kept per stage."""

    def __init__(self, every: float = 0.005) -> None:
        import logging

        self.stage = "before"
        self.peaks: dict[str, float] = {}
        self.top, self.where, self.main = 0.0, [], threading.get_ident()
        self.every = every
        self._stop = threading.Event()
        sampler = self

        class Stages(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                m = re.match(r"stage (.+?)(\.\.\.|: [0-9.]+ s)$", record.getMessage())
                if m:
                    sampler.sample()
                    sampler.stage = m[1] if m[2] == "..." else f"after {m[1]}"

        log = logging.getLogger("fstbeam.compiler.pipeline")
        log.setLevel(logging.INFO)
        log.addHandler(Stages())

    def sample(self) -> None:
        from structured_runner import _rss_mb

        rss = _rss_mb("VmRSS")
        self.peaks[self.stage] = max(self.peaks.get(self.stage, 0.0), round(rss, 1))
        if rss > self.top:  # where the main thread is at the highest figure so far
            self.top = rss
            frame = sys._current_frames().get(self.main)
            self.where = []
            while frame is not None and len(self.where) < 12:
                code = frame.f_code
                if "fstbeam" in code.co_filename:
                    self.where.append(f"{Path(code.co_filename).name}:{frame.f_lineno} {code.co_name}")
                frame = frame.f_back

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def start(self, stage: str) -> None:
        self.stage, self.peaks, self.top, self.where = stage, {}, 0.0, []
        self.main = threading.get_ident()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self.sample()
        return self.peaks


def _memo_mb() -> float:
    """MB of trie walks the process's memo holds (`walk_memo`), kept between compiles."""
    from fstbeam.compiler.hard.lift import walk_memo

    return round(walk_memo.held_bytes() / 2**20, 1)


def probe(jobs: list[tuple[str, Any, list[tuple[bool, list[int]]]]], conn: Any, engine: str = "fstbeam") -> None:
    from structured_runner import THREAD_VARS

    os.environ.update(THREAD_VARS)
    from structured_engines import ENGINES, walk
    from structured_runner import _one_thread, _reset_peak, _rss_mb

    from fstbeam.compiler.hard import array_ops

    trim_s = [0.0]
    if array_ops._MALLOC_TRIM is not None:  # CPU seconds the compile spends handing freed heap back
        trim = array_ops._MALLOC_TRIM

        def timed_trim(pad: int) -> int:
            t = time.process_time()
            try:
                return trim(pad)
            finally:
                trim_s[0] += time.process_time() - t
        array_ops._MALLOC_TRIM = timed_trim
    adapter = ENGINES[engine]()
    adapter.setup()
    _one_thread()
    ready = round(_rss_mb("VmRSS"), 1)
    print(f"worker ready: {ready} MB", flush=True)
    sampler = StageSampler()
    rows = []
    for name, schema, instances in jobs:
        handle: Any = None
        _reset_peak()
        sampler.start("compile")
        c0, trim_s[0] = time.process_time(), 0.0
        handle = adapter.compile(schema)
        sampler.stage = "first mask"
        adapter.fill(adapter.start(handle))
        cpu, trimmed = time.process_time() - c0, trim_s[0]
        sampler.stage = "walks"
        for _, ids in instances:
            walk(adapter, handle, ids)
        stages = sampler.stop()
        memo = _memo_mb()
        row = {"name": name, "memo_mb": memo, "peak_rss_mb": round(_rss_mb("VmHWM"), 1), "ttfm_cpu_s": round(cpu, 2), "trim_cpu_s": round(trimmed, 3), "stages": stages, "peak_at": sampler.where}
        rows.append(row)
        shown = {k: v for k, v in stages.items() if k in SHOWN}
        print(f"{name:40s} peak {row['peak_rss_mb']:7.1f} MB  {cpu:6.2f} CPU-s (trim {trimmed:.2f})  memo {memo:5.1f} MB  " + "  ".join(f"{k}: {v:.0f}" for k, v in shown.items()), flush=True)
        print("   peak at: " + " < ".join(sampler.where), flush=True)
        del handle
    conn.send((ready, rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--engine", default="fstbeam", choices=["fstbeam", "fstbeam-strict"],
                    help="bench_structured's row to measure (default fstbeam)")
    ap.add_argument("--out", default=str(HERE / "results" / "structured_memory.json"))
    args = ap.parse_args()

    from bench_structured import tokenize
    from structured_data import load_cases

    wanted = set(args.names)
    by_name = {c.name: c for c in load_cases(args.data_dir) if c.name in wanted}
    cases = [by_name[n] for n in args.names if n in by_name]  # (in the order given: what a worker held before counts)
    missing = wanted - {c.name for c in cases}
    if missing:
        raise SystemExit(f"not in {args.data_dir}: {sorted(missing)}")
    token_ids = tokenize(cases)
    # in a spawned process of its own, as the bench's worker: the cases and the tokenizer above stay here
    ctx = mp.get_context("spawn")
    conn, child = ctx.Pipe()
    proc = ctx.Process(target=probe, args=([(c.name, c.schema, token_ids[c.name]) for c in cases], child, args.engine))
    proc.start()
    ready, rows = conn.recv()
    proc.join()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"engine": args.engine, "ready_rss_mb": ready, "schemas": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
