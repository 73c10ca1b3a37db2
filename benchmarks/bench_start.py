"""Warm start: ``fstbeam serve`` to ready, and one ``fstbeam generate --cefr A1`` prompt, end to end.

    python benchmarks/bench_start.py --runs 2 [--baseline /path/to/other/checkout]

The default model must already be converted in the cache (a warm start). For each run it
reports wall-clock seconds and the child's CPU seconds (user + system; on a shared, busy machine
CPU time is the steadier figure), and the stages each command reports: the server's start-up log
(import, model, vocabulary, server) and ``fstbeam generate --timings`` (import, model,
constraints, decode; "exit" is the rest: interpreter start and exit). ``--baseline`` runs the
same commands from another checkout in alternation (same machine, same load), for an A/B.
Results go to ``benchmarks/results/start.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "What do you eat for breakfast?"
GOALS = {"serve": 5.0, "generate": 8.0}  # issue 24: warm start to ready, one A1 prompt (wall s)
# the console script `fstbeam` (fstbeam.cli.main:command), run from the checkout under test
FSTBEAM = "import sys; from fstbeam.cli.main import command; sys.argv[0] = 'fstbeam'; raise SystemExit(command())"


def _env(root: Path) -> dict:
    return dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


def _cpu(pid: int) -> float:
    """utime + stime of a live process, from /proc (seconds)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_once(root: Path) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "fstbeam.serve", "--port", "0", "--format", "qa", "--quiet"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=_env(root), cwd=root)
    assert proc.stderr is not None
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


def generate_once(root: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    args = ["generate", "--cefr", "A1", "--format", "qa", "--stop-at-newline", "-q", PROMPT]
    if (root / "fstbeam/_startup.py").exists():  # a checkout with --timings and the console entry
        cmd = [sys.executable, "-c", FSTBEAM, *args, "--timings"]
    else:
        cmd = [sys.executable, "-c", "from fstbeam.cli import main; raise SystemExit(main())", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(root), cwd=root)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stages = {}
    for line in out.stderr.splitlines():
        m = re.match(r"fstbeam generate: (\w+) ([0-9.]+) s \(cpu ([0-9.]+) s\)$", line.strip())
        if m:
            stages[m.group(1)] = {"wall_s": float(m.group(2)), "cpu_s": float(m.group(3))}
    if "total" in stages:
        total = stages.pop("total")
        stages["exit"] = {"wall_s": round(wall - total["wall_s"], 2), "cpu_s": round(cpu - total["cpu_s"], 2)}
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "maxrss_mb": round(after.ru_maxrss / 1024),
            "exit": out.returncode, "text": out.stdout.strip(), "stages": stages}


def _line(kind: str, row: dict) -> str:
    st = ", ".join(f"{k} {v['wall_s']:.2f}/{v['cpu_s']:.2f}" for k, v in row["stages"].items())
    ok = "ok" if row["wall_s"] <= GOALS[kind] else "OVER"
    return f"{kind:8s} {row['wall_s']:6.2f} s wall {row['cpu_s']:6.2f} s cpu  [{ok} <= {GOALS[kind]:.0f} s]  stages (wall/cpu s): {st}"


def _summary(rows: list[dict]) -> dict:
    walls, cpus = [r["wall_s"] for r in rows], [r["cpu_s"] for r in rows]
    return {"wall_s_median": statistics.median(walls), "wall_s_min": min(walls), "cpu_s_median": statistics.median(cpus)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--baseline", default=None, metavar="CHECKOUT", help="another checkout to run in alternation (A/B)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/start.json"))
    args = ap.parse_args()
    roots = {"this": ROOT, **({"baseline": Path(args.baseline).resolve()} if args.baseline else {})}
    rows: dict = {name: {"serve": [], "generate": []} for name in roots}
    for _ in range(args.runs):
        for name, root in roots.items():
            for kind, once in (("serve", serve_once), ("generate", generate_once)):
                rows[name][kind].append(once(root))
                print(f"{name:8s} {_line(kind, rows[name][kind][-1])}", flush=True)
    out = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load": os.getloadavg()},
           **rows["this"], "summary": {k: _summary(v) for k, v in rows["this"].items()}}
    if args.baseline:
        out["baseline"] = {"checkout": str(roots["baseline"]), **rows["baseline"],
                           "summary": {k: _summary(v) for k, v in rows["baseline"].items()}}
    for name in roots:
        for kind in ("serve", "generate"):
            sm = _summary(rows[name][kind])
            print(f"{name:8s} {kind:8s} median {sm['wall_s_median']:.2f} s wall (min {sm['wall_s_min']:.2f}), "
                  f"{sm['cpu_s_median']:.2f} s cpu; goal <= {GOALS[kind]:.0f} s")
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
