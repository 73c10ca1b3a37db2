"""Per-request avoid phrases of growing length over a CEFR A1 word list (issue 11, item 5).

``with_request(cc, avoid=[text])`` on a compiled A1 artifact: the compile-time consistency check
(is some A1 text free of the phrase?) plus the light automaton. Budget: near-linear in the phrase
length, <= 0.5 s at 2,000 characters and <= 3 s at 10,000. The phrases are A1 words drawn with a
fixed seed, so the phrase has many partial matches inside itself (the hard case for the lift).

    python benchmarks/bench_avoid.py                  # table + benchmarks/results/avoid.json
    python benchmarks/bench_avoid.py --lengths 500 2000 10000 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
BUDGET_S = {2000: 0.5, 10000: 3.0}


def phrase(words: list[str], n: int, seed: int) -> str:
    rng = random.Random(seed)
    out = ""
    while len(out) < n:
        out += rng.choice(words) + " "
    return out[:n].strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[500, 1000, 2000, 5000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(RESULTS / "avoid.json"))
    args = ap.parse_args()

    from fstbeam.compiler.api import compile_constraints, with_request
    from fstbeam.compiler.hard.cefr import cefr_words

    cc = compile_constraints(cefr="A1")
    words = cefr_words("A1")
    with_request(cc, avoid=["warm up"])  # the per-tokenizer index and the hard DFA, once
    rows = []
    for n in args.lengths:
        text = phrase(words, n, seed=n)
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            with_request(cc, avoid=[text])
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        rows.append({"chars": n, "median_s": round(med, 4), "min_s": round(min(times), 4),
                     "budget_s": BUDGET_S.get(n), "within_budget": None if n not in BUDGET_S else med <= BUDGET_S[n]})
    print(f"{'chars':>7} {'median s':>9} {'min s':>7} {'budget':>7}")
    for r in rows:
        print(f"{r['chars']:>7} {r['median_s']:>9.3f} {r['min_s']:>7.3f} {r['budget_s'] or '':>7}")
    RESULTS.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps({"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                                          "load_avg": os.getloadavg(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
