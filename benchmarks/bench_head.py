"""The full output layer on the CPU: one GEMM ``hidden @ W.T`` against the blocked form of
``OutputHead._full_logits`` (``W[a:b] @ hidden.T`` per block of ``HEAD_BLOCK`` vocabulary rows,
:func:`fstbeam.runtime.model.shortlist.head_blocks`), and what that does to a decode step.

    python benchmarks/bench_head.py                 # about 20 minutes on a 2-core CPU
    python benchmarks/bench_head.py --quick

1. ``gemm``: milliseconds per call at 5-160 rows on the default model's weight shape
   (V=262,144, d=640, float32, random values), one GEMM vs blocks; the largest difference
   between the two results.
2. ``decode``: the default model, beam 5, 10 prompts to the length limit (24 tokens; bench_decode's
   prompts, 1, 2, 4 and 16 of its phrases): the default now (the plain track, the blocked head) against
   DBA before the plain track and this head (``plain_track=False``, one GEMM), and the blocked
   head without the plain track; unconstrained with both heads. Process CPU seconds per step,
   min over repeats, each configuration in a fresh process (the packed layers keep state
   between decodes), the configurations in turn for two rounds; ratios, model rows, and whether
   both heads give the same outputs.

Timings live here, never in tests. Writes benchmarks/results/head.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


def gemm_section(rows, repeats: int) -> list[dict]:
    from fstbeam.runtime.model.shortlist import head_blocks

    torch.manual_seed(0)
    V, d = 262144, 640
    w = torch.randn(V, d) * 0.02
    out = []
    for R in rows:
        h = torch.randn(R, d)
        buf = torch.empty(R, V)
        one = lambda: torch.mm(h, w.t(), out=buf)  # noqa: E731
        blocks = lambda: head_blocks(h, w, None, buf)  # noqa: E731
        ref = torch.mm(h, w.t())
        diff = float((head_blocks(h, w, None, torch.empty(R, V)) - ref).abs().max())
        best = {}
        for _ in range(repeats):  # alternately
            for name, fn in (("one_gemm", one), ("blocks", blocks)):
                t = time.perf_counter()
                fn()
                best[name] = min(best.get(name, 1e9), time.perf_counter() - t)
        row = {"rows": R, "one_gemm_ms": round(1000 * best["one_gemm"], 1), "blocks_ms": round(1000 * best["blocks"], 1),
               "speedup": round(best["one_gemm"] / best["blocks"], 2), "max_abs_diff": diff}
        print(f"[1] {R:4d} rows: one GEMM {row['one_gemm_ms']:7.1f} ms, blocks {row['blocks_ms']:7.1f} ms "
              f"({row['speedup']:.2f}x), max |diff| {diff:.1e}", flush=True)
        out.append(row)
    return out


CONFIGS = {  # name -> (plain track, blocked head)
    "now": (True, True), "before": (False, False), "no_plain_track": (False, True),
}


def one_config(phrases: int, config: str, repeats: int, max_new: int) -> dict:
    """One configuration in this process (``phrases`` 0: unconstrained; ``config`` "blocks" or
    "one_gemm" then, else a key of CONFIGS): min CPU seconds per step over ``repeats`` runs."""
    import bench_decode as bd

    from fstbeam.compiler.api import compile_constraints
    from fstbeam.runtime import Decoder
    from fstbeam.runtime.model import shortlist as sl

    if phrases:
        plain, blocked = CONFIGS[config]
    else:
        plain, blocked = True, config == "blocks"
    if not blocked:
        sl.HEAD_BLOCK_MAX_ROWS = 0
    dec = Decoder(device="cpu")
    prompts = bd.LEARNER + bd.MT
    cc = compile_constraints(phrases=bd.PHRASES[:phrases], tokenizer=dec.vocab) if phrases else None
    opts = dict(beam_size=5, max_new_tokens=max_new, batch_size=len(prompts), stopping="exhaustive", plain_track=plain,
                preset="plain")  # the settings as given (the API's default preset is the format's since issue 39)
    best, texts = 1e9, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dec.generate(prompts, cc, **opts)  # warm-up (and the layers' packing for these row counts)
        for _ in range(repeats):
            t = time.process_time()
            res = dec.generate(prompts, cc, **opts)
            best = min(best, (time.process_time() - t) / dec.last_stats.steps)
            texts = [r.text for r in res]
    return {"cpu_per_step": best, "model_rows": dec.last_stats.model_rows, "texts": texts}


def decode_section(repeats: int, max_new: int, phrase_counts, rounds: int) -> dict:
    """Per phrase count: ``now`` (the plain track, the blocked head: the default), ``before``
    (no plain track, one GEMM: DBA as it was before the plain track and this head) and
    ``no_plain_track`` (the blocked head without the plain track: what the plain track costs on
    its own); unconstrained with both heads. Each configuration runs in a process of its own
    (the packed layers keep state between decodes), the configurations in turn, ``rounds``
    times; min over all runs."""
    jobs = [(0, "one_gemm"), (0, "blocks")] + [(P, c) for P in phrase_counts for c in CONFIGS]
    best: dict = {}
    for _ in range(rounds):
        for P, c in jobs:
            proc = subprocess.run([sys.executable, __file__, "--one", f"{P}:{c}", "--repeats", str(repeats),
                                   "--max-new", str(max_new)], capture_output=True, text=True, check=True)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            old = best.get((P, c))
            best[(P, c)] = r if old is None or r["cpu_per_step"] < old["cpu_per_step"] else old
    u1, ub = best[(0, "one_gemm")]["cpu_per_step"], best[(0, "blocks")]["cpu_per_step"]
    out: dict = {"unconstrained": {"one_gemm_cpu_per_step": round(u1, 4), "blocks_cpu_per_step": round(ub, 4),
                                   "speedup": round(u1 / ub, 3),
                                   "same_texts": best[(0, "one_gemm")]["texts"] == best[(0, "blocks")]["texts"]}}
    print(f"[2] unconstrained: {u1:.3f} -> {ub:.3f} CPU s per step ({u1 / ub:.2f}x)", flush=True)
    for P in phrase_counts:
        now, before, nopl = (best[(P, c)]["cpu_per_step"] for c in ("now", "before", "no_plain_track"))
        row = {"now_cpu_per_step": round(now, 4), "before_cpu_per_step": round(before, 4),
               "no_plain_track_cpu_per_step": round(nopl, 4), "now_vs_before": round(now / before, 3),
               "ratio_to_unconstrained": {"now": round(now / ub, 3), "before": round(before / u1, 3),
                                          "no_plain_track": round(nopl / ub, 3)},
               "plain_track_cost": round(now / nopl, 3),
               "model_rows": {"now": best[(P, "now")]["model_rows"], "before": best[(P, "before")]["model_rows"]},
               "same_texts_either_head": best[(P, "before")]["texts"] == best[(P, "no_plain_track")]["texts"]}
        out[str(P)] = row
        print(f"[2] {P:2d} phrases: now {now:.3f} s/step vs before {before:.3f} ({row['now_vs_before']:.2f}x); per step vs "
              f"unconstrained: now {row['ratio_to_unconstrained']['now']:.2f}x, before "
              f"{row['ratio_to_unconstrained']['before']:.2f}x, blocked head without the plain track "
              f"{row['ratio_to_unconstrained']['no_plain_track']:.2f}x (plain track {row['plain_track_cost']:.2f}x); "
              f"same outputs with either head: {row['same_texts_either_head']}", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer row counts, phrase counts, rounds and tokens")
    ap.add_argument("--out", default=str(HERE / "results" / "head.json"))
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # "P:config": one decode configuration (a child process)
    ap.add_argument("--repeats", type=int, default=2, help="decodes per configuration and process (min kept)")
    ap.add_argument("--max-new", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        P, config = args.one.split(":")
        r = one_config(int(P), config, args.repeats, args.max_new)
        print(json.dumps(r))
        return 0
    rows = (5, 40, 80) if args.quick else (5, 10, 20, 40, 80, 160)
    result = {"env": {"torch": torch.__version__, "threads": torch.get_num_threads(), "loadavg_start": os.getloadavg(),
                      "quick": args.quick, "timing": "section 1: min over repeats, alternately; section 2: process CPU "
                      "seconds per step, min over repeats and rounds, each configuration in its own process, in turn"}}
    result["gemm"] = gemm_section(rows, 5)
    result["decode"] = decode_section(args.repeats, 12 if args.quick else 24, (1, 4) if args.quick else (1, 2, 4, 16),
                                      rounds=1 if args.quick else 2)
    result["env"]["loadavg_end"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
