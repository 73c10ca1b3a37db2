"""JSON Schema constraints on JSONSchemaBench: fstbeam beside llguidance, XGrammar and outlines-core
(issue 36), the same schemas and the same tokenizer (the default Gemma 3 270M, 262,144 ids).

    python benchmarks/bench_structured.py ../shared/data/jsonschemabench_dev --limit 200
    python benchmarks/bench_structured.py DATA --engines fstbeam llguidance --limit 50
    python benchmarks/bench_structured.py DATA --limit 200 --e2e 20      # also end to end with the model

Per engine, one at a time, each in a worker process of its own (benchmarks/structured_runner.py),
single-threaded, with a time-out per schema: schemas compiled (and why not, grouped); valid
instances accepted and invalid ones rejected (each instance serialized as
structured_data.SERIALIZATION says, tokenized with the tokenizer, its tokens walked through the
engine's masks, then the end checked for accepting); time to first mask (compile + the first
mask) p50/p99; the mask per token p50/p99 (the fill of a preallocated bitmask row, every step of
every walk); the peak RSS per schema. --e2e N: structured_e2e.py. Writes
benchmarks/results/structured.json and docs/structured_bench.png; prints the table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from structured_data import SERIALIZATION, load_cases, percentile, share, stratified  # noqa: E402
from structured_runner import reason, run_engine  # noqa: E402

RESULTS = Path(__file__).parent / "results"
PNG = Path(__file__).parent.parent / "docs" / "structured_bench.png"
ENGINES = ["fstbeam", "fstbeam-strict", "llguidance", "llguidance-lenient", "xgrammar", "outlines-core"]
OPTIONAL = ["xgrammar-nonstrict"]  # on request (--engines): its compiles take ~100x XGrammar's default


def round_robin(cases: list[Any]) -> list[Any]:
    by: dict[str, list[Any]] = {}
    for c in cases:
        by.setdefault(c.source, []).append(c)
    out, queues = [], list(by.values())
    while any(queues):
        out += [q.pop(0) for q in queues if q]
    return out


def tokenize(cases: list[Any]) -> dict[str, list[tuple[bool, list[int]]]]:
    from tokenizers import Tokenizer

    from fstbeam.files.default_model import default_tokenizer_dir

    tok = Tokenizer.from_file(str(default_tokenizer_dir() / "tokenizer.json"))
    return {c.name: [(v, tok.encode(text, add_special_tokens=False).ids) for v, text in c.instances] for c in cases}


def summarize(engine: str, run: dict[str, Any], cases: list[Any]) -> dict[str, Any]:
    per = run["schemas"]
    compiled = [c.name for c in cases if per.get(c.name, {}).get("compiled") and not per[c.name].get("walk_failed")]
    why = Counter(reason(per[c.name].get("error", "?")) for c in cases if c.name not in compiled)
    va = vt = ir = it = exact = 0
    mask: list[float] = []
    mask_cpu: list[float] = []
    for n in compiled:
        r = per[n]
        v = [w for w in r["walks"] if w["valid"]]
        i = [w for w in r["walks"] if not w["valid"]]
        va += sum(w["accepted"] for w in v)
        vt += len(v)
        ir += sum(not w["accepted"] for w in i)
        it += len(i)
        exact += all(w["accepted"] == w["valid"] for w in r["walks"])
        mask += r["mask_s"]
        mask_cpu += r.get("mask_cpu_s", [])
    ttfm = [per[n]["ttfm_s"] for n in compiled]
    ttfm_cpu = [per[n]["ttfm_cpu_s"] for n in compiled if "ttfm_cpu_s" in per[n]]
    rss = [per[c.name]["peak_rss_mb"] for c in cases if "peak_rss_mb" in per.get(c.name, {})]
    ms = lambda x: None if x is None else round(x * 1e3, 2)
    us = lambda x: None if x is None else round(x * 1e6, 2)
    by_source: dict[str, list[int]] = {}
    for c in cases:
        s = by_source.setdefault(c.source, [0, 0])
        s[0] += c.name in compiled
        s[1] += 1
    return {
        "engine": engine, "label": run["info"].get("label", engine) + (" (cut short)" if run.get("partial") else ""),
        "setup_s": run["info"].get("setup_s"),
        "schemas": len(cases), "compiled": len(compiled), "compiled_pct": share(len(compiled), len(cases)),
        "not_compiled_why": dict(why.most_common()),
        "valid": vt, "valid_accepted": va, "valid_accepted_pct": share(va, vt),
        "invalid": it, "invalid_rejected": ir, "invalid_rejected_pct": share(ir, it),
        "schemas_all_instances_right_pct": share(exact, len(cases)),
        "ttfm_ms_p50": ms(percentile(ttfm, 50)), "ttfm_ms_p99": ms(percentile(ttfm, 99)),
        "ttfm_cpu_ms_p50": ms(percentile(ttfm_cpu, 50)), "ttfm_cpu_ms_p99": ms(percentile(ttfm_cpu, 99)),
        "mask_us_p50": us(percentile(mask, 50)), "mask_us_p99": us(percentile(mask, 99)), "masks_timed": len(mask),
        "mask_cpu_us_p50": us(percentile(mask_cpu, 50)), "mask_cpu_us_p99": us(percentile(mask_cpu, 99)),
        "peak_rss_mb_p50": percentile(rss, 50), "peak_rss_mb_max": max(rss) if rss else None,
        "schemas_over_1gb": sum(x > 1024 for x in rss),
        "compiled_by_source": {s: f"{a}/{b}" for s, (a, b) in sorted(by_source.items())},
    }


def _compact(run: dict[str, Any]) -> dict[str, Any]:
    """A run without its every-step mask times; each walk as [valid, accepted, tokens walked, tokens]."""
    per = {}
    for name, r in run["schemas"].items():
        r = {k: v for k, v in r.items() if k not in ("mask_s", "mask_cpu_s")}
        for k in ("ttfm_s", "ttfm_cpu_s"):
            if k in r:
                r[k] = round(r[k], 5)
        if "walks" in r:
            r["walks"] = [[int(w["valid"]), int(w["accepted"]), w["at"], w["tokens"]] for w in r["walks"]]
        per[name] = r
    return {**run, "schemas": per}


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| engine | schemas compiled | valid accepted | invalid rejected | schemas all right | time to first mask p50 / p99 wall (CPU) "
            "| mask per token p50 / p99 wall (CPU) | peak RSS p50 / max |")
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        f = lambda x, u="": "-" if x is None else f"{x:g}{u}"
        lines.append(f"| {r['label']} | {f(r['compiled_pct'], '%')} ({r['compiled']}/{r['schemas']}) | {f(r['valid_accepted_pct'], '%')} ({r['valid_accepted']}/{r['valid']}) "
                     f"| {f(r['invalid_rejected_pct'], '%')} ({r['invalid_rejected']}/{r['invalid']}) | {f(r['schemas_all_instances_right_pct'], '%')} "
                     f"| {f(r['ttfm_ms_p50'], ' ms')} / {f(r['ttfm_ms_p99'], ' ms')} ({f(r['ttfm_cpu_ms_p50'])} / {f(r['ttfm_cpu_ms_p99'])}) "
                     f"| {f(r['mask_us_p50'], ' µs')} / {f(r['mask_us_p99'], ' µs')} ({f(r['mask_cpu_us_p50'])} / {f(r['mask_cpu_us_p99'])}) "
                     f"| {f(r['peak_rss_mb_p50'], ' MB')} / {f(r['peak_rss_mb_max'], ' MB')} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [f"{r['engine']}\n({r['schemas']} schemas)" for r in rows]
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    w = 0.2
    for k, (key, lab) in enumerate((("compiled_pct", "schemas compiled"), ("valid_accepted_pct", "valid accepted"),
                                    ("invalid_rejected_pct", "invalid rejected"), ("schemas_all_instances_right_pct", "schemas all right"))):
        ax[0].bar([i + (k - 1.5) * w for i in range(len(rows))], [r[key] or 0 for r in rows], w, label=lab)
    ax[0].set_ylabel("%")
    ax[0].set_ylim(0, 105)
    ax[0].legend(fontsize=7, loc="lower left")
    for a, (p50, p99, unit, title) in zip(ax[1:], (("ttfm_cpu_ms_p50", "ttfm_cpu_ms_p99", "ms", "time to first mask (compile), CPU time"),
                                                  ("mask_cpu_us_p50", "mask_cpu_us_p99", "µs", "mask per token, CPU time"))):
        a.bar([i - 0.2 for i in range(len(rows))], [r.get(p50) or 0 for r in rows], 0.4, label="p50")
        a.bar([i + 0.2 for i in range(len(rows))], [r.get(p99) or 0 for r in rows], 0.4, label="p99")
        a.set_yscale("log")
        a.set_ylabel(unit)
        a.set_title(title, fontsize=9)
        a.legend(fontsize=7)
    for a in ax:
        a.set_xticks(range(len(rows)))
        a.set_xticklabels(names, rotation=20, fontsize=8)
    fig.suptitle("JSONSchemaBench sample (stratified by source), Gemma 3 tokenizer, compact JSON, one engine at a time, single-threaded", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir", help="JSONSchemaBench sample: *.json files with 'schema' and 'tests'")
    ap.add_argument("--limit", type=int, help="schemas, stratified by source (the file-name prefix before ---); default all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engines", nargs="+", default=ENGINES, choices=ENGINES + OPTIONAL)
    ap.add_argument("--timeout", type=float, default=30.0, help="CPU seconds per schema's compile (default 30; wall: 8x)")
    ap.add_argument("--walk-timeout", type=float, default=120.0, help="CPU seconds per schema's instance walks (default 120)")
    ap.add_argument("--e2e", type=int, default=0, metavar="N", help="also decode N schemas end to end with the default model")
    ap.add_argument("--e2e-without-anchors", action="store_true", help="end to end: fstbeam only (not the llguidance logits processor)")
    ap.add_argument("--e2e-only", action="store_true", help="only the end-to-end part (kept from --out if present)")
    ap.add_argument("--e2e-from", metavar="JSON", help="take the end-to-end part from another result file of the same sample")
    ap.add_argument("--out", default=str(RESULTS / "structured.json"))
    ap.add_argument("--merge", action="store_true", help="keep the other engines' runs already in --out (same schemas); "
                    "with --engines and nothing to run (e.g. --engines fstbeam --skip-run) it only re-summarizes")
    ap.add_argument("--skip-run", action="store_true", help="run no engine: summarize what --merge kept")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--subset", nargs="+", default=[], metavar="ENGINE=N",
                    help="run ENGINE on a stratified N of the schemas only (a slow engine; its row says how many)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # kill: the runner's finally still stops its worker
    cases = load_cases(args.data_dir, args.limit, args.seed)
    out_path = Path(args.out)
    raw_path = out_path.with_suffix(".runs.tmp")  # every mask time, for --merge (git-ignored)
    old = json.loads(out_path.read_text()) if (args.merge or args.e2e_only) and out_path.exists() else {}
    raw = json.loads(raw_path.read_text()) if (args.merge or args.e2e_only) and raw_path.exists() else {}
    runs = raw.get("runs", {}) if raw.get("schemas") == [c.name for c in cases] else {}
    print(f"{len(cases)} schemas, {sum(len(c.instances) for c in cases)} instances; serialization: {SERIALIZATION}", flush=True)
    if not (args.e2e_only or args.skip_run):
        ids = tokenize(cases)
        subset = {k: int(v) for k, v in (x.split("=", 1) for x in args.subset)}
        for engine in args.engines:
            t = time.perf_counter()
            mine = cases
            if engine in subset:
                keep = set(stratified([c.name for c in cases], subset[engine], args.seed))
                mine = [c for c in cases if c.name in keep]
            mine = round_robin(mine)  # sources interleaved: a run cut short still spans them
            print(f"== {engine} ({len(mine)} schemas)", flush=True)
            names = [c.name for c in cases]

            def save(partial: dict[str, Any], engine: str = engine) -> None:
                raw_path.write_text(json.dumps({"schemas": names, "runs": {**runs, engine: partial}}))

            raw_path.parent.mkdir(parents=True, exist_ok=True)
            runs[engine] = run_engine(engine, mine, ids, args.timeout, args.walk_timeout, save=save)
            runs[engine]["wall_s"] = round(time.perf_counter() - t, 1)
            runs[engine]["date"] = time.strftime("%Y-%m-%d %H:%M:%S")
            raw_path.parent.mkdir(parents=True, exist_ok=True)
            raw_path.write_text(json.dumps({"schemas": [c.name for c in cases], "runs": runs}))  # each engine kept as it ends
    rows = [summarize(e, runs[e], [c for c in cases if c.name in runs[e]["schemas"]]) for e in ENGINES + OPTIONAL if e in runs]
    print(table(rows))
    whole = [e for e in runs if not runs[e].get("partial")] or list(runs)  # a run cut short does not shrink the common set
    common = [c for c in cases if all(c.name in runs[e]["schemas"] for e in whole)]
    rows_common = []
    if runs and len(common) < len(cases):  # a subset engine: every engine again on the schemas all of them ran
        rows_common = [summarize(e, runs[e], [c for c in common if c.name in runs[e]["schemas"]]) for e in ENGINES + OPTIONAL if e in runs]
        print(f"\non the {len(common)} schemas every engine ran (a run cut short: those of them it reached):")
        print(table(rows_common))
    print("(times: wall; in parentheses the worker's CPU time, same units: the machine is shared)")
    for r in rows:
        if r["not_compiled_why"]:
            print(f"{r['engine']} not compiled: " + "; ".join(f"{n}x {w}" for w, n in list(r["not_compiled_why"].items())[:8]))
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"), "data_dir": str(args.data_dir), "limit": args.limit, "seed": args.seed,
        "serialization": SERIALIZATION, "tokenizer": "default (Gemma 3 270M, 262,144 ids)",
        "threads": "1 per engine (RAYON/OMP/MKL/NUMBA_NUM_THREADS=1, torch 1, XGrammar max_threads=1)",
        "timeouts_cpu_s": {"compile": args.timeout, "walk": args.walk_timeout, "wall_factor": 8},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(), "load_avg": os.getloadavg()},
        "schemas": [c.name for c in cases], "summary": rows, "summary_common_schemas": rows_common, "runs": {e: _compact(r) for e, r in runs.items()}, "e2e": old.get("e2e"),
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    raw_path.write_text(json.dumps({"schemas": result["schemas"], "runs": runs}))
    if args.e2e_from:
        result["e2e"] = json.loads(Path(args.e2e_from).read_text())["e2e"]
    if args.e2e:
        from structured_e2e import run_e2e

        result["e2e"] = run_e2e(cases, args.e2e, anchors=not args.e2e_without_anchors)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=1))
    print(f"wrote {out_path}")
    if not args.no_plot and rows:
        plot(rows, PNG)
        print(f"wrote {PNG}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
