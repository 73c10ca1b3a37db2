"""Decode speed of this checkout against an earlier commit, at equal output lengths.

    python benchmarks/compare_decode.py                # against the end of wave 1 (c95bdee)
    python benchmarks/compare_decode.py --ref HEAD~3 --rounds 3

Issue 9 changed what the search does per step (word-counted DBA banks, word-completing and
shortest-path candidates, output guards); this checks that a step costs no more than before. Each
workload decodes the same 8 prompts to exactly ``--tokens`` tokens (``stopping="exhaustive"``,
plain log-probability ranking, no guards: the settings both versions have), so the number of
steps is equal and the seconds per step compare directly. The two versions run alternately, each
in its own process (a git worktree of ``--ref`` in a temporary folder), for ``--rounds`` rounds;
the minimum process CPU time per workload is kept. Writes benchmarks/results/decode_vs_ref.json.

``--tasks 1w,2w`` measures real inputs instead: the first ``--items`` sentences of
``bench_quality.py``'s section (a) (continue a sentence; ``none`` or 1, 2, 4 required words or a
3-word phrase), each version with its own ``bench_quality`` defaults and optimal stopping. The
outputs differ, so the figure is CPU seconds per output token (and model rows per token); the
reference commit must have ``benchmarks/bench_quality.py``. Writes
benchmarks/results/decode_vs_ref_tasks.json.
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

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = ["The weather today is", "My favourite food is", "Yesterday I went to", "The best way to learn a language is",
           "In the morning I usually", "Our teacher told us that", "The train to the city was", "When I was a child I"]
WORKLOADS = {"unconstrained": {}, "A1": {"cefr": "A1"}, "2 phrases": {"phrases": ["small house", "garden"]}}

CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(int(sys.argv[3]))
from fstbeam import compile_constraints
from fstbeam.runtime import Decoder
prompts, workloads, tokens = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[4])
dec = Decoder(device="cpu")
out = {}
for name, spec in workloads.items():
    cc = compile_constraints(tokenizer=dec.vocab, leading_space="cefr" in spec, **spec) if spec else None
    opts = dict(beam_size=5, max_new_tokens=tokens, stopping="exhaustive")
    dec.generate(prompts[:2], cc, **dict(opts, max_new_tokens=2))  # warm up
    t0, c0 = time.perf_counter(), time.process_time()
    res = dec.generate(prompts, cc, **opts)
    out[name] = {"cpu": time.process_time() - c0, "wall": time.perf_counter() - t0,
                 "tokens": [len(r.token_ids) for r in res]}
print("RESULT" + json.dumps(out))
"""


CHILD_TASKS = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(int(sys.argv[3]))
sys.path.insert(0, "benchmarks")
import bench_quality as bq
from fstbeam import compile_constraints
from fstbeam.runtime import Decoder
settings, items_n = json.loads(sys.argv[2]), int(sys.argv[4])
dec = Decoder(device="cpu")
items = bq.continuation_items(None)
opts = bq.options("defaults", dec, qa=False, max_new_tokens=32)
out = {}
for name in settings:
    use = [it for it in items if name == "none" or name in it["constraints"]][:items_n]
    ccs = [None if name == "none" else compile_constraints(phrases=it["constraints"][name], tokenizer=dec.vocab) for it in use]
    prompts = [it["prompt"] for it in use]
    dec.generate(prompts[:2], ccs[:2], **dict(opts, max_new_tokens=2))  # warm up
    t0, c0 = time.perf_counter(), time.process_time()
    res = dec.generate(prompts, ccs, **opts)
    out[name] = {"cpu": time.process_time() - c0, "wall": time.perf_counter() - t0, "rows": dec.last_stats.model_rows,
                 "tokens": [len(r.token_ids) for r in res]}
print("RESULT" + json.dumps(out))
"""


def run_once(pythonpath: Path, threads: int, count: int, tasks: list[str] | None = None) -> dict:
    """One child run: the fixed workloads (``count`` = output tokens) or, with ``tasks``,
    bench_quality's settings (``count`` = sentences per setting)."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    code, what = (CHILD, WORKLOADS) if tasks is None else (CHILD_TASKS, tasks)
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(PROMPTS), json.dumps(what), str(threads), str(count)],
                          capture_output=True, text=True, env=env, cwd=pythonpath)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"decode run at {pythonpath} failed:\n{proc.stderr[-3000:]}")
    return json.loads(line[len("RESULT"):])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default="c95bdee", help="commit to compare with (default: the end of wave 1)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=24, help="output tokens per input (every run decodes exactly this many)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tasks", default=None, help="comma-separated bench_quality (a) settings: none,1w,2w,4w,phrase3")
    ap.add_argument("--items", type=int, default=32, help="with --tasks: sentences per setting")
    ap.add_argument("--out", default=None, help="default: benchmarks/results/decode_vs_ref.json (_tasks.json with --tasks)")
    args = ap.parse_args(argv)
    tasks = args.tasks.split(",") if args.tasks else None
    out_path = args.out or str(ROOT / "benchmarks/results" / ("decode_vs_ref_tasks.json" if tasks else "decode_vs_ref.json"))
    ref = subprocess.run(["git", "rev-parse", "--short", args.ref], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    best: dict = {"ref": {}, "this": {}}
    with tempfile.TemporaryDirectory() as tmp:
        wt = Path(tmp) / "ref"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(wt), ref], cwd=ROOT, check=True)
        try:
            for rnd in range(args.rounds):
                for who, path in (("ref", wt), ("this", ROOT)):
                    res = run_once(path, args.threads, args.items if tasks else args.tokens, tasks)
                    for name, r in res.items():
                        if name not in best[who] or r["cpu"] < best[who][name]["cpu"]:
                            best[who][name] = r
                    print(f"round {rnd + 1} {who}: " + ", ".join(f"{n} {r['cpu']:.2f}s" for n, r in res.items()), flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=ROOT, check=False)
    if tasks:
        return report_tasks(best, tasks, ref, args, out_path)
    rows = {}
    print(f"\n{'workload':14s} {'ref s/step':>11s} {'this s/step':>12s} {'this/ref':>9s}  tokens equal")
    for name in WORKLOADS:
        a, b = best["ref"][name], best["this"][name]
        equal = a["tokens"] == b["tokens"]
        ratio = b["cpu"] / a["cpu"]
        rows[name] = {"ref_cpu_per_step": a["cpu"] / args.tokens, "this_cpu_per_step": b["cpu"] / args.tokens, "ratio": ratio,
                      "tokens_equal": equal, "ref_tokens": a["tokens"], "this_tokens": b["tokens"]}
        print(f"{name:14s} {a['cpu'] / args.tokens:11.3f} {b['cpu'] / args.tokens:12.3f} {ratio:9.3f}  {equal}")
    write(run_facts(ref, args, tokens=args.tokens, batch=len(PROMPTS), workloads=rows), out_path)
    return 0


def report_tasks(best: dict, tasks: list[str], ref: str, args, out_path: str) -> int:
    """CPU seconds and model rows per output token of each setting, both versions."""
    rows = {}
    print(f"\n{'setting':8s} {'ref s/token':>12s} {'this s/token':>13s} {'this/ref':>9s} {'rows/token ref':>15s} {'this':>6s}")
    for name in tasks:
        a, b = best["ref"][name], best["this"][name]
        ta, tb = max(1, sum(a["tokens"])), max(1, sum(b["tokens"]))
        ratio = (b["cpu"] / tb) / (a["cpu"] / ta)
        rows[name] = {"ref_cpu_per_token": a["cpu"] / ta, "this_cpu_per_token": b["cpu"] / tb, "ratio": ratio,
                      "ref_rows_per_token": a["rows"] / ta, "this_rows_per_token": b["rows"] / tb,
                      "ref_tokens": ta, "this_tokens": tb}
        print(f"{name:8s} {a['cpu'] / ta:12.4f} {b['cpu'] / tb:13.4f} {ratio:9.3f} {a['rows'] / ta:15.2f} {b['rows'] / tb:6.2f}")
    write(run_facts(ref, args, items=args.items, max_new_tokens=32, settings=rows), out_path)
    return 0


def run_facts(ref: str, args, **fields) -> dict:
    """The result file: both commits, the run's settings and load, then ``fields``."""
    this = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"ref": ref, "this": this, "rounds": args.rounds, "threads": args.threads, "beam": 5,
            "loadavg_end": list(os.getloadavg()), "date": time.strftime("%Y-%m-%d %H:%M:%S"), **fields}


def write(out: dict, path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
