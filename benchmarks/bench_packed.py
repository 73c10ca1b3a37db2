"""MKL's packed GEMM (fstbeam/kernels/packed_gemm.py) against torch.nn.functional.linear on the
shapes of one decode step: Gemma 3 270M's linear layers (d=640, 18 layers) and the static
shortlist rows of CEFR A1 / B1, at the rows of batch 8 x beam 5 and a few others.

Prints a table, writes JSON. Each shape is timed alternately unpacked / packed, min over repeats.

    python benchmarks/bench_packed.py [--rows 8,40] [--out benchmarks/results/packed_gemm.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fstbeam.kernels.packed_gemm import PackedLinear, mkl_packing_available  # noqa: E402

# (name, in_features, out_features, layers per step): Gemma 3 270M, 18 decoder layers
LAYERS = [("q_proj", 640, 1024, 18), ("k_proj", 640, 256, 18), ("v_proj", 640, 256, 18), ("o_proj", 1024, 640, 18),
          ("gate_proj", 640, 2048, 18), ("up_proj", 640, 2048, 18), ("down_proj", 2048, 640, 18)]
SHORTLISTS = [("A1 static rows", 640, 21174, 1), ("B1 static rows", 640, 55561, 1)]


def best_of(fn, repeats: int, inner: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t) / inner)
    return best


def measure(name, d, n, count, rows, repeats):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(n, d, generator=g)
    x = torch.randn(rows, d, generator=g)
    packed = PackedLinear(w)
    for _ in range(3):
        packed(x)  # packs at the second call
    inner = max(1, int(2e8 // (2 * rows * d * n)))
    plain_s = packed_s = float("inf")
    for _ in range(repeats):  # alternately: the machine is shared
        plain_s = min(plain_s, best_of(lambda: torch.nn.functional.linear(x, w), 1, inner))
        packed_s = min(packed_s, best_of(lambda: packed(x), 1, inner))
    diff = float((packed(x) - torch.nn.functional.linear(x, w)).abs().max())
    return {"name": name, "in": d, "out": n, "per_step": count, "rows": rows, "unpacked_ms": plain_s * 1e3,
            "packed_ms": packed_s * 1e3, "ratio": packed_s / plain_s, "max_abs_diff": diff, "packed_rows": packed._rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="8,40", help="row counts (beam x batch), comma-separated")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/packed_gemm.json")
    args = ap.parse_args(argv)
    if not mkl_packing_available():
        print("this PyTorch build has no MKL packed GEMM: nothing to measure", file=sys.stderr)
        return 1
    rows_list = [int(r) for r in args.rows.split(",") if r.strip()]
    out = {"env": {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
                   "loadavg_start": os.getloadavg(), "repeats": args.repeats,
                   "timing": "min wall seconds per call, unpacked and packed run alternately"}, "shapes": []}
    print(f"{'shape':<16}{'rows':>5}{'unpacked ms':>13}{'packed ms':>11}{'ratio':>7}{'max diff':>10}")
    for rows in rows_list:
        body_plain = body_packed = 0.0
        for name, d, n, count in LAYERS + SHORTLISTS:
            r = measure(name, d, n, count, rows, args.repeats)
            out["shapes"].append(r)
            if (name, d, n, count) in LAYERS:
                body_plain += r["unpacked_ms"] * count
                body_packed += r["packed_ms"] * count
            print(f"{name:<16}{rows:>5}{r['unpacked_ms']:>13.3f}{r['packed_ms']:>11.3f}{r['ratio']:>7.2f}{r['max_abs_diff']:>10.1e}")
        out.setdefault("body_per_step", {})[str(rows)] = {"unpacked_ms": body_plain, "packed_ms": body_packed}
        print(f"{'body per step':<16}{rows:>5}{body_plain:>13.1f}{body_packed:>11.1f}{body_packed / body_plain:>7.2f}")
    out["env"]["loadavg_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
