"""Build time and size of every shipped grammar (character level), optionally token level.

    python benchmarks/bench_grammars.py                 # all grammars, cefr at every level
    python benchmarks/bench_grammars.py --only cefr --levels A1,B1
    python benchmarks/bench_grammars.py --tokens        # also compile for the default tokenizer

Prints a table and writes benchmarks/results/grammars.json. Each configuration is built from
scratch in this process (the registry's cache is cleared; data tables that grammars cache on
disk, like cefr's, are loaded once and their load time is part of the first cefr row).
Token-level times (``--tokens``) use ``fstbeam.compile_constraints(grammar=..., tokenizer=
"default")`` in a child process cut off after ``--token-timeout`` seconds; when the compiler or
the default tokenizer is missing, or the compile fails or times out, the row says why.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fstbeam import grammars  # noqa: E402
from fstbeam.contract.cache import shared_cache  # noqa: E402
from fstbeam.fst.inspect import stats  # noqa: E402

LEVELS = ("A1", "A2", "B1", "B2", "C1", "C2")


def configurations(only: list[str] | None, levels: list[str]) -> list[tuple[str, dict]]:
    configs: list[tuple[str, dict]] = []
    for name in grammars.list_grammars():
        if only and name not in only:
            continue
        if name == "cefr":
            configs += [("cefr", {"level": lv}) for lv in levels]
        elif name in ("numbers", "dates"):
            configs += [(name, {"mode": "filter"}), (name, {"mode": "only"})]
        else:
            configs.append((name, {}))
    return configs


def char_level(name: str, params: dict) -> dict:
    shared_cache().discard(lambda key: key[0] == "grammar")
    t0 = time.perf_counter()
    built = grammars.build(name, **params)
    seconds = time.perf_counter() - t0
    row = {"grammar": name, "params": params, "build_s": round(seconds, 3),
           "phrases": len(built.phrases), "avoid": len(built.avoid)}
    if built.language is not None:
        st = stats(built.language)
        row.update(states=st["states"], arcs=st["arcs"], finals=st["finals"])
    else:
        row.update(states=None, arcs=None, finals=None)
    return row


def _token_child(name: str, params: dict) -> dict:
    """Runs in a child process (see `token_level`): compile and report seconds and sizes."""
    import fstbeam

    t0 = time.perf_counter()
    cc = fstbeam.compile_constraints(grammar=name, grammar_params=params or None, tokenizer="default")
    out = {"token_s": round(time.perf_counter() - t0, 3)}
    try:
        summary = cc.summary()
        out.update(token_states=summary.get("states"), table_bytes=summary.get("table_bytes"))
    except Exception:  # summary() is the compiler's; its keys may change
        pass
    return out


def token_level(name: str, params: dict, timeout_s: float) -> dict:
    """Token-level compile in a child process, so a slow compile is cut off, never hangs."""
    try:
        import fstbeam

        fstbeam.compile_constraints  # noqa: B018 - is the compiler there at all?
    except (ImportError, AttributeError) as exc:
        return {"token_s": None, "token_note": f"no compiler: {exc}"}
    cmd = [sys.executable, __file__, "--token-child", json.dumps([name, params])]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"token_s": None, "token_note": f"timeout after {timeout_s:g} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"token_s": None, "token_note": last[:160]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", metavar="NAME", help="grammars to measure (default: all)")
    ap.add_argument("--levels", default=",".join(LEVELS), help="cefr levels (default: all six)")
    ap.add_argument("--tokens", action="store_true", help="also compile for the default tokenizer")
    ap.add_argument("--token-timeout", type=float, default=300, help="seconds per token-level compile")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "grammars.json"))
    ap.add_argument("--token-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.token_child:
        name, params = json.loads(args.token_child)
        print(json.dumps(_token_child(name, params)))
        return 0

    levels = [lv.strip().upper() for lv in args.levels.split(",") if lv.strip()]
    rows = []
    header = f"{'grammar':<12} {'params':<22} {'build s':>8} {'states':>9} {'arcs':>10} {'phr/avoid':>9}"
    if args.tokens:
        header += f" {'token s':>8}"
    print(header)
    print("-" * len(header))
    for name, params in configurations(args.only, levels):
        row = char_level(name, params)
        if args.tokens:
            row.update(token_level(name, params, args.token_timeout))
        rows.append(row)
        shown = ",".join(f"{k}={v}" for k, v in params.items()) or "-"
        states = "-" if row["states"] is None else f"{row['states']:,}"
        arcs = "-" if row["arcs"] is None else f"{row['arcs']:,}"
        line = (f"{name:<12} {shown:<22} {row['build_s']:>8.2f} {states:>9} {arcs:>10} "
                f"{row['phrases']:>4}/{row['avoid']:<4}")
        if args.tokens:
            line += f" {row['token_s']:>8.2f}" if row.get("token_s") is not None else f"  ({row.get('token_note')})"
        print(line, flush=True)

    result = {
        "benchmark": "grammars (character level build)",
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
