"""``fstbeam batch --retry-errors``: decode again the rows whose output has ``error`` set.

A finished job keeps a bad row as an output row with ``error`` (docs/batch.md). Once the cause
is fixed (a worker that crashed, a newer fstbeam), rerunning the same command with
``--retry-errors`` decodes just those rows again, in this process, and rewrites their shards
atomically; every other row is kept byte for byte.
"""
from __future__ import annotations

import json
from pathlib import Path

from .shards import Shard, plan_shards, shard_done, write_shard

__all__ = ["rows_with_errors", "retry_errors"]


def rows_with_errors(out_dir: Path, shard: Shard) -> tuple[list[dict], list[int]]:
    """(the shard's output rows, the positions of those with ``error`` set)."""
    with open(out_dir / shard.name, encoding="utf-8") as fh:
        out = [json.loads(line) for line in fh]
    return out, [i for i, r in enumerate(out) if r.get("error")]


def retry_errors(job, rows: list[dict], wire_row, fix_row) -> int:
    """Re-decode every errored row of ``job``'s written shards; returns how many were retried.
    ``wire_row(rows, i)`` / ``fix_row(out, row)``: how the job sends a row and fixes its output."""
    from .worker import DecodeWorker

    worker = None
    retried = 0
    for shard in plan_shards(len(rows), job.shard_size):
        if not shard_done(job.output, shard):
            continue
        out, bad = rows_with_errors(job.output, shard)
        if not bad:
            continue
        worker = worker or DecodeWorker(**job.worker)
        chunk = [wire_row(rows, shard.start + i) for i in bad]
        for i, o, r in zip(bad, worker.decode_rows(chunk), chunk):
            out[i] = fix_row(o, r)
        write_shard(job.output, shard, out)
        retried += len(bad)
    return retried
