"""Per-request compile cost on a CEFR A1 base with the default tokenizer (issue 23, item 4).

``with_request(base, ...)`` for avoid phrases and prefixes of 1,000 to 30,000 characters, AnyOf
items of 100 to 2,000 two-word alternatives, 100 short phrases, and a word list holding one 1 MB word.
Each case is timed (median of ``--repeat`` runs, no tracing), then run once more under
``tracemalloc`` for its peak memory (numpy's buffers included). The documented limits
(`fstbeam.validate.LIMITS`) are lifted for the scaling rows (marked ``*``: above a limit) and
kept for the "refused" rows, which must answer in milliseconds. Goals: 10,000-character avoid
<= 0.3 s and <= 200 MB, 10,000-character prefix <= 0.3 s, 1,000 AnyOf alternatives <= 0.5 s;
time and memory at most linear from 1,000 to 10,000 characters.

    python benchmarks/bench_request.py            # table + benchmarks/results/request.json
    python benchmarks/bench_request.py --quick    # fewer sizes, one run each
    python benchmarks/bench_request.py --serve-limits   # the worst request within fstbeam serve's limits

``--serve-limits`` (issue 37): the server's own compile path (``fstbeam.serve.constraints``) for
requests at its documented per-request limits (``fstbeam.serve.config.Limits``: 32 phrase and
avoid texts of 200 characters): 32 phrases, 32 avoid phrases, 16 + 16, an AnyOf of 32
alternatives, on the default tokenizer without a base. Each case runs in a child process with a
time cap (``--cap``, a case over it is reported as such), and the worst is reported (goal: <= 1 s);
results in benchmarks/results/request_serve.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
import tracemalloc
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
GOALS = {("avoid", "words", 10_000): (0.3, 200), ("prefix", "words", 10_000): (0.3, None),
         ("anyof", "pairs", 1_000): (0.5, None)}


def words_text(words: list[str], n: int, seed: int) -> str:
    rng = random.Random(seed)
    out = ""
    while len(out) < n:
        out += rng.choice(words) + " "
    return out[:n].strip()


def pattern_text(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n].strip()


def measure(fn, repeat: int) -> tuple[float, float, float, str | None]:
    """(median wall seconds, median CPU seconds of this process, peak MB under tracemalloc, error
    text or None). CPU time is the working figure on a busy machine; the goals name wall time."""
    times, cpu, err = [], [], None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a refused request is a result here
            err = f"{type(exc).__name__}: {str(exc)[:80]}"
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    tracemalloc.start()
    try:
        fn()
    except Exception:  # noqa: BLE001
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), statistics.median(cpu), peak / 1e6, err


_SERVE_CASE = r"""
import json, random, sys, time
from fstbeam.compiler.compiler import compiler_for
from fstbeam.serve.artifacts import ArtifactStore
from fstbeam.serve.config import Limits
from fstbeam.serve.constraints import compile_request
import fstbeam

kind = sys.argv[1]
lim = Limits()
vocab = fstbeam.compile_constraints(phrases=["warm up"]).vocab  # the default tokenizer's
compiler_for(vocab).index  # the phrase index: once per process, as the server warms it
rng = random.Random(0)
letters = "abcdefghijklmnopqrstuvwxyz     "
def text():
    return "".join(rng.choice(letters) for _ in range(lim.max_phrase_chars)).strip()[: lim.max_phrase_chars]
n = lim.max_phrases
body = {"phrases": {"phrases": [text() for _ in range(n)]}, "avoid": {"avoid": [text() for _ in range(n)]},
        "both": {"phrases": [text() for _ in range(n // 2)], "avoid": [text() for _ in range(n // 2)]},
        "anyof": {"phrases": [[text() for _ in range(n)]]}}[kind]
store = ArtifactStore(vocab, continues_text=True, limits=lim)
t, c = time.perf_counter(), time.process_time()
compile_request(body, store)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - c}))
"""


def serve_limits(cap: float, out: Path) -> int:
    """The worst per-request compile within the server's documented limits (one child per case)."""
    import subprocess
    import sys

    rows = []
    for kind in ("phrases", "avoid", "both", "anyof"):
        try:
            p = subprocess.run([sys.executable, "-c", _SERVE_CASE, kind], capture_output=True, text=True, timeout=cap)
            r = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {"error": p.stderr[-300:]}
        except subprocess.TimeoutExpired:
            r = {"seconds": None, "over_cap_s": cap}
        rows.append(dict(case=kind, **r))
        shown = f"{r['seconds']:8.2f} s (cpu {r['cpu_seconds']:.2f} s)" if r.get("seconds") is not None else \
            (f"  > {cap:g} s (capped)" if "over_cap_s" in r else f"  error: {r.get('error', '')[-120:]}")
        print(f"{kind:>8} (32 texts of 200 characters at most, serve limits) {shown}", flush=True)
    done = [r["seconds"] for r in rows if r.get("seconds") is not None]
    capped = any("over_cap_s" in r for r in rows)
    worst = f"> {cap:g} s" if capped else f"{max(done):.2f} s" if done else "n/a"
    print(f"worst per-request compile within the serve limits: {worst} (goal <= 1 s)")
    RESULTS.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                               "load_avg": os.getloadavg(), "cap_s": cap, "worst": worst, "rows": rows}, indent=1))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--serve-limits", action="store_true", help="the worst request within fstbeam serve's limits")
    ap.add_argument("--cap", type=float, default=120.0, help="seconds per --serve-limits case before it is cut")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.serve_limits:
        return serve_limits(args.cap, Path(args.out or RESULTS / "request_serve.json"))
    args.out = args.out or str(RESULTS / "request.json")

    import fstbeam
    from fstbeam import validate
    from fstbeam.compiler.hard.cefr import cefr_words

    limits = dict(validate.LIMITS)
    lifted = {k: v * 1000 for k, v in limits.items()}
    base = fstbeam.compile_constraints(cefr="A1")
    words = sorted(cefr_words("A1"))
    fstbeam.with_request(base, avoid=["warm up"], phrases=[["warm", "up"]], prefix="warm")  # index, DFA: once
    rng = random.Random(0)
    pairs = sorted({f"{rng.choice(words)} {rng.choice(words)}" for _ in range(4000)})
    rng.shuffle(pairs)
    sizes = [1_000, 10_000, 30_000] if args.quick else [1_000, 2_000, 5_000, 10_000, 20_000, 30_000]
    repeat = 1 if args.quick else args.repeat

    cases = []
    for n in sizes:
        cases.append(("avoid", "words", n, lambda n=n: fstbeam.with_request(base, avoid=[words_text(words, n, n)])))
    for unit, name in (("the cat ", "the cat"), ("aaab ", "aaab")):
        for n in ([1_000, 10_000] if args.quick else [1_000, 10_000, 20_000]):
            cases.append(("avoid", name, n, lambda n=n, u=unit: fstbeam.with_request(base, avoid=[pattern_text(u, n)])))
    for n in sizes:
        cases.append(("prefix", "words", n, lambda n=n: fstbeam.with_request(base, prefix=words_text(words, n, n))))
    for k in ([100, 1_000] if args.quick else [100, 300, 1_000, 2_000]):  # 2,000: above the limit
        cases.append(("anyof", "pairs", k, lambda k=k: fstbeam.with_request(base, phrases=[pairs[:k]])))
    cases.append(("phrases", "x100", 100, lambda: fstbeam.with_request(base, phrases=pairs[:100])))
    refused = [
        ("avoid", "refused", 20_000, lambda: fstbeam.with_request(base, avoid=[pattern_text("the cat ", 20_001)])),
        ("prefix", "refused", 20_000, lambda: fstbeam.with_request(base, prefix=pattern_text("the cat ", 20_001))),
        ("anyof", "refused", 2_000, lambda: fstbeam.with_request(base, phrases=[pairs[:2_000]])),
        ("word", "1 MB", 1_000_000, lambda: fstbeam.compile_constraints(words=["x" * 1_000_000])),
    ]
    rows = []
    validate.LIMITS.update(lifted)
    try:
        for kind, what, n, fn in cases:
            over = any(n > limits[k] for k in {"avoid": ["avoid_chars"], "prefix": ["prefix_chars"],
                                               "anyof": ["alternatives_per_item"]}.get(kind, []))
            over = over or (kind == "anyof" and sum(map(len, pairs[:n])) > limits["alternatives_chars"])
            s, c, mb, err = measure(fn, repeat)
            rows.append(dict(kind=kind, input=what, size=n, seconds=round(s, 4), cpu_seconds=round(c, 4),
                             peak_mb=round(mb, 1), above_limit=over, error=err))
            print(f"{kind:>7} {what:>8} {n:>8,}{'*' if over else ' '} {s:8.3f} s {c:8.3f} s CPU {mb:8.1f} MB  {err or ''}",
                  flush=True)
    finally:
        validate.LIMITS.clear()
        validate.LIMITS.update(limits)
    for kind, what, n, fn in refused:
        s, c, mb, err = measure(fn, repeat)
        rows.append(dict(kind=kind, input=what, size=n, seconds=round(s, 4), cpu_seconds=round(c, 4), peak_mb=round(mb, 1),
                         above_limit=True, error=err))
        print(f"{kind:>7} {what:>8} {n:>8,}  {s:8.3f} s {c:8.3f} s CPU {mb:8.1f} MB  {err or 'NOT REFUSED'}", flush=True)
    for r in rows:
        goal = GOALS.get((r["kind"], r["input"], r["size"]))
        if goal:
            r["goal_s"], r["goal_mb"] = goal
            r["within_goal"] = r["seconds"] <= goal[0] and (goal[1] is None or r["peak_mb"] <= goal[1])
    RESULTS.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps({"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                                          "load_avg": os.getloadavg(), "limits": limits, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
