"""Batch decoding throughput: in-process ``Decoder.generate`` against Ray Data with 1 and 2 actors.

The default model (Gemma 3 270M), CEFR A1 (``compile_constraints(cefr="A1")``) and per-row
phrases, on the same prompts in every configuration. Every replica gets the same torch threads
(``--threads``, default 1: one core per actor), so "in-process" and "Ray, 1 actor" do the same
work and their difference is Ray's overhead; "Ray, 2 actors" against "Ray, 1 actor" is the
scale-out on this machine. Rates are taken twice: over the whole job (actor start and model
load included) and at steady state (after the first batch is back). Ray's own cost per row is
also measured directly: an actor pool that does nothing, on ``--overhead-rows`` rows.

    python benchmarks/bench_distributed.py                       # 200 prompts: slow on CPU
    python benchmarks/bench_distributed.py --rows 24 --max-new-tokens 24
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
QA = "Question: {prompt}\nAnswer:"

QUESTIONS = [
    "What do you eat for breakfast?", "Where do you live?", "Who is in your family?", "What do you do on Sunday?",
    "What is your favourite food?", "How do you go to school?", "What do you like to drink?", "Where is your house?",
    "What do you do after school?", "What is your friend like?",
]
PHRASES = [["my family"], ["every day"], ["at home"], ["I like"], ["my friend", "school"], [], ["in the morning"],
           ["good"], ["with my"], ["we"]]


def make_rows(n: int) -> list[dict]:
    return [{"id": i, "prompt": QUESTIONS[i % len(QUESTIONS)], "phrases": PHRASES[(i // len(QUESTIONS) + i) % len(PHRASES)]}
            for i in range(n)]


def run_in_process(rows, a1, dec, opts) -> dict:
    import fstbeam

    t0 = time.perf_counter()
    cons = [fstbeam.with_request(a1, phrases=r["phrases"]) if r["phrases"] else a1 for r in rows]
    t1 = time.perf_counter()
    res = dec.generate([r["prompt"] for r in rows], cons, **opts)
    t2 = time.perf_counter()
    return {"seconds": t2 - t0, "per_row_constraints_ms": 1e3 * (t1 - t0) / len(rows),
            "rows_per_s": len(rows) / (t2 - t0), "texts": [r.text for r in res]}


def run_on_ray(rows, artifact, actors, args, opts) -> dict:
    import ray

    import fstbeam.distributed as fd

    t0 = time.perf_counter()
    ds = ray.data.from_items(rows)
    out = fd.generate_dataset(ds, artifact, concurrency=actors, batch_size=args.rows_per_task, num_cpus=args.threads,
                              device="cpu", prompt_format=QA, stop_at_newline=True,
                              decode_batch_size=opts["batch_size"], beam_size=opts["beam_size"],
                              max_new_tokens=opts["max_new_tokens"])
    got, first, first_rows = [], None, 0
    for batch in out.iter_batches(batch_format="pyarrow", batch_size=None):
        got += batch.to_pylist()
        if first is None:
            first, first_rows = time.perf_counter() - t0, len(got)
    total = time.perf_counter() - t0
    got.sort(key=lambda r: r["id"])
    steady = (len(rows) - first_rows) / (total - first) if total > first and len(rows) > first_rows else None
    return {"seconds": total, "first_batch_s": first, "rows_per_s": len(rows) / total, "steady_rows_per_s": steady,
            "texts": [r["text"] for r in got], "errors": sum(1 for r in got if r["error"])}


class _Echo:
    """A do-nothing actor: what Ray Data costs per row without any decoding."""

    def __call__(self, table):
        return table


def ray_overhead(rows, rows_per_task: int, n: int) -> dict:
    """Seconds per row of an actor-pool job that does nothing, from two job sizes (the fixed
    start-up cancels out)."""
    import ray

    big = [dict(rows[i % len(rows)], id=i) for i in range(n)]

    def job(items):
        t = time.perf_counter()
        ds = ray.data.from_items(items).map_batches(_Echo, batch_size=rows_per_task, batch_format="pyarrow",
                                                    compute=ray.data.ActorPoolStrategy(size=1))
        count = sum(b.num_rows for b in ds.iter_batches(batch_format="pyarrow", batch_size=None))
        assert count == len(items)
        return time.perf_counter() - t

    small_s, big_s = job(big[:rows_per_task]), job(big)
    return {"rows": n, "small_job_s": small_s, "big_job_s": big_s,
            "ms_per_row": 1e3 * (big_s - small_s) / (n - rows_per_task)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200, help="prompts (default 200; slow on a small CPU machine)")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per replica = CPUs per Ray actor (default 1)")
    ap.add_argument("--rows-per-task", type=int, default=4, help="rows per actor call (default 4)")
    ap.add_argument("--overhead-rows", type=int, default=4000, help="rows of the do-nothing job (default 4000)")
    ap.add_argument("--cluster-cpus", type=int, default=None, help="CPUs of the local Ray cluster (default 2 x threads)")
    ap.add_argument("--out", type=Path, default=RESULTS / "distributed.json")
    args = ap.parse_args(argv)
    import ray
    import torch

    import fstbeam

    torch.set_num_threads(args.threads)
    rows = make_rows(args.rows)
    dec = fstbeam.Decoder(prompt_format=QA, device="cpu")
    a1 = fstbeam.compile_constraints(cefr="A1", tokenizer=dec.vocab, leading_space=True)
    artifact = str(Path(tempfile.mkdtemp()) / "a1.fstbeam")
    a1.save(artifact)
    a1 = fstbeam.load_constraints(artifact, tokenizer=dec.tokenizer)  # what the actors use
    fstbeam.with_request(a1, phrases=["warm up"])  # one-time per process (A1's character DFA), as in each actor
    opts = dict(beam_size=args.beam, max_new_tokens=args.max_new_tokens, batch_size=min(8, args.rows_per_task),
                eos_ids=tuple(dec.eos_ids) + tuple(dec.newline_ids()))
    ray.init(num_cpus=args.cluster_cpus or 2 * args.threads, include_dashboard=False, log_to_driver=False,
             logging_level="WARNING")
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    results = {}
    # in-process before and after the Ray runs: their difference shows how much the machine's load drifted
    load_before = os.getloadavg()
    for name, fn in [("in_process", lambda: run_in_process(rows, a1, dec, opts)),
                     ("ray_1_actor", lambda: run_on_ray(rows, artifact, 1, args, opts)),
                     ("ray_2_actors", lambda: run_on_ray(rows, artifact, 2, args, opts)),
                     ("in_process_again", lambda: run_in_process(rows, a1, dec, opts))]:
        results[name] = fn()
        print(f"{name}: {results[name]['seconds']:.1f} s", file=sys.stderr, flush=True)
    noop = ray_overhead(rows, args.rows_per_task, args.overhead_rows)
    ray.shutdown()
    base = dict(results["in_process"])
    again = results["in_process_again"]
    base["seconds"] = (base["seconds"] + again["seconds"]) / 2
    base["rows_per_s"] = args.rows / base["seconds"]
    r1, r2 = results["ray_1_actor"], results["ray_2_actors"]
    summary = {
        "ratio_2_vs_1_actors": r2["rows_per_s"] / r1["rows_per_s"],
        "ratio_2_vs_1_actors_steady": (r2["steady_rows_per_s"] / r1["steady_rows_per_s"]
                                       if r1["steady_rows_per_s"] and r2["steady_rows_per_s"] else None),
        "ray_overhead_s_per_row": (r1["seconds"] - base["seconds"]) / args.rows,
        "ray_overhead_s_per_row_steady": (1 / r1["steady_rows_per_s"] - 1 / base["rows_per_s"]) if r1["steady_rows_per_s"] else None,
        "ray_fixed_startup_s": r1["first_batch_s"],
        "ray_overhead_ms_per_row_noop": noop["ms_per_row"],
        "ray_overhead_noop_vs_decode_percent": 100 * noop["ms_per_row"] / 1e3 * base["rows_per_s"],
        "in_process_drift": again["seconds"] / results["in_process"]["seconds"],
        "same_text_as_in_process": {k: sum(a == b for a, b in zip(results[k]["texts"], base["texts"]))
                                    for k in ("ray_1_actor", "ray_2_actors", "in_process_again")},
    }
    print(f"\n{args.rows} prompts, A1 + per-row phrases, beam {args.beam}, max_new_tokens {args.max_new_tokens}, "
          f"{args.threads} thread(s) per replica, {args.rows_per_task} rows per actor call")
    print(f"{'configuration':<14} {'seconds':>8} {'rows/s':>8} {'steady rows/s':>14} {'first batch s':>14}")
    for name, r in results.items():
        if "rows_per_s" not in r:
            continue
        steady = r.get("steady_rows_per_s", r["rows_per_s"])  # in-process: no start-up inside the timing
        first = r.get("first_batch_s")
        print(f"{name:<14} {r['seconds']:8.1f} {r['rows_per_s']:8.3f} {'-' if steady is None else f'{steady:.3f}':>14} "
              f"{'-' if first is None else f'{first:.1f}':>14}")
    for k, v in summary.items():
        print(f"{k}: {v if not isinstance(v, float) else round(v, 3)}")
    for r in results.values():
        r.pop("texts")
    results["ray_noop"] = noop
    args.out.parent.mkdir(parents=True, exist_ok=True)
    env = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
           "torch": torch.__version__, "ray": ray.__version__, "loadavg_before": load_before,
           "loadavg_after": os.getloadavg()}
    args.out.write_text(json.dumps({"settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                                    "environment": env, "results": results, "summary": summary}, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
