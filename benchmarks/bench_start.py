"""Warm start: ``fstbeam serve`` to ready, and one ``fstbeam generate --cefr A1`` prompt, end to end.

    python benchmarks/bench_start.py --runs 2

The default model must already be converted in the cache (a warm start). For each run it
reports wall-clock seconds and the child's CPU seconds (user + system; on a shared, busy machine
CPU time is the steadier figure), and for the server the stages it logs (import, model,
vocabulary, ...). Results go to ``benchmarks/results/start.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
PROMPT = "What do you eat for breakfast?"


def _cpu(pid: int) -> float:
    """utime + stime of a live process, from /proc (seconds)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_once() -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "fstbeam.serve", "--port", "0", "--format", "qa", "--quiet"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=ENV)
    stages = {}
    for line in proc.stderr:
        m = re.search(r"start: (.+?) ([0-9.]+) s \(cpu ([0-9.]+) s\)$", line.strip())
        if m:
            stages[m.group(1)] = {"wall_s": float(m.group(2)), "cpu_s": float(m.group(3))}
        if "fstbeam serve: ready on " in line:
            break
    wall, cpu = time.perf_counter() - t0, _cpu(proc.pid)
    proc.terminate()
    proc.wait(60)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "stages": stages}


def generate_once() -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", "from fstbeam.cli import main; raise SystemExit(main())", "generate", "--cefr", "A1", "--format", "qa",
                          "--stop-at-newline", "-q", PROMPT], capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "maxrss_mb": round(after.ru_maxrss / 1024),
            "exit": out.returncode, "text": out.stdout.strip()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/start.json"))
    args = ap.parse_args()
    rows = {"serve": [], "generate": []}
    for _ in range(args.runs):
        rows["serve"].append(serve_once())
        print("serve to ready:", rows["serve"][-1], flush=True)
        rows["generate"].append(generate_once())
        print("generate --cefr A1:", rows["generate"][-1], flush=True)
    out = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load": os.getloadavg()}, **rows}
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
