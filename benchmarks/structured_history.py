"""How a process's earlier compiles change a median schema's compile time (bench_structured's
time to first mask is taken in one worker per engine, schema after schema).

    python benchmarks/structured_history.py ../shared/data/jsonschemabench_dev \
        --from benchmarks/results/structured_s23_quiet.json

From a bench_structured result, the schemas around fstbeam's median time to first mask (the
``--band`` share of them) and the heavy ones (``--heavy`` CPU seconds and more, under the
bench's 30 s time-out) are taken. In one process, set up as the bench's worker (one thread,
``load_vocab("default")``, one word-list compile), the median band is compiled (time to first
mask, CPU) in a fresh process, then after every heavy schema, then once more; the glibc heap is
trimmed before each median compile as the bench's worker does (`structured_runner._reset_peak`),
to read each schema's own peak RSS. ``--no-trim``: not trimmed, as a server's process compiles
schema after schema (fstbeam's own trims inside a large compile still run). The table gives each
pass's p50 with its user and system CPU and minor page faults. Run it alone: two processes on
two cores change each other's times.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from structured_runner import THREAD_VARS, _reset_peak  # noqa: E402

RESULTS = Path(__file__).parent / "results"


def _pass(compile_one, names: list[str], schemas: dict[str, object], trim: bool = True) -> dict[str, float]:
    cpu, user, system, faults = [], [], [], []
    for name in names:
        if trim:  # (the bench's worker: each schema's peak RSS read from what the process holds)
            _reset_peak()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        c = time.process_time()
        compile_one(schemas[name])
        cpu.append(time.process_time() - c)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        user.append(r1.ru_utime - r0.ru_utime)
        system.append(r1.ru_stime - r0.ru_stime)
        faults.append(r1.ru_minflt - r0.ru_minflt)
    med = statistics.median
    return {"p50_ms": round(med(cpu) * 1000, 1), "user_ms": round(med(user) * 1000, 1),
            "system_ms": round(med(system) * 1000, 1), "minor_faults": med(faults)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir")
    ap.add_argument("--from", dest="source", required=True, help="a bench_structured result JSON with an fstbeam run")
    ap.add_argument("--engine", default="fstbeam", help="the run whose times choose the schemas (default fstbeam)")
    ap.add_argument("--band", type=float, default=0.3, help="share of the compiled schemas around the median (default 0.3)")
    ap.add_argument("--heavy", type=float, default=1.0, help="CPU seconds from which a schema is heavy (default 1)")
    ap.add_argument("--strict", action="store_true", help="compile with json_strict=True")
    ap.add_argument("--no-trim", action="store_true", help="no heap trim before each median compile (a server's process)")
    ap.add_argument("--out", default=str(RESULTS / "structured_history.json"))
    args = ap.parse_args()
    os.environ.update(THREAD_VARS)

    times = {n: r["ttfm_cpu_s"] for n, r in json.loads(Path(args.source).read_text())["runs"][args.engine]["schemas"].items()
             if r.get("compiled") and "ttfm_cpu_s" in r}
    ranked = sorted(times, key=times.__getitem__)
    lo = int(len(ranked) * (0.5 - args.band / 2))
    band = ranked[lo:lo + max(1, int(len(ranked) * args.band))]
    heavy = [n for n in ranked if args.heavy <= times[n] < 30]
    schemas = {n: json.loads((Path(args.data_dir) / f"{n}.json").read_text())["schema"] for n in band + heavy}

    import fstbeam

    vocab = fstbeam.load_vocab("default")
    fstbeam.compile_constraints(words=["warm"], tokenizer=vocab)  # the per-tokenizer index, built once

    def compile_one(schema: object) -> None:
        fstbeam.compile_constraints(json_schema=schema, tokenizer=vocab, json_strict=args.strict)

    trim = not args.no_trim
    rows = [("fresh process", _pass(compile_one, band, schemas, trim))]
    t = time.process_time()
    for name in heavy:
        try:
            compile_one(schemas[name])
        except Exception as exc:  # noqa: BLE001 - a refused schema still ran its compile
            print(f"  {name}: {type(exc).__name__}", file=sys.stderr)
    heavy_s = time.process_time() - t
    rows.append((f"after {len(heavy)} heavy schemas ({heavy_s:.0f} CPU-s)", _pass(compile_one, band, schemas, trim)))
    rows.append(("the band once more", _pass(compile_one, band, schemas, trim)))

    print(f"{len(band)} schemas around the median of {args.source} ({args.engine}), json_strict={args.strict}, "
          f"heap trimmed before each: {trim}")
    print("| pass | time to first mask p50 (CPU) | user | system | minor faults |")
    print("|---|---|---|---|---|")
    for label, r in rows:
        print(f"| {label} | {r['p50_ms']} ms | {r['user_ms']} ms | {r['system_ms']} ms | {r['minor_faults']:.0f} |")
    Path(args.out).write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d %H:%M:%S"), "source": args.source, "engine": args.engine, "strict": args.strict, "trim": trim,
        "band": band, "heavy": heavy, "passes": [{"pass": label, **r} for label, r in rows]}, indent=1))


if __name__ == "__main__":
    main()
