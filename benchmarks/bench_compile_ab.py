"""Compile time of two source trees side by side (A/B), on bench_structured's schema sample.

    python benchmarks/bench_compile_ab.py --before /tmp/base ../shared/data/jsonschemabench_dev
    python benchmarks/bench_compile_ab.py --before /tmp/base DATA --count 30 --disk-cache

One worker process per tree (``PYTHONPATH`` = the tree), each set up as bench_structured's is
(``load_vocab("default")``, one word-list compile to build the per-tokenizer index, one thread,
at most ``AB_MEMORY_GB`` (default 6) of address space,
``FSTBEAM_NO_DISK_CACHE=1`` unless ``--disk-cache``: then each worker gets a fresh cache folder
with the converted tokenizer linked in, so every compile is a cold miss that stores its entry).
The schemas are ``count`` of bench_structured's sample (``stratified(limit, seed)``, evenly
spaced), plus a few regexes and choices; each is compiled once per tree, the trees taking turns
(which goes first alternates), so both see the same machine load and the same history of
earlier compiles (the walks memo of `compiler/hard/lift/walk_memo.py`). CPU time (``process_time``)
of ``compile_constraints`` is reported per tree (p50 / p90) with the ratio, beside each stage's
wall seconds (``stats["seconds"]``: on a busy machine they run above CPU time), and
every compile's tables are hashed: the two trees must build the same tables. With
``--same-language`` a change that builds other tables (another layout of the same automaton) is
checked instead: where the hashes differ, both tables are walked in lockstep from their starts
(`tests/compiler/shared_oracle.assert_same_language_fast`: at every pair of states reached by
the same tokens, the same finality, distance, allowed tokens and mask row). ``--strict``
compiles the schemas with ``json_strict=True``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parent.parent
REGEXES = [r"\d{3}-\d{4}", r"[A-Z][a-z]+( [A-Z][a-z]+)*", r"(https?://)?[a-z0-9.-]+\.[a-z]{2,6}(/[\w.-]*)*",
           r"[\w.+-]+@[\w-]+\.[\w.]+", r"(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?"]
CHOICES = [["yes", "no"], ["positive", "negative", "neutral"], [f"option {i}" for i in range(20)]]


def worker() -> None:
    """Read one JSON job a line, answer one JSON line: CPU seconds, stages, tables hash."""
    import resource

    import numpy as np

    import fstbeam

    limit = int(os.environ.get("AB_MEMORY_GB", "6")) << 30  # a runaway schema is a MemoryError, not the OOM killer
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    vocab = fstbeam.load_vocab("default")
    fstbeam.compile_constraints(words=["warm"], tokenizer=vocab)  # the per-tokenizer index, built once
    print(json.dumps({"ready": fstbeam.__file__}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        job_dump = job.pop("_dump", None)
        c, t = time.process_time(), time.perf_counter()
        try:
            cc = fstbeam.compile_constraints(tokenizer=vocab, **job)
        except Exception as exc:  # noqa: BLE001 - a refused schema is reported, not fatal
            print(json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:200]}"}), flush=True)
            continue
        cpu, wall = time.process_time() - c, time.perf_counter() - t
        h = hashlib.sha256()
        for k, v in sorted(cc.hard.arrays().items()):
            h.update(k.encode() + np.ascontiguousarray(v).tobytes() + str(v.dtype).encode())
        h.update(repr((cc.hard.start, cc.hard.width)).encode())
        if job_dump:  # (for --same-language: the main process walks both trees' tables in lockstep)
            np.savez(job_dump, start=cc.hard.start, width=cc.hard.width, **cc.hard.arrays())
        print(json.dumps({"cpu_s": cpu, "wall_s": wall, "stages": cc.stats.get("seconds", {}),
                          "states": int(len(cc.hard.final)), "tables": h.hexdigest()}), flush=True)


class Tree:
    def __init__(self, label: str, root: Path, disk_cache: bool) -> None:
        env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
        self.tmp = None
        if disk_cache:
            self.tmp = fresh_cache(Path(os.environ.get("FSTBEAM_CACHE", Path.home() / ".cache" / "fstbeam")))
            env["FSTBEAM_CACHE"] = str(self.tmp)
            env.pop("FSTBEAM_NO_DISK_CACHE", None)
        else:
            env["FSTBEAM_NO_DISK_CACHE"] = "1"
        self.label = label
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
        ready = json.loads(self.ask_line())
        print(f"{label}: {ready['ready']}", file=sys.stderr)

    def ask_line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.label}: the worker died (see its stderr above)")
        return line

    def ask(self, job: dict) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.ask_line())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


def same_language(a_path: Path, b_path: Path) -> tuple[bool, int]:
    """(whether the two dumped tables accept the same token sequences, state pairs walked)."""
    import numpy as np

    oracle_dir = str(ROOT / "tests" / "compiler")
    if oracle_dir not in sys.path:  # (called once per compile whose tables differ)
        sys.path.insert(0, oracle_dir)
    from shared_oracle import assert_same_language_fast

    from fstbeam.contract.hard import HardTables

    def load(path: Path) -> HardTables:
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        return HardTables(start=int(arrays.pop("start")), width=int(arrays.pop("width")), **arrays)

    try:
        return True, assert_same_language_fast(load(a_path), load(b_path))
    except AssertionError:
        return False, 0


def fresh_cache(source: Path) -> Path:
    """A new cache folder with ``source``'s entries linked in, except compiled constraints."""
    tmp = Path(tempfile.mkdtemp(prefix="fstbeam-ab-"))
    for p in source.iterdir():
        if p.name != "index":
            (tmp / p.name).symlink_to(p.resolve())
    (tmp / "index").mkdir()
    for p in (source / "index").glob("*.npz"):
        if not p.name.startswith("hard-"):
            (tmp / "index" / p.name).symlink_to(p.resolve())
    return tmp


def jobs(data: Path, limit: int, seed: int, count: int, extra: list[str] | None = None) -> list[tuple[str, dict]]:
    sys.path.insert(0, str(Path(__file__).parent))
    from structured_data import stratified

    names = stratified([p.name for p in data.glob("*.json")], limit, seed)
    if not names:
        raise SystemExit(f"no *.json schema files in {data}: pass the JSONSchemaBench sample folder")
    step = max(1, len(names) // max(count, 1))  # (--count 0: only the --names)
    out = [(n.removesuffix(".json"), {"json_schema": json.loads((data / n).read_text())["schema"]})
           for n in names[::step][:count]]
    out += [(n, {"json_schema": json.loads((data / f"{n}.json").read_text())["schema"]})
            for n in extra or [] if n not in {name for name, _ in out}]
    out += [(f"regex {r}", {"regex": r}) for r in REGEXES]
    out += [(f"choice of {len(c)}", {"choice": c}) for c in CHOICES]
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", nargs="?", type=Path, help="the JSONSchemaBench sample folder")
    ap.add_argument("--before", type=Path, help="the tree to compare with (A); B is this checkout")
    ap.add_argument("--after", type=Path, default=ROOT, help="tree B (default: this checkout)")
    ap.add_argument("--limit", type=int, default=200, help="bench_structured's sample size (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=30, help="schemas taken from the sample (default 30; 0: only --names)")
    ap.add_argument("--names", nargs="+", default=[],
                    help="more schemas, by file name without .json (e.g. large ones, to guard the slow side)")
    ap.add_argument("--disk-cache", action="store_true", help="disk cache on (fresh folder per tree) instead of off")
    ap.add_argument("--strict", action="store_true", help="compile the schemas with json_strict=True")
    ap.add_argument("--same-language", action="store_true",
                    help="where the tables differ, check that both accept the same token sequences (lockstep walk)")
    ap.add_argument("--out", type=Path, default=RESULTS / "compile_ab.json")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker()
    if a.data is None or a.before is None:
        ap.error("give the data folder and --before TREE")
    for tree in (a.before, a.after):  # (a missing tree on PYTHONPATH would import this checkout twice)
        if not (tree / "fstbeam" / "__init__.py").is_file():
            ap.error(f"{tree} is not a source tree (no fstbeam/__init__.py): give a checkout's folder, "
                     "e.g. `git worktree add /tmp/base COMMIT`")
    todo = jobs(a.data, a.limit, a.seed, a.count, a.names)
    if a.strict:
        todo = [(name, {**job, "json_strict": True}) if "json_schema" in job else (name, job) for name, job in todo]
    dump = Path(tempfile.mkdtemp(prefix="ab-tables-")) if a.same_language else None
    trees = [Tree("A", a.before, a.disk_cache), Tree("B", a.after, a.disk_cache)]
    rows = []
    try:
        for i, (name, job) in enumerate(todo):
            res = {}
            for t in trees if i % 2 == 0 else trees[::-1]:
                res[t.label] = t.ask({**job, "_dump": str(dump / f"{t.label}.npz")} if dump else job)
            same = res["A"].get("tables") == res["B"].get("tables")
            row = {"name": name, **res, "same_tables": same}
            if dump and not same and "tables" in res["A"] and "tables" in res["B"]:
                row["same_language"], row["pairs_walked"] = same_language(dump / "A.npz", dump / "B.npz")
            rows.append(row)
            cells = [f"{res[k]['cpu_s']:.3f}" if "cpu_s" in res[k] else "error" for k in "AB"]
            verdict = "same" if same else {True: "other tables, same language", False: "DIFFERENT LANGUAGE"}.get(row.get("same_language"), "DIFFERENT")
            print(f"{name[:44]:44s} A {cells[0]:>7s}  B {cells[1]:>7s}  {verdict}", file=sys.stderr)
    finally:
        for t in trees:
            t.close()
        if dump:
            shutil.rmtree(dump, ignore_errors=True)
    ok = [r for r in rows if "cpu_s" in r["A"] and "cpu_s" in r["B"]]
    summary: dict = {"compiles": len(ok), "refused": len(rows) - len(ok),
                     "different_tables": [r["name"] for r in rows if not r["same_tables"]],
                     "different_language": [r["name"] for r in rows if r.get("same_language") is False]}
    stage_names = sorted({s for r in ok for k in "AB" for s in r[k]["stages"]})
    print(f"\n{len(ok)} compiles ({'disk cache on, cold' if a.disk_cache else 'disk cache off'}): total in CPU seconds, "
          "stages in wall seconds (the compile's own stats)")
    print(f"{'':24s} {'A p50':>8s} {'B p50':>8s} {'A p90':>8s} {'B p90':>8s} {'B/A p50':>8s}")
    for part in ["total", *stage_names]:
        vals = {k: [r[k]["cpu_s"] if part == "total" else r[k]["stages"].get(part, 0.0) for r in ok] for k in "AB"}
        p50 = {k: pct(v, 0.5) for k, v in vals.items()}
        p90 = {k: pct(v, 0.9) for k, v in vals.items()}
        ratio = p50["B"] / p50["A"] if p50["A"] else float("nan")
        summary[part] = {"A_p50": p50["A"], "B_p50": p50["B"], "A_p90": p90["A"], "B_p90": p90["B"], "ratio_p50": ratio}
        print(f"{part:24s} {p50['A']:8.4f} {p50['B']:8.4f} {p90['A']:8.4f} {p90['B']:8.4f} {ratio:8.2f}")
    if ok:
        ratios = [r["B"]["cpu_s"] / r["A"]["cpu_s"] for r in ok]
        summary["per_compile_ratio_p50"] = statistics.median(ratios)
        print(f"per-compile ratio B/A: p50 {statistics.median(ratios):.2f}")
    print(f"tables identical: {len(rows) - len(summary['different_tables'])}/{len(rows)}")
    if a.same_language:
        walked = [r for r in rows if "same_language" in r]
        print(f"other tables, walked in lockstep: {len(walked)}, same language: {sum(r['same_language'] for r in walked)}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"before": str(a.before), "after": str(a.after), "disk_cache": a.disk_cache, "strict": a.strict,
                                 "limit": a.limit, "seed": a.seed, "count": a.count, "names": a.names, "summary": summary, "rows": rows},
                                indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
