"""End-to-end check of ``fstbeam batch``: a 1,000-row JSONL file with per-row phrases, decoded
in-process and on a local Ray cluster: the Ray run (1 actor) is interrupted midway (SIGINT to the
command, or SIGKILL) and rerun (2 actors); the Ray output must equal the in-process output row
for row, with no row lost or doubled. A tiny random-weight model keeps it to minutes on a CPU.

    python benchmarks/check_batch_resume.py [--rows 1000] [--kill-after 5] [--signal INT|KILL]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
sys.path.insert(0, str(ROOT / "tests" / "distributed"))


def build(tmp: Path, rows: int):
    from conftest import model_dir, words_artifact  # the test fixtures' tiny model and word list

    class Factory:
        def mktemp(self, name):
            p = tmp / name
            p.mkdir()
            return p

    md = model_dir.__wrapped__(Factory())
    art = words_artifact.__wrapped__(md, Factory())
    from batch_helpers import make_rows, write_jsonl

    write_jsonl(tmp / "prompts.jsonl", make_rows(rows))
    return md, art


def command(md, art, inp, out, *extra):
    return [sys.executable, "-m", "fstbeam.cli", "batch", "--input", str(inp), "--output", str(out), "--constraints",
            str(art), "--model", str(md), "--device", "cpu", "--format", "raw", "--beam", "6", "--max-new-tokens", "40",
            "--shard-size", "50", "--rows-per-task", "10", *extra]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--kill-after", type=int, default=5, help="interrupt once this many shards are written")
    ap.add_argument("--signal", default="INT", choices=["INT", "KILL"], help="Ctrl-C or a crash (default INT)")
    ap.add_argument("--out", type=Path, default=RESULTS / "batch_resume_check.json")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="fstbeam-batch-"))
    md, art = build(tmp, args.rows)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    report = {"rows": args.rows}

    t = time.perf_counter()
    rc = subprocess.run(command(md, art, tmp / "prompts.jsonl", tmp / "local"), env=env).returncode
    report["in_process"] = {"exit": rc, "seconds": round(time.perf_counter() - t, 1)}

    # one actor for the interrupted run (its shards complete in order, so some are written before
    # the interrupt; with two, a slow-starting actor holds early rows back until near the end),
    # two for the rerun: how a job runs may change between runs
    ray_cmd = command(md, art, tmp / "prompts.jsonl", tmp / "ray", "--ray-address", "local", "--concurrency", "2")
    t = time.perf_counter()
    proc = subprocess.Popen(ray_cmd[:-1] + ["1"], env=env, stderr=subprocess.PIPE, text=True)
    while len(list((tmp / "ray").glob("rows-*.jsonl"))) < args.kill_after and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(getattr(signal, f"SIG{args.signal}"))
    _, err = proc.communicate(timeout=300)
    kept = len(list((tmp / "ray").glob("rows-*.jsonl")))
    report["ray_interrupted"] = {"exit": proc.returncode, "shards_kept": kept, "shards": args.rows // 50, "signal": args.signal,
                                 "last_line": (err.strip().splitlines() or [""])[-1],
                                 "seconds": round(time.perf_counter() - t, 1)}
    t = time.perf_counter()
    rc = subprocess.run(ray_cmd, env=env).returncode
    report["ray_rerun"] = {"exit": rc, "seconds": round(time.perf_counter() - t, 1)}

    def rows(d):
        return [json.loads(x) for f in sorted((tmp / d).glob("rows-*.jsonl")) for x in f.read_text().splitlines()]

    a, b = rows("local"), rows("ray")
    ids = [r["id"] for r in b]
    report.update(rows_in_process=len(a), rows_ray=len(b), distinct_ids_ray=len(set(ids)),
                  ids_in_order=ids == list(range(args.rows)), equal_row_for_row=a == b,
                  files_identical=all((tmp / "local" / f.name).read_bytes() == f.read_bytes()
                                      for f in (tmp / "ray").glob("rows-*.jsonl")),
                  satisfied=sum(r["satisfied"] for r in b), errors=sum(bool(r["error"]) for r in b))
    print(json.dumps(report, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0 if report["equal_row_for_row"] and report["distinct_ids_ray"] == args.rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
