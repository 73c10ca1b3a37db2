"""``fstbeam batch``: decode a file of prompts into resumable, sharded JSONL output.

    fstbeam batch --input prompts.jsonl --output out/ --constraints a1.fstbeam --format qa
    fstbeam batch --input prompts.parquet --output out/ --constraints a1.fstbeam --ray-address auto --concurrency 8

Without ``--ray-address`` it runs in-process; with it, on a Ray cluster (``local`` starts one on
this machine). Rerunning the same command resumes: written shards are skipped. Exit codes: 0
every row satisfied, 1 some row has ``error`` or ``satisfied=false``, 2 usage or input error,
3 the job failed (e.g. Ray gave up retrying), 130 interrupted; finished shards are kept.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .flags import add_packed_weights_flag, add_preset_flag, add_search_flags, format_arg, nonempty

__all__ = ["add_arguments", "run"]

def _int_at_least(low: int):
    """argparse type: an integer >= ``low``."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be at least {low} (got {v})")
        return v
    return parse


_positive = _int_at_least(1)


def add_arguments(b: argparse.ArgumentParser) -> None:
    """The flags of ``fstbeam batch`` (``fstbeam.cli.main`` makes the subcommand's parser)."""
    b.add_argument("--input", required=True, type=nonempty, metavar="FILE", help="prompts: .jsonl or .parquet")
    b.add_argument("--output", required=True, type=nonempty, metavar="DIR", help="output folder (shards + _job.json)")
    b.add_argument("--constraints", type=nonempty, metavar="ARTIFACT",
                   help="shared compiled constraints (compile-constraints compile ... -o FILE); rows add their own "
                        "phrases, avoid and prefix on top")
    r = b.add_argument_group("where it runs")
    r.add_argument("--ray-address", type=nonempty, metavar="ADDR",
                   help="run on Ray: 'auto' (the cluster `ray start` made), 'local' (start one here) or HOST:PORT; "
                        "without it, in-process")
    r.add_argument("--concurrency", type=_positive, default=1, help="Ray actors, one model each (default 1)")
    r.add_argument("--cpus-per-actor", type=float, default=1.0, help="CPUs Ray reserves per actor (default 1)")
    r.add_argument("--gpus-per-actor", type=float, default=0.0, help="GPUs Ray reserves per actor (default 0)")
    r.add_argument("--shard-size", type=_positive, default=1000, help="input rows per output shard (default 1000)")
    r.add_argument("--rows-per-task", type=_positive, default=64,
                   help="rows given to one actor call, streamed through the decoder (default 64)")
    m = b.add_argument_group("model")
    m.add_argument("--model", type=nonempty, metavar="PATH", help="model folder (default: Gemma 3 270M)")
    m.add_argument("--tokenizer", type=nonempty, metavar="PATH", help="tokenizer (default: the model's)")
    m.add_argument("--device", type=nonempty, default="auto", help="cpu, cuda or auto (default)")
    m.add_argument("--format", type=format_arg, default="auto", metavar="raw|chat|auto|qa|TEMPLATE",
                   help="prompt format (as for generate)")
    add_packed_weights_flag(m)
    s = b.add_argument_group("search (the same flags and presets as fstbeam generate)")
    add_preset_flag(s)
    add_search_flags(s)
    b.add_argument("--retry-errors", action="store_true",
                   help="after the job, decode again (in this process) the rows whose output has an error")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress, only the final line")


def _job(args):
    from ..distributed.job import BatchJob
    from ..distributed.ray_data import worker_config
    from .flags import search_overrides

    # the search flags given; the worker applies them over the format's preset, as generate does
    opts = search_overrides(args)
    if args.preset:
        opts["preset"] = args.preset
    if args.packed_weights != "auto":
        opts["packed_weights"] = args.packed_weights
    cons = str(Path(args.constraints).resolve()) if args.constraints else None
    model = str(Path(args.model).resolve()) if args.model and Path(args.model).exists() else args.model
    batch_size = opts.pop("batch_size", None)
    cfg = worker_config(cons, model=model, tokenizer=args.tokenizer, device=args.device,
                        prompt_format=args.format, decode_batch_size=batch_size, **opts)
    return BatchJob(Path(args.input), Path(args.output), cfg, shard_size=args.shard_size, rows_per_task=args.rows_per_task,
                    ray_address=args.ray_address, concurrency=args.concurrency, num_cpus=args.cpus_per_actor,
                    num_gpus=args.gpus_per_actor)


def run(args, *, process: bool = False) -> int:
    """``fstbeam batch`` with parsed flags; its exit status (``process`` is not used: Ray or worker
    processes may need a normal exit)."""
    from ..distributed.job import run_batch
    from ..errors import Error
    from .usage import check_batch

    problem = check_batch(args)
    if problem:  # before any model or Ray start
        print(f"fstbeam batch: {problem}", file=sys.stderr)
        return 2
    try:
        _check_flags(args)
        job = _job(args)
    except (ValueError, argparse.ArgumentTypeError) as exc:
        print(f"fstbeam batch: {exc}", file=sys.stderr)
        return 2
    progress = None
    if args.quiet:
        progress = _Silent()
    try:
        with warnings.catch_warnings():  # e.g. --concurrency clamped to the cluster: one plain line, at once
            warnings.showwarning = _say_warning
            summary = run_batch(job, progress=progress, retry_errors=args.retry_errors)
    except KeyboardInterrupt:
        done = sum(1 for _ in job.output.glob("rows-*.jsonl")) if job.output.is_dir() else 0
        print(f"fstbeam batch: interrupted; {done} shard(s) kept in {job.output}; rerun the same command to resume",
              file=sys.stderr)
        return 130
    except (Error, ValueError, OSError, TypeError) as exc:
        print(f"fstbeam batch: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - e.g. Ray gave up retrying: say so, keep what is done
        print(f"fstbeam batch: the job failed ({_cause(exc)}); finished shards are kept in {job.output}; "
              "rerun the same command to resume", file=sys.stderr)
        return 3
    skipped = f" ({summary.skipped_shards} already there)" if summary.skipped_shards else ""
    skipped += f", {summary.retried} row(s) retried" if summary.retried else ""
    print(f"fstbeam batch: {summary.rows} rows in {summary.shards} shard(s){skipped} in {job.output}; "
          f"{summary.bad_rows} with an error or unsatisfied", file=sys.stderr)
    return 1 if summary.bad_rows else 0


def _say_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"fstbeam batch: warning: {message}", file=sys.stderr, flush=True)


def _check_flags(args) -> None:
    """The device and prompt format, checked before any model or Ray actor starts (exit 2)."""
    from ..runtime.templates import prompt_format
    from ..validate import check_device, check_prompt_format

    check_device(args.device, "--device")
    check_prompt_format(prompt_format(args.format), "--format")


def _cause(exc: BaseException) -> str:
    """The root cause of a (Ray) error in one line: Ray wraps it in a traceback of its own."""
    lines = [x.strip() for x in str(exc).strip().splitlines() if x.strip()]
    first = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    return first[:200] + (f" ... {lines[-1][:300]}" if len(lines) > 1 else "")


class _Silent:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass
