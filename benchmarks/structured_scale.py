"""CPU seconds and peak RSS of one JSON Schema compile per fresh process, split by stage.

`bench_structured.py` compiles every schema in one long-lived worker, whose resident memory
grows from schema to schema (allocator pools, the shared-walk memo): its peak RSS of a small
schema can read 1 GB where the compile alone needs 400 MB. This script starts a fresh process
per schema (the default tokenizer loaded and warmed first, the disk cache off, a CPU limit),
so each figure is that schema's own, and splits the time into the character automaton
(``structured language``), the lift to tokens and the tables (logger ``fstbeam.compiler.pipeline``).

    python benchmarks/structured_scale.py DATA_DIR NAME [NAME ...] [--cpu 30] [--out FILE]

NAME is a file name in DATA_DIR without ``.json`` (e.g. ``Github_hard---o21192``). Prints a
table; writes JSON to benchmarks/results/structured_scale.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
STAGES = ("structured language", "grammar", "lift", "tables")


def child(path: str) -> None:
    """Compile one schema in this process; print the result as one JSON line."""
    import logging

    stage_cpu: dict[str, float] = {}
    started: list[str | None] = [None]

    class Stages(logging.Handler):
        # "stage X..." starts a stage, "stage X: 1.2 s" ends it: CPU seconds between the two
        def emit(self, record: logging.LogRecord) -> None:
            m = re.match(r"stage (.+?)(\.\.\.|: [0-9.]+ s)$", record.getMessage())
            if m and m[1] in STAGES:
                if m[2] == "...":
                    stage_cpu[m[1]] = -time.process_time()
                    started[0] = m[1]
                else:
                    stage_cpu[m[1]] = round(stage_cpu.get(m[1], 0.0) + time.process_time(), 2)
                    started[0] = None
                # so that a compile killed at the CPU limit still tells where its time went
                print(json.dumps({"partial": stage_cpu, "in": started[0]}), flush=True)

    pipeline = logging.getLogger("fstbeam.compiler.pipeline")
    pipeline.setLevel(logging.INFO)
    pipeline.addHandler(Stages())
    import fstbeam

    schema = json.loads(Path(path).read_text())["schema"]
    vocab = fstbeam.load_vocab("default")
    fstbeam.compile_constraints(words=["warm"], tokenizer=vocab)  # the tokenizer's index, built once
    out: dict = {"ready_rss_mb": _peak_mb()}
    stage_cpu.clear()
    c = time.process_time()
    try:
        cc = fstbeam.compile_constraints(json_schema=schema, tokenizer=vocab)
        out["states"] = int(cc.hard.num_states)
    except Exception as exc:  # a refusal: its message is the result
        out["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    out.update(cpu_s=round(time.process_time() - c, 2), peak_rss_mb=_peak_mb(), stages_cpu_s=stage_cpu)
    print(json.dumps(out), flush=True)


def _peak_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def measure(path: Path, cpu: int) -> dict:
    env = {**os.environ, "FSTBEAM_NO_DISK_CACHE": "1"}
    cmd = [sys.executable, __file__, "--child", str(path)]
    limit = lambda: resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))  # noqa: E731
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, preexec_fn=limit, timeout=8 * cpu)
    except subprocess.TimeoutExpired:
        return {"error": f"wall time-out (> {8 * cpu} s)"}
    lines = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    if lines and "partial" not in lines[-1]:
        return lines[-1]
    why = f"time-out (> {cpu} CPU-s)" if p.returncode in (-9, -24, 152) else f"died (rc {p.returncode})"
    if not lines:
        return {"error": why}
    done = {k: v for k, v in lines[-1]["partial"].items() if v >= 0}
    return {"error": f"{why} in {lines[-1]['in'] or 'the compile'}", "stages_cpu_s": done}


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--cpu", type=int, default=30, help="CPU seconds per compile (default 30, the bench's limit)")
    ap.add_argument("--out", default=str(HERE / "results" / "structured_scale.json"))
    args = ap.parse_args()
    rows = {}
    print("| schema | CPU s | peak RSS | char automaton | its optimize | lift | tables | result |\n|---|---|---|---|---|---|---|---|")
    for name in args.names:
        r = measure(Path(args.data_dir) / f"{name}.json", args.cpu)
        rows[name] = r
        st = r.get("stages_cpu_s", {})
        f = lambda k: f"{st[k]:.1f}" if st.get(k, -1) >= 0 else "-"  # noqa: E731
        print(f"| {name} | {r.get('cpu_s', '-')} | {r.get('peak_rss_mb', '-')} MB | {f('structured language')} | "
              f"{f('grammar')} | {f('lift')} | {f('tables')} | {r.get('error') or str(r.get('states')) + ' token states'} |", flush=True)
    ok = [r for r in rows.values() if "states" in r and r["cpu_s"] <= args.cpu and r["peak_rss_mb"] <= 1024]
    print(f"\n{len(ok)}/{len(rows)} compiled within {args.cpu} CPU-s and 1 GB")
    Path(args.out).write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cpu_limit_s": args.cpu,
                                          "load_avg": os.getloadavg(), "schemas": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
