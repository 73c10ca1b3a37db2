"""How long a usage error of the command lines takes, end to end (a new process each time).

    python benchmarks/bench_usage_errors.py [--repeats 3] [--out benchmarks/results/usage_errors.json]

Issue 25's target: every usage error returns within 2 s, before any model load. Prints one row
per command line (min and max wall seconds over the repeats) and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_usage_errors import CASES  # noqa: E402 - after the path insert

MODULE = {"generate": "fstbeam.cli", "batch": "fstbeam.cli", "compile": "fstbeam.cli.compile_constraints",
          "inspect": "fstbeam.cli.compile_constraints"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/usage_errors.json"))
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    rows = []
    with tempfile.TemporaryDirectory() as d:
        Path(d, "a.fstbeam").write_bytes(b"x")
        Path(d, "in.jsonl").write_text('{"prompt": "x"}\n')
        for cmd, argv, _ in CASES:
            code = ("import sys; from fstbeam.cli.compile_constraints import main; sys.exit(main())"
                    if cmd in ("compile", "inspect") else "import sys; from fstbeam.cli import main; sys.exit(main())")
            times = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                proc = subprocess.run([sys.executable, "-c", code, cmd, *argv], check=False, cwd=d, env=env, capture_output=True)
                times.append(time.perf_counter() - t)
                assert proc.returncode == 2, proc.stderr
            rows.append({"command": " ".join([cmd, *argv]), "min_s": min(times), "max_s": max(times)})
            print(f"{min(times):6.2f} {max(times):6.2f}  {cmd} {' '.join(argv)}")
    worst = max(r["max_s"] for r in rows)
    print(f"worst {worst:.2f} s over {len(rows)} usage errors x {args.repeats}; load average {os.getloadavg()[0]:.1f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows, "worst_s": worst, "load": os.getloadavg()[0]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
