"""Batch decoding at scale: Ray Data ``map_batches`` on an actor pool, one model per actor.

    import ray, fstbeam.distributed as fd
    ds = fd.read_rows("prompts.jsonl")               # columns: prompt [, id, phrases, avoid, prefix]
    out = fd.generate_dataset(ds, "a1.fstbeam", concurrency=4, beam_size=5, max_new_tokens=48)
    out.write_parquet("out/")

Ray is optional (``pip install 'fstbeam[ray]'``): ``run_batch`` (the ``fstbeam batch`` command)
runs in-process without it, with the same input and output files. See docs/batch.md.
"""
from __future__ import annotations

from .._lazy import lazy_exports as _lazy_exports

__all__ = ["generate_dataset", "read_rows", "DecodeWorker", "BatchJob", "run_batch", "INPUT_COLUMNS", "OUTPUT_COLUMNS"]

_LAZY = {
    "generate_dataset": ("fstbeam.distributed.ray_data", "generate_dataset"),
    "read_rows": ("fstbeam.distributed.ray_data", "read_rows"),
    "DecodeWorker": ("fstbeam.distributed.worker", "DecodeWorker"),
    "BatchJob": ("fstbeam.distributed.job", "BatchJob"),
    "run_batch": ("fstbeam.distributed.job", "run_batch"),
    "INPUT_COLUMNS": ("fstbeam.distributed.rows", "INPUT_COLUMNS"),
    "OUTPUT_COLUMNS": ("fstbeam.distributed.rows", "OUTPUT_COLUMNS"),
}


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
