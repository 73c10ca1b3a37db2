"""Ray Data: ``map_batches`` on an actor pool, one :class:`DecodeWorker` (one model) per actor.

Ray schedules, retries and restarts; nothing here is a scheduler. An actor that dies is
restarted (``max_restarts``) and its in-flight batch is run again (``max_task_retries``).
"""
from __future__ import annotations

import json
import os
import warnings
from typing import Any

from ..errors import BatchError
from .rows import OUTPUT_COLUMNS
from .worker import DecodeWorker

__all__ = ["generate_dataset", "read_rows", "require_ray", "map_rows", "fit_concurrency", "WIRE_ROW", "WIRE_JSON"]

#: Columns of the batch command's wire format: the input row number and the row as JSON text
#: (JSON keeps rows whose columns have mixed types, which Arrow would refuse).
WIRE_ROW, WIRE_JSON = "_row", "_json"


def require_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise BatchError("Ray is not installed: pip install 'fstbeam[ray]' (or run without --ray-address, in-process)") from None
    return ray


class _RayWorker:
    """The actor's callable: Arrow batch in, Arrow batch out."""

    def __init__(self, config: dict, wire: str):
        self.worker = DecodeWorker(**config)
        self.wire = wire

    def __call__(self, table):
        import pyarrow as pa

        if self.wire == "columns":
            return _to_arrow(self.worker.decode_rows(table.to_pylist()))
        rows = [json.loads(s) for s in table.column(WIRE_JSON).to_pylist()]
        out = [dict(o, error=r["_error"], finish_reason="error") if "_error" in r else o
               for o, r in zip(self.worker.decode_rows(rows), rows)]
        if self.wire == "json-in":  # rows of read_rows: output columns, as for a dataset of columns
            return _to_arrow(out)
        return pa.table({WIRE_ROW: table.column(WIRE_ROW),
                         WIRE_JSON: pa.array([json.dumps(o, ensure_ascii=False) for o in out], pa.string())})


def _actor_class(config: dict, wire: str):
    """The actor class with its settings inside (pickled with the class), so Ray keeps no
    constructor arguments in the object store that a restarted actor would need back."""

    class FstbeamDecoder(_RayWorker):
        def __init__(self):
            super().__init__(config, wire)

    return FstbeamDecoder


def _to_arrow(rows: list[dict]):
    import pyarrow as pa

    types = {"prompt": pa.string(), "text": pa.string(), "satisfied": pa.bool_(), "phrases_met": pa.list_(pa.bool_()),
             "score": pa.float64(), "logprob": pa.float64(), "finish_reason": pa.string(), "error": pa.string(),
             "nbest": pa.list_(pa.string()), "warnings": pa.list_(pa.string())}
    cols = {c: pa.array([r[c] for r in rows], types.get(c)) for c in OUTPUT_COLUMNS}
    return pa.table(cols)


def fit_concurrency(ray, concurrency: int, num_cpus: float = 1, num_gpus: float = 0, *, spare_cpus: float = 0) -> int:
    """``concurrency`` actors, or as many as the cluster's CPUs (GPUs) can hold, with a warning:
    an actor that never gets its CPU waits in silence for ever (Ray: ``pending``), and the job
    with it. ``spare_cpus`` are left to Ray Data's own tasks where the cluster has more than one
    actor's CPUs (a dataset written with ``write_parquet`` waits for ever if the actors hold every
    CPU). A cluster that cannot hold one actor is an error. Starts a local Ray first if none runs
    (Ray Data would start the same one when the dataset runs)."""
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise BatchError(f"concurrency must be a positive integer (got {concurrency!r})")
    if not ray.is_initialized():  # as `fstbeam batch --ray-address local` starts it (job._connect)
        os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")  # no FutureWarning on CPU-only actors
        ray.init(logging_level="ERROR", log_to_driver=False, include_dashboard=False)
    total = ray.cluster_resources()
    fits = concurrency
    for name, each in (("CPU", num_cpus), ("GPU", num_gpus)):
        if each:
            have = float(total.get(name, 0))
            if have < each - 1e-9:
                raise BatchError(f"one actor needs {each:g} {name}(s) but the Ray cluster has {have:g}: lower "
                                 f"{'num_cpus (--cpus-per-actor)' if name == 'CPU' else 'num_gpus (--gpus-per-actor)'} "
                                 "or add nodes")
            usable = have - spare_cpus if name == "CPU" else have
            fits = min(fits, max(1, int(usable // each + 1e-9)))
    if fits < concurrency:
        gpus = f" and {num_gpus:g} GPU(s)" if num_gpus else ""
        have_text = f"{total.get('CPU', 0):g} CPU(s)" + (f" and {total.get('GPU', 0):g} GPU(s)" if num_gpus else "")
        spare = f", {spare_cpus:g} CPU left for Ray Data's read and write tasks" if spare_cpus else ""
        warnings.warn(f"concurrency={concurrency} actors of {num_cpus:g} CPU(s){gpus} do not fit the Ray cluster's "
                      f"{have_text}: running {fits}{spare} (the others would wait for ever)", RuntimeWarning, stacklevel=3)
    return fits


def map_rows(ds, config: dict, *, wire: str, concurrency: int, batch_size: int | None, num_cpus: float = 1,
             num_gpus: float = 0, max_restarts: int = 3, max_task_retries: int = 3, spare_cpus: float = 0):
    """``ds.map_batches`` on a pool of ``concurrency`` decoding actors (lazy), clamped to what
    the cluster holds (`fit_concurrency`). ``batch_size=None``: each block is one actor call, as
    it is (Ray would otherwise join a short block with part of the next one, and a different
    decoding batch rounds differently)."""
    ray = require_ray()
    concurrency = fit_concurrency(ray, concurrency, num_cpus, num_gpus, spare_cpus=spare_cpus)
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise BatchError(f"batch_size must be a positive integer or None (one block per call), not {batch_size!r}")
    with warnings.catch_warnings():
        # Ray 2.60 names max_restarts / max_task_retries "ray_remote_args" and warns; they are
        # still the actor pool's retry settings.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*ray_remote_args.*")
        return ds.map_batches(
            _actor_class(config, wire), batch_size=batch_size,
            batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=concurrency), num_cpus=num_cpus,
            **({"num_gpus": num_gpus} if num_gpus else {}), max_restarts=max_restarts, max_task_retries=max_task_retries,
        )


def read_rows(path):
    """A ``ray.data.Dataset`` of the rows of a ``.jsonl`` or ``.parquet`` file, read as ``fstbeam
    batch`` reads them, for :func:`generate_dataset`. Rows may differ in the types of a column
    (AnyOf lists beside plain phrases, which ``ray.data.read_json`` refuses: Arrow wants one type
    per column): each row travels as one JSON text. A row without ``id`` gets its row number; a
    line that is not JSON becomes an output row with ``error`` set."""
    import pyarrow as pa

    from .shards import read_input

    ray = require_ray()
    rows = read_input(path)
    wire = [{"id": i, "prompt": None, "_error": r["_error"]} if "_error" in r else r if "id" in r else dict(r, id=i)
            for i, r in enumerate(rows)]
    return ray.data.from_arrow(pa.table({WIRE_ROW: pa.array(range(len(wire)), pa.int64()),
                                         WIRE_JSON: [json.dumps(r, ensure_ascii=False) for r in wire]}))


def generate_dataset(ds, constraints=None, *, model=None, concurrency: int = 1, batch_size: int = 64,
                     num_cpus: float = 1, num_gpus: float = 0, max_restarts: int = 3, max_task_retries: int = 3,
                     tokenizer=None,
                     device: str = "auto", prompt_format: str = "auto", stop_at_newline: bool = False,
                     decode_batch_size: int | None = None, **search_options: Any):
    """Decode every row of a Ray Dataset; returns a lazy ``ray.data.Dataset`` of output rows.

    ``ds``: a dataset with columns ``prompt`` (text), optional ``id``, ``phrases`` / ``avoid``
    (lists of text) and ``prefix`` (per-row constraints, on top of ``constraints``); a dataset of
    :func:`read_rows`; or the path of a ``.jsonl`` / ``.parquet`` file (read by :func:`read_rows`). Output columns:
    ``id, prompt, text, satisfied, phrases_met, score, logprob, finish_reason, error, nbest, warnings``; a row that
    cannot be decoded has ``error`` set and is never dropped.

    ``constraints``: ``None``, an artifact path (each actor loads it and checks its tokenizer
    fingerprint) or a ``CompiledConstraints``. ``model``: ``None`` (the default model) or a path
    every actor can read. ``concurrency``: actors (model replicas), each with ``num_cpus`` and
    ``num_gpus`` (``device="auto"`` then picks the actor's GPU); ``max_restarts`` /
    ``max_task_retries``: how often Ray restarts a dead actor and reruns its batch;
    ``batch_size``: rows per actor call, which stream through ``Decoder.stream``;
    ``decode_batch_size``: inputs the decoder runs together (its ``batch_size`` option).
    Other keywords are search options of ``Decoder.generate`` (``beam_size``, ...).
    """
    config = worker_config(constraints, model=model, tokenizer=tokenizer, device=device, prompt_format=prompt_format,
                           stop_at_newline=stop_at_newline, decode_batch_size=decode_batch_size, **search_options)
    from .rows import INPUT_COLUMNS

    if isinstance(ds, (str, os.PathLike)):
        ds = read_rows(ds)
    if set(ds.columns() or ()) == {WIRE_ROW, WIRE_JSON}:  # rows of read_rows
        return map_rows(ds.drop_columns([WIRE_ROW]), config, wire="json-in", concurrency=concurrency,
                        batch_size=batch_size, num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=max_restarts,
                        max_task_retries=max_task_retries, spare_cpus=1)
    extra = set(ds.columns() or ()) - set(INPUT_COLUMNS)
    if "prompt" not in (ds.columns() or ()):
        raise BatchError(f"the dataset has no 'prompt' column (columns: {ds.columns()}): name the prompt column 'prompt'")
    if extra:
        raise BatchError(f"unknown column(s) {sorted(extra)}: a row may have id, prompt and the keys of a constraint request "
                         "(select or rename the columns first)")
    # a dataset goes on to the user's own steps (write_parquet): one CPU stays free for their tasks
    return map_rows(ds, config, wire="columns", concurrency=concurrency, batch_size=batch_size, num_cpus=num_cpus,
                    num_gpus=num_gpus, max_restarts=max_restarts, max_task_retries=max_task_retries, spare_cpus=1)


def worker_config(constraints=None, *, model=None, tokenizer=None, device="auto", prompt_format="auto",
                  stop_at_newline=False, decode_batch_size=None, **search_options) -> dict:
    """The keyword arguments of :class:`DecodeWorker` (what travels to each actor)."""
    cfg = dict(model=model, tokenizer=tokenizer, constraints=_portable(constraints), device=device,
               prompt_format=prompt_format, stop_at_newline=stop_at_newline, **search_options)
    if decode_batch_size is not None:
        cfg["batch_size"] = decode_batch_size
    return cfg


def _portable(constraints):
    return os.fspath(constraints) if isinstance(constraints, os.PathLike) else constraints
