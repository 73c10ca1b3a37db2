"""The hard lift before and after shared interiors, side by side (docs/tables.md, "Shared interiors").

    python benchmarks/bench_lift.py                        # before = /work/main, after = this tree
    python benchmarks/bench_lift.py --before PATH --sample DIR

Each compile runs in a fresh child process with the default (Gemma 3) tokenizer, its tree first
on PYTHONPATH, the disk cache of compiled automata off (the per-tokenizer index is warmed first,
outside the timing). Per case: compile CPU seconds, wall seconds, the child's peak RSS, token
arcs stored (``len(block_key)``), table bytes. Cases: development-sample JSON Schemas (key
"schema"), the CEFR A1 word list and the dates grammar. Prints a table and writes
benchmarks/results/lift.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SCHEMAS = [
    "Glaiveai2K---calculate_area_d97996ce", "Github_medium---o42140", "Kubernetes---kb_289_Normalized",
    "Github_easy---o21083", "Github_easy---o10008", "Github_easy---o12078",
]


def cases(sample: Path) -> list[tuple[str, dict]]:
    out = [(name, {"json_schema": json.loads((sample / f"{name}.json").read_text())["schema"]}) for name in SCHEMAS
           if (sample / f"{name}.json").exists()]
    return out + [("cefr A1 (word list)", {"cefr": "A1"}),
                  ("dates grammar", {"grammar": "dates", "grammar_params": {"mode": "filter"}})]


def child(kwargs: dict) -> dict:
    """In the child: warm the tokenizer index, turn the compiled-automaton cache off, compile."""
    import fstbeam
    import fstbeam.compiler.hard.automaton as automaton

    fstbeam.compile_constraints(words=["warm"], tokenizer="default")
    automaton.load_arrays = lambda *a, **k: None
    automaton.store_arrays = lambda *a, **k: None
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    cpu, wall = time.process_time(), time.perf_counter()
    cc = fstbeam.compile_constraints(tokenizer="default", **kwargs)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    h = cc.hard
    return {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10,
            "rss_before_mb": rss_before, "states": int(len(h.final)), "token_arcs": int(len(h.block_key)),
            "table_mb": round(h.nbytes / 2**20, 1), "dense_rows": int(len(h.dense_masks))}


def run(tree: Path, kwargs: dict, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
    env.setdefault("FSTBEAM_CACHE", "/work/cache-src")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(kwargs)]
    try:
        p = subprocess.run(cmd, env=env, cwd=str(tree), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:g} s"}
    if p.returncode:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default="/work/main", help="tree of the code before (default /work/main)")
    ap.add_argument("--sample", default=str(ROOT.parent / "shared" / "data" / "jsonschemabench_dev"))
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    rows = []
    keys = ("cpu_s", "wall_s", "peak_rss_mb", "token_arcs", "table_mb", "dense_rows")
    print(f"{'case':40} {'':6} " + " ".join(f"{k:>12}" for k in keys))
    for name, kwargs in cases(Path(args.sample)):
        row: dict = {"case": name}
        for side, tree in (("before", Path(args.before)), ("after", ROOT)):
            row[side] = r = run(tree, kwargs, args.timeout)
            cells = [f"{r.get(k, '-'):>12}" for k in keys] if "error" not in r else [r["error"]]
            print(f"{name[:40]:40} {side:6} " + " ".join(cells), flush=True)
        rows.append(row)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"machine": platform.node(), "python": platform.python_version(), "before": args.before,
           "after": str(ROOT), "tokenizer": "default (Gemma 3, 262,144 ids)", "rows": rows}
    (RESULTS / "lift.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {RESULTS / 'lift.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
