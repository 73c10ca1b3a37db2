"""A resumable batch job: input file -> sharded JSONL output, in-process or on a Ray cluster.

The driver plans shards by input row range, skips the ones already written, and writes each
shard once all its rows are back. Both paths cut each shard into the same chunks of
``rows_per_task`` rows and give each chunk to one :class:`DecodeWorker` call, so they decode the
same rows together.
"""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import __version__
from .progress import Progress
from .shards import Shard, check_manifest, file_sha256, plan_shards, read_input, remove_temporaries, shard_done, write_shard

__all__ = ["BatchJob", "BatchSummary", "run_batch"]


@dataclass(frozen=True)
class BatchJob:
    input: Path
    output: Path
    worker: dict  # DecodeWorker keywords (model, constraints, search options)
    shard_size: int = 1000
    rows_per_task: int = 64
    ray_address: str | None = None  # None: in-process; "local": start a local cluster; else connect
    concurrency: int = 1
    num_cpus: float = 1
    num_gpus: float = 0

    def manifest(self, rows: int) -> dict:
        """What the output depends on (not how it was run: concurrency or cluster may change)."""
        w = dict(self.worker)
        cons = w.get("constraints")
        if isinstance(cons, (str, os.PathLike)):
            w["constraints"] = {"path": str(Path(cons).resolve()), "sha256": file_sha256(cons)}
        elif cons is not None:
            w["constraints"] = {"spec_hash": getattr(cons, "spec_hash", repr(cons))}
        return {"input": str(self.input.resolve()), "input_sha256": file_sha256(self.input), "rows": rows,
                "shard_size": self.shard_size, "settings": json.loads(json.dumps(w, default=str)),
                "fstbeam": __version__}


@dataclass
class BatchSummary:
    rows: int
    shards: int
    skipped_shards: int
    written: list[str] = field(default_factory=list)
    bad_rows: int = 0  # error or satisfied=False, over the whole output
    retried: int = 0  # rows decoded again by retry_errors


def run_batch(job: BatchJob, *, progress: Progress | None = None,
              on_shard: Callable[[Shard], None] | None = None, retry_errors: bool = False) -> BatchSummary:
    """Run (or resume) ``job``; returns when every shard is written. ``retry_errors``: then
    decode again the rows whose output has ``error`` set (`retry.retry_errors`)."""
    rows = read_input(job.input)
    shards = plan_shards(len(rows), job.shard_size)
    check_manifest(job.output, job.manifest(len(rows)))
    remove_temporaries(job.output)
    pending = [s for s in shards if not shard_done(job.output, s)]
    summary = BatchSummary(len(rows), len(shards), len(shards) - len(pending))
    done_rows = len(rows) - sum(len(s) for s in pending)
    prog = progress or Progress(len(rows), done_rows)

    def finished(shard: Shard, out: list[dict]) -> None:
        write_shard(job.output, shard, out)
        summary.written.append(shard.name)
        if on_shard is not None:
            on_shard(shard)

    try:
        if pending:
            run = _run_in_process if job.ray_address is None else _run_on_ray
            run(job, rows, pending, prog, finished)
    finally:
        prog.close()
    if retry_errors:
        from .retry import retry_errors as retry

        summary.retried = retry(job, rows, _wire_row, _fix_unreadable)
    summary.bad_rows = _count_bad(job.output, shards)
    return summary


def _chunks(shard: Shard, size: int):
    for s in range(shard.start, shard.stop, size):
        yield s, min(s + size, shard.stop)


def _wire_row(rows: list[dict], i: int) -> dict:
    """Input row ``i`` as sent to a worker: numbered by its row when it has no ``id``."""
    r = rows[i]
    if "_error" in r:  # unreadable input line: keep its place and say why
        return {"id": i, "prompt": None, "_error": r["_error"]}
    return r if "id" in r else dict(r, id=i)


def _fix_unreadable(out: dict, row: dict) -> dict:
    if "_error" in row:
        out = dict(out, error=row["_error"], finish_reason="error")
    return out


def _run_in_process(job: BatchJob, rows, pending, prog, finished) -> None:
    from .worker import DecodeWorker

    worker = DecodeWorker(**job.worker)
    for shard in pending:
        out: list[dict] = []
        for a, b in _chunks(shard, job.rows_per_task):
            chunk = [_wire_row(rows, i) for i in range(a, b)]
            out += [_fix_unreadable(o, r) for o, r in zip(worker.decode_rows(chunk), chunk)]
            prog.update(b - a)
        finished(shard, out)


def _run_on_ray(job: BatchJob, rows, pending, prog, finished) -> None:
    import pyarrow as pa

    from .ray_data import WIRE_JSON, WIRE_ROW, map_rows, require_ray

    ray = require_ray()
    _preflight(job.worker)
    with contextlib.ExitStack() as stack:
        if _connect(ray, job.ray_address):
            stack.callback(ray.shutdown)
        # one Arrow block per chunk, so the actors get the same chunks as the in-process path
        blocks = []
        for shard in pending:
            for a, b in _chunks(shard, job.rows_per_task):
                blocks.append(pa.table({WIRE_ROW: pa.array(range(a, b), pa.int64()),
                                        WIRE_JSON: [json.dumps(_wire_row(rows, i), ensure_ascii=False) for i in range(a, b)]}))
        # batch_size=None: one block (one planned chunk) per actor call, never a chunk joined with
        # part of the next: the actors then decode exactly the in-process path's batches.
        ds = map_rows(ray.data.from_arrow(blocks), job.worker, wire="json", concurrency=job.concurrency,
                      batch_size=None, num_cpus=job.num_cpus, num_gpus=job.num_gpus)
        owner = {i: s for s in pending for i in range(s.start, s.stop)}
        got: dict[Shard, dict[int, dict]] = {s: {} for s in pending}
        batches = iter(ds.iter_batches(batch_format="pyarrow", batch_size=None))
        stack.callback(getattr(batches, "close", lambda: None))  # stops the actors on Ctrl-C too
        for batch in batches:
            idx, js = batch.column(WIRE_ROW).to_pylist(), batch.column(WIRE_JSON).to_pylist()
            new = 0
            for i, j in zip(idx, js):
                part = got.get(owner[i])
                if part is not None and i not in part:  # a row seen twice (a retried task) counts once
                    part[i] = _fix_unreadable(json.loads(j), rows[i])
                    new += 1
            prog.update(new)
            for s in {owner[i] for i in idx}:
                if s in got and len(got[s]) == len(s):
                    finished(s, [got[s][i] for i in range(s.start, s.stop)])
                    del got[s]
        if got:  # Ray lost rows: never write a partial shard
            missing = sum(len(s) - len(v) for s, v in got.items())
            raise RuntimeError(f"Ray returned no output for {missing} rows; rerun to resume")


def _preflight(worker: dict) -> None:
    """Check the artifact against the model's tokenizer here, before any actor starts: an actor
    whose constructor fails is retried by Ray and reported late and wrapped."""
    cons = worker.get("constraints")
    if not isinstance(cons, (str, os.PathLike)):
        return
    import fstbeam

    tok = worker.get("tokenizer") or worker.get("model") or "default"
    if isinstance(tok, (str, os.PathLike)):
        fstbeam.load_constraints(cons, tokenizer=tok)


def _connect(ray, address: str) -> bool:
    """Connect to the cluster at ``address`` ("local": start one here). True if we started Ray."""
    import logging

    from ray.data import DataContext

    logging.getLogger("ray.data").setLevel(logging.ERROR)  # its INFO lines (and a warning that progress
    # bars are off, which we asked for) would bury our progress
    DataContext.get_current().enable_progress_bars = False  # ours counts rows; Ray's would interleave
    if ray.is_initialized():
        return False
    # A local run should print our progress only: no usage-stats notice, no FutureWarning about
    # accelerator variables on a CPU-only actor, no notes of the token authentication or of the
    # C++ core worker (read by ray.init and the processes it starts). A failure still ends the job
    # with our own message naming its cause (exit 3).
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    if address == "local":
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    logging.getLogger("ray").setLevel(logging.ERROR)
    kw = dict(logging_level="ERROR", log_to_driver=False, include_dashboard=False)
    if address == "local":
        ray.init(**kw)
    else:
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    return True


def _count_bad(out_dir: Path, shards) -> int:
    bad = 0
    for s in shards:
        f = out_dir / s.name
        if not f.is_file():
            continue
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                bad += bool(r.get("error")) or not r.get("satisfied")
    return bad
