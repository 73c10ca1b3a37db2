"""Where the shortlist output layer pays: its step (union, gather, logits, sub-mask, masked top-k)
against the full head (logits, masked top-k) at the default model's shape, by rows and by the
union's share of the vocabulary; and the static shortlist (rows gathered once: logits, sub-mask,
masked top-k) with a set of that size.

    python benchmarks/bench_shortlist.py                  # ~2 minutes on a 2-core CPU
    python benchmarks/bench_shortlist.py --out benchmarks/results/shortlist_crossover.json

Random weights of the default model's output layer shape (V=262144, d=640, float32) and random
masks whose union is the given fraction of V. Full and shortlist run alternately; the minimum
over repeats is kept (the machine is shared). ``runtime/model/shortlist.py``'s ``pays`` encodes the
crossover found here.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from fstbeam.kernels import dispatch as kd
from fstbeam.kernels.bitmask import pack_bool_mask_torch
from fstbeam.runtime.model.shortlist import OutputHead, Shortlist, sub_mask


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="benchmarks/results/shortlist_crossover.json")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rows", default="1,5,10,20,40")
    ap.add_argument("--fractions", default="0.02,0.05,0.1,0.2,0.3,0.4,0.6")
    args = ap.parse_args(argv)
    V, d, k = 262144, 640, 5
    g = torch.Generator().manual_seed(0)
    head = OutputHead(torch.randn(V, d, generator=g) * 0.05, None, None)
    eos = torch.tensor([1, 106])
    load0 = os.getloadavg()
    table = []
    for R in (int(x) for x in args.rows.split(",")):
        hidden = torch.randn(R, d, generator=g)
        scores = torch.zeros(R)
        rows = torch.arange(R)
        for frac in (float(x) for x in args.fractions.split(",")):
            union = torch.rand(V, generator=g) < frac
            allowed = union[None, :] & (torch.rand(R, V, generator=g) < 0.7)  # rows see parts of the union
            mask = pack_bool_mask_torch(allowed)
            sl = Shortlist(head, "on", V, eos)

            def full():
                logits = head.logits(hidden)
                kd.masked_topk(logits, mask, rows, scores, k, allowed_lse=True)

            def short():
                out = sl.logits(hidden, mask)
                kd.masked_topk(out.logits, out.mask, rows, scores, k, allowed_lse=True)

            ids = union.nonzero().squeeze(1)
            plan = head.static_plan(("bench", R, frac), ids, ())

            def static():
                logits = head.logits(hidden, plan=plan)
                kd.masked_topk(logits, sub_mask(mask, ids, plan.words, plan.shifts), rows, scores, k, allowed_lse=True)

            short()  # the weight buffer is allocated once per search
            tf = ts = tt = float("inf")
            for _ in range(args.repeats):
                tf = min(tf, _time(full))
                ts = min(ts, _time(short))
                tt = min(tt, _time(static))
            head._static.clear()
            M = int(union.sum())
            table.append({"rows": R, "fraction": M / V, "columns": M, "full_ms": tf * 1e3, "shortlist_ms": ts * 1e3,
                          "ratio": ts / tf, "static_ms": tt * 1e3, "static_ratio": tt / tf})
            print(f"R={R:3d} |U|/V={M / V:.3f}: full {tf * 1e3:7.1f} ms, shortlist {ts * 1e3:7.1f} ms -> {ts / tf:.2f}x, "
                  f"static {tt * 1e3:7.1f} ms -> {tt / tf:.2f}x", flush=True)
    res = {"env": {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
                   "kernel_backend": kd.resolve_backend("auto", torch.device("cpu")), "V": V, "d": d, "k": k, "repeats": args.repeats,
                   "loadavg_start": load0, "loadavg_end": os.getloadavg(),
                   "timing": "min wall seconds over repeats, full, shortlist and static alternately",
                   "loadavg_note": "2 shared cores: read the ratios"},
           "table": table}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
