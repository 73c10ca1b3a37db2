"""Benchmark of the fused masked log-softmax + top-k (`fstbeam.kernels.masked_topk`).

For each (R, V, dtype, allowed fraction) it times, side by side in the same process and
interleaved round by round (the machine may be noisy):
  amax      `logits.amax(-1)`: a read-only pass over the same tensor, the floor to beat
  eager     `log_softmax(logits, dtype=float32).masked_fill(~allowed, -inf).topk(k)`, the
            plain torch way (given an already unpacked [R, V] bool mask, which flatters it)
  cpu-fast  the numba backend                     (CPU)
  triton    the Triton backend                    (CUDA)
  torch     the pure-torch reference              (slow: full sort; skipped with --quick)
and reports ns per logit, GB/s of logits read, and the ratios eager/backend (speed-up) and
backend/amax (cost of one read). On CUDA it also reports the fraction of a measured
device-to-device copy bandwidth (the practical roofline) and of the nominal peak.

    python benchmarks/bench_kernels.py            # full grid -> benchmarks/results/kernels_<device>.json
    python benchmarks/bench_kernels.py --quick    # reduced grid, fewer rounds
    python benchmarks/bench_kernels.py --quick --threads 1 --out benchmarks/results/kernels_cpu_1thread.json

On a shared machine, torch's 2-thread parallel regions stall whenever the other core is busy
(a read of a small tensor can take milliseconds); `--threads 1` compares per core.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fstbeam.kernels import masked_topk, pack_bool_mask_torch  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
FULL_GRID = dict(rows=(1, 5, 40, 320), vocabs=(32000, 151936, 262144), dtypes=("fp32", "bf16"), allowed=(0.1, 0.9))
QUICK_GRID = dict(rows=(1, 320), vocabs=(32000, 262144), dtypes=("fp32", "bf16"), allowed=(0.1, 0.9))
# Nominal HBM bandwidth (bytes/s) of GPUs we may be lent, for "% of peak".
NOMINAL_BANDWIDTH = {"H100": 3.35e12, "H200": 4.8e12, "A100": 2.0e12}


@dataclasses.dataclass
class Timing:
    backend: str
    best_s: float
    median_s: float


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_side_by_side(fns: dict[str, Callable[[], object]], rounds: int, device: torch.device,
                      slow: tuple[str, ...] = (), slow_rounds: int = 2) -> dict[str, Timing]:
    """Interleave the candidates round by round (one warm-up each); best and median per name."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    _sync(device)
    for round_index in range(rounds):
        for name, fn in fns.items():
            if name in slow and round_index >= slow_rounds:
                continue
            _sync(device)
            start = time.perf_counter()
            fn()
            _sync(device)
            samples[name].append(time.perf_counter() - start)
    return {name: Timing(name, min(v), statistics.median(v)) for name, v in samples.items()}


def copy_bandwidth(device: torch.device) -> float:
    """Achievable bytes/s of a large device-to-device copy (read + write), best of 10."""
    src = torch.empty(256 * 2**20, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(10):
        _sync(device)
        start = time.perf_counter()
        dst.copy_(src)
        _sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * src.numel() / best


def machine_info(device: torch.device) -> dict:
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "device": str(device),
    }
    try:
        import numba

        info["numba"] = numba.__version__
    except ImportError:
        info["numba"] = None
    try:
        with open("/proc/cpuinfo") as f:
            models = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        info["cpu_model"] = models[0] if models else platform.processor()
    except OSError:
        info["cpu_model"] = platform.processor()
    if hasattr(os, "getloadavg"):
        info["load_average_at_start"] = os.getloadavg()
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info["gpu"] = props.name
        info["gpu_sms"] = props.multi_processor_count
        try:
            import triton

            info["triton"] = triton.__version__
        except ImportError:
            info["triton"] = None
    return info


def run_config(num_rows: int, vocab: int, dname: str, allowed_fraction: float, k: int, rounds: int,
               device: torch.device, backends: tuple[str, ...], with_reference: bool) -> dict:
    gen = torch.Generator(device="cpu").manual_seed(num_rows * 1_000_003 + vocab)
    logits = torch.randn(num_rows, vocab, generator=gen).to(device=device, dtype=DTYPES[dname])
    allowed = (torch.rand(num_rows, vocab, generator=gen) < allowed_fraction).to(device)
    bitmask = pack_bool_mask_torch(allowed)  # one state per row
    row_state = torch.arange(num_rows, device=device)
    scores = torch.zeros(num_rows, device=device)
    blocked = ~allowed

    def eager():
        logprobs = torch.log_softmax(logits, dim=-1, dtype=torch.float32)
        return logprobs.masked_fill(blocked, float("-inf")).topk(k, dim=-1)

    fns: dict[str, Callable[[], object]] = {"amax": lambda: logits.amax(-1), "eager": eager}
    for backend in backends:
        fns[backend] = lambda backend=backend: masked_topk(logits, bitmask, row_state, scores, k, backend=backend)
    if with_reference:
        fns["torch"] = lambda: masked_topk(logits, bitmask, row_state, scores, k, backend="torch")
    timings = time_side_by_side(fns, rounds, device, slow=("torch",))

    elements = num_rows * vocab
    logit_bytes = elements * logits.element_size()
    row = {"R": num_rows, "V": vocab, "dtype": dname, "allowed": allowed_fraction, "k": k, "results": {}}
    amax_s = timings["amax"].best_s
    eager_s = timings["eager"].best_s
    for name, t in timings.items():
        row["results"][name] = {
            "best_ms": t.best_s * 1e3,
            "median_ms": t.median_s * 1e3,
            "ns_per_element": t.best_s * 1e9 / elements,
            "logits_GBps": logit_bytes / t.best_s / 1e9,
            "speedup_vs_eager": eager_s / t.best_s,
            "ratio_vs_amax": t.best_s / amax_s,
            "median_ratio_vs_amax": t.median_s / timings["amax"].median_s,
        }
    return row


def print_table(rows: list[dict], backends: tuple[str, ...]) -> None:
    names = ["amax", "eager", *backends] + (["torch"] if any("torch" in r["results"] for r in rows) else [])
    header = f"{'R':>4} {'V':>7} {'dtype':>5} {'allow':>5} | " + " | ".join(f"{n:>16}" for n in names)
    header += " | " + " | ".join(f"{b + ' x eager':>14} {b + '/amax':>12}" for b in backends)
    print(header)
    print(f"{'':>26} | " + " | ".join(f"{'ns/el   GB/s':>16}" for _ in names))
    print("-" * len(header))
    for r in rows:
        cells = []
        for n in names:
            res = r["results"].get(n)
            cells.append(f"{res['ns_per_element']:7.3f} {res['logits_GBps']:7.1f}" if res else f"{'-':>16}")
        line = f"{r['R']:>4} {r['V']:>7} {r['dtype']:>5} {r['allowed']:>5} | " + " | ".join(f"{c:>16}" for c in cells)
        for b in backends:
            res = r["results"][b]
            line += f" | {res['speedup_vs_eager']:13.1f}x {res['ratio_vs_amax']:11.2f}x"
        print(line)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="reduced grid and rounds, no torch reference")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per config (default 9, quick 5)")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (the CPU backend follows it); default: torch's choice")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON path (default benchmarks/results/kernels_<device>.json)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    grid = QUICK_GRID if args.quick else FULL_GRID
    rounds = args.rounds or (5 if args.quick else 9)
    if device.type == "cuda":
        from fstbeam.kernels import triton_masked_topk

        if not triton_masked_topk.available(device):
            print("triton is not available on this CUDA device", file=sys.stderr)
            return 1
        backends: tuple[str, ...] = ("triton",)
    else:
        backends = ("cpu-fast",)
    out = args.out or ROOT / "benchmarks" / "results" / f"kernels_{device.type}.json"

    info = machine_info(device)
    print(json.dumps(info, indent=1))
    rows = []
    for num_rows in grid["rows"]:
        for vocab in grid["vocabs"]:
            for dname in grid["dtypes"]:
                for fraction in grid["allowed"]:
                    with_reference = not args.quick and num_rows * vocab <= 40 * 262144
                    rows.append(run_config(num_rows, vocab, dname, fraction, args.k, rounds, device,
                                           backends, with_reference))
                    print_table(rows[-1:], backends)
    print()
    print_table(rows, backends)
    if hasattr(os, "getloadavg"):
        info["load_average_at_end"] = os.getloadavg()
    result = {"machine": info, "k": args.k, "rounds": rounds, "grid": grid, "configs": rows,
              "timing": "best of the interleaved rounds (median also recorded); ratios from best times"}
    if device.type == "cuda":
        practical = copy_bandwidth(device)
        nominal = next((bw for key, bw in NOMINAL_BANDWIDTH.items() if key in info.get("gpu", "")), None)
        result["roofline"] = {"copy_bytes_per_s": practical, "nominal_bytes_per_s": nominal}
        for r in rows:
            for res in r["results"].values():
                res["pct_of_copy_bandwidth"] = 100 * res["logits_GBps"] * 1e9 / practical
                if nominal:
                    res["pct_of_nominal_bandwidth"] = 100 * res["logits_GBps"] * 1e9 / nominal
        print(f"roofline: copy {practical / 1e9:.0f} GB/s, nominal {nominal and nominal / 1e9} GB/s")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
