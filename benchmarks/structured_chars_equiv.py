"""The character automaton of JSON Schemas, before and after a compiler change: same language?

Compiles each schema's character automaton (`json_schema_fst`, the ``structured language``
stage: no tokenizer, no lift) in a fresh process under a CPU limit, and saves it (a minimal
DFA) with its CPU seconds and peak RSS. Run once on the old tree with ``--save DIR``, then on
the new one with ``--against DIR``: each automaton is compared with the saved one (equivalence
of the two minimal DFAs, i.e. both differences empty) and the figures are printed side by side.

    PYTHONPATH=OLD python benchmarks/structured_chars_equiv.py DATA_DIR NAME ... --save /tmp/before
    PYTHONPATH=NEW python benchmarks/structured_chars_equiv.py DATA_DIR NAME ... --against /tmp/before

Writes JSON to benchmarks/results/structured_chars_equiv.json (or --out) with ``--against``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def child(schema_path: str, fst_path: str) -> None:
    """Compile one schema's character automaton; write it; print figures as one JSON line."""
    from fstbeam.compiler.structured.json_schema.schema import json_schema_fst

    schema = json.loads(Path(schema_path).read_text())["schema"]
    t = time.process_time()
    try:
        fst = json_schema_fst(schema)
    except Exception as exc:  # a refusal: its message is the result
        print(json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:160]}"}))
        return
    cpu = round(time.process_time() - t, 2)
    fst.write(fst_path)
    # VmHWM, not ru_maxrss: the latter keeps the parent's peak across fork and exec
    hwm = [ln for ln in Path("/proc/self/status").read_text().splitlines() if ln.startswith("VmHWM")]
    peak = round(int(hwm[0].split()[1]) / 1024) if hwm else -1
    print(json.dumps({"cpu_s": cpu, "peak_rss_mb": peak, "states": fst.num_states()}))


def measure(schema_path: Path, fst_path: Path, cpu: int) -> dict[str, Any]:
    limit = lambda: resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))  # noqa: E731
    cmd = [sys.executable, __file__, "--child", str(schema_path), str(fst_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limit)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if lines:
        out: dict[str, Any] = json.loads(lines[-1])
        return out
    return {"error": f"time-out (> {cpu} CPU-s)" if p.returncode in (-9, -24, 152)
            else f"died (rc {p.returncode}): {p.stderr[-200:]}"}


def same_language(a_path: Path, b_path: Path) -> bool:
    import pynini

    a, b = pynini.Fst.read(str(a_path)), pynini.Fst.read(str(b_path))
    for x, y in ((a, b), (b, a)):
        d = pynini.difference(x, y)
        d.connect()
        if d.num_states():
            return False
    return True


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--cpu", type=int, default=120, help="CPU seconds per compile (default 120)")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", help="folder for the automata and figures of this tree")
    mode.add_argument("--against", help="folder written by --save on the tree to compare with")
    ap.add_argument("--out", default=str(HERE / "results" / "structured_chars_equiv.json"))
    args = ap.parse_args()
    folder = Path(args.save or args.against)
    folder.mkdir(parents=True, exist_ok=True)
    before = json.loads((folder / "figures.json").read_text()) if args.against else {}
    rows: dict[str, dict[str, Any]] = {}
    print("| schema | CPU s before | after | peak RSS before | after | states | same language |\n"
          "|---|---|---|---|---|---|---|")
    for name in args.names:
        mine = folder / f"{name}.new.fst" if args.against else folder / f"{name}.fst"
        r = measure(Path(args.data_dir) / f"{name}.json", mine, args.cpu)
        rows[name] = r
        if not args.against:
            print(f"| {name} | {r.get('cpu_s', '-')} | | {r.get('peak_rss_mb', '-')} MB | | "
                  f"{r.get('states', r.get('error'))} | |", flush=True)
            continue
        b = before.get(name, {})
        if "states" in r and "states" in b:
            r["same_language"] = same_language(folder / f"{name}.fst", mine)
        elif "error" in r and "error" in b:
            r["same_language"] = "both refused or timed out"
        r["before"] = b
        print(f"| {name} | {b.get('cpu_s', b.get('error', '-'))} | {r.get('cpu_s', r.get('error'))} | "
              f"{b.get('peak_rss_mb', '-')} | {r.get('peak_rss_mb', '-')} | {r.get('states', '-')} | "
              f"{r.get('same_language', 'n/a')} |", flush=True)
    if args.save:
        (folder / "figures.json").write_text(json.dumps(rows, indent=1) + "\n")
        return 0
    bad = [n for n, r in rows.items() if r.get("same_language") is False]
    print(f"\n{len(bad)} language changes{': ' + ', '.join(bad) if bad else ''}")
    Path(args.out).write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cpu_limit_s": args.cpu,
                                          "load_avg": os.getloadavg(), "schemas": rows}, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
