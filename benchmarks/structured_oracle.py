"""fstbeam's JSON Schema compiler against the JSONSchemaBench test instances (character level).

Each schema of the sample is compiled by `json_schema_fst` in a worker process (a time and
memory limit per schema; a worker that passes them is replaced). Every test instance is written
as every engine of bench_structured writes it: `order_instance` (declared keys first, in the
location's schema order) then `json.dumps(..., separators=(",", ":"), ensure_ascii=False)`; the
character automaton must accept exactly the instances marked valid.

With ``--samples K`` the automaton is also checked the other way: K random texts it accepts
(`automaton_walks.random_texts`) must each parse and validate by the decoder's output check
(`json_problem`: `jsonschema` for the schema's draft, numbers as decimals, ECMA-262 patterns).
A text that fails is an over-acceptance the test instances did not show, or one of the
documented approximations (the compile's WARNINGs name them).

    python benchmarks/structured_oracle.py ../shared/data/jsonschemabench_dev [--every 8] [--samples 30]

`schema_coverage(paths)` returns the summary (helper C's bench_structured imports it).
"""
from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import resource
import sys
import time
import zlib
from pathlib import Path
from typing import Any

__all__ = ["schema_coverage", "check_schema", "serialize"]


def serialize(schema: Any, instance: Any) -> str:
    """An instance as the compiled automaton (and every benchmarked engine) reads it."""
    from fstbeam.compiler.structured.json_schema.location import order_instance

    return json.dumps(order_instance(schema, instance), separators=(",", ":"),
                      ensure_ascii=False)


def _accepts(fst: Any, text: str) -> bool:
    """Whether the byte automaton accepts ``text`` (a composition with the text's chain)."""
    import pynini

    from fstbeam.compiler.structured.json_schema.lexical import lit

    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 text, so no automaton accepts it
        return False
    out = pynini.intersect(lit(data), fst)
    out.connect()
    return bool(out.num_states() > 0)


def check_schema(path: str, max_depth: int | None = None, samples: int = 0) -> dict[str, Any]:
    """Compile one benchmark file's schema and check its test instances (and ``samples`` random
    texts of its automaton)."""
    from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
    from fstbeam.errors import SpecError

    data = json.loads(Path(path).read_text())
    schema = data["schema"]
    out: dict[str, Any] = {"file": Path(path).name, "compiled": False}
    t = time.perf_counter()
    try:
        fst = json_schema_fst(schema, max_depth=max_depth)  # None: the default rule
    except SpecError as err:
        out["reason"] = getattr(err, "keyword", None) or _reason(str(err))
        out["error"] = str(err)[:300]
        return out
    except Exception as err:  # noqa: BLE001 -- a crash is a finding to report, not to hide
        out["reason"] = f"crash {type(err).__name__}"
        out["error"] = str(err)[:300]
        return out
    out["seconds"] = time.perf_counter() - t
    out["compiled"] = True
    out["states"] = fst.num_states()
    fst.arcsort("ilabel")
    out["valid"] = out["valid_ok"] = out["invalid"] = out["invalid_ok"] = 0
    out["wrong"] = []
    for test in data["tests"]:
        text = serialize(schema, test["data"])
        ok = _accepts(fst, text)
        kind = "valid" if test["valid"] else "invalid"
        out[kind] += 1
        if ok == test["valid"]:
            out[kind + "_ok"] += 1
        else:
            out["wrong"].append({"valid": test["valid"], "text": text[:300]})
    if samples:
        out.update(_sampled(fst, schema, samples, seed=zlib.crc32(out["file"].encode())))
    return out


def _sampled(fst: Any, schema: Any, n: int, seed: int) -> dict[str, Any]:
    """``n`` random accepted texts checked by the decoder's output check."""
    from automaton_walks import random_texts

    from fstbeam.compiler.char_dfa import fst_to_dfa
    from fstbeam.runtime.structured_check import json_problem

    schema_text = json.dumps(schema)
    wrong = []
    unchecked = 0
    texts = random_texts(fst_to_dfa(fst), n, seed=seed)
    for data in texts:
        text = data.decode("utf-8", "replace")
        problem = json_problem(schema_text, text)
        if problem is not None and "could not be validated" in problem:  # (an exponent of 80 digits: a walk's
            unchecked += 1  # digits stop only by chance; neither verdict is known)
        elif problem is not None:
            wrong.append({"text": text[:2000], "problem": problem[:300]})
    return {"sampled": len(texts) - unchecked, "sampled_ok": len(texts) - unchecked - len(wrong),
            "sampled_unchecked": unchecked, "sampled_wrong": wrong[:5]}


def _reason(message: str) -> str:
    for word in ("pattern", "format", "multipleOf", "maxLength", "minLength", "$ref", "states"):
        if word in message:
            return word
    return message.split(":")[1].strip()[:40] if ":" in message else message[:40]


def _worker(conn: Any, mem_bytes: int, max_depth: int | None, samples: int = 0) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    while True:
        path = conn.recv()
        if path is None:
            return
        try:
            conn.send(check_schema(path, max_depth, samples))
        except MemoryError:
            conn.send({"file": Path(path).name, "compiled": False, "reason": "memory"})


def schema_coverage(paths: list[str], *, timeout_s: float = 60.0, mem_gb: float = 2.0,
                    max_depth: int | None = None, log: Any = None,
                    jsonl: str | None = None, samples: int = 0) -> dict[str, Any]:
    """Compile every schema (worker process, time and memory limit each) and sum up.
    ``jsonl``: also append each schema's result to this file as it ends (a run cut short
    keeps what it measured; `summarize` reads the lines back)."""
    ctx = mp.get_context("fork")
    results = []
    proc = parent = None
    for n, path in enumerate(paths):
        if proc is None:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, int(mem_gb * 2**30), max_depth, samples),
                               daemon=True)
            proc.start()
        assert parent is not None
        parent.send(path)
        if parent.poll(timeout_s):
            try:
                res = parent.recv()
            except EOFError:
                res = {"file": Path(path).name, "compiled": False, "reason": "worker died"}
                proc = None
        else:
            res = {"file": Path(path).name, "compiled": False, "reason": f"timeout {timeout_s}s"}
        if not proc or not proc.is_alive() or res.get("reason", "").startswith(("timeout",
                                                                                 "worker")):
            if proc is not None:
                proc.kill()
                proc.join()
            proc = None
        results.append(res)
        if jsonl is not None:
            with open(jsonl, "a") as fh:
                fh.write(json.dumps(res) + "\n")
        if log is not None:
            log(f"{n + 1}/{len(paths)} {res['file']} {res.get('reason', '')}"
                f" {res.get('seconds', 0):.2f}s")
    if proc is not None and parent is not None:
        parent.send(None)
        proc.join(5)
    return summarize(results)


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in results if r["compiled"]]
    secs = sorted(r["seconds"] for r in done)

    def pct(q: float) -> float:
        return secs[min(len(secs) - 1, int(q * len(secs)))] if secs else float("nan")

    valid = sum(r["valid"] for r in done)
    invalid = sum(r["invalid"] for r in done)
    return {
        "schemas": len(results),
        "compiled": len(done),
        "compiled_pct": 100 * len(done) / max(1, len(results)),
        "valid": valid,
        "valid_accepted_pct": 100 * sum(r["valid_ok"] for r in done) / max(1, valid),
        "invalid": invalid,
        "invalid_rejected_pct": 100 * sum(r["invalid_ok"] for r in done) / max(1, invalid),
        "sampled": sum(r.get("sampled", 0) for r in done),
        "sampled_valid_pct": 100 * sum(r.get("sampled_ok", 0) for r in done) / max(1, sum(r.get("sampled", 0) for r in done)),
        "schemas_with_invalid_samples": sorted(r["file"] for r in done if r.get("sampled_wrong")),
        "compile_p50_s": pct(0.5),
        "compile_p99_s": pct(0.99),
        "refusals": dict(collections.Counter(r["reason"] for r in results
                                             if not r["compiled"]).most_common()),
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", help="a folder of JSONSchemaBench files (schema + tests)")
    ap.add_argument("--every", type=int, default=1, help="take every N-th file (a sample)")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per schema")
    ap.add_argument("--max-depth", type=int, default=None)
    ap.add_argument("--samples", type=int, default=0, help="random accepted texts per schema, checked by jsonschema")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--jsonl", help="append each schema's result here as it ends")
    ap.add_argument("--summarize", help="only summarize the results of an earlier --jsonl")
    args = ap.parse_args(argv)
    if args.summarize:
        lines = Path(args.summarize).read_text().splitlines()
        summary = summarize([json.loads(line) for line in lines if line.strip()])
    else:
        paths = sorted(str(p) for p in Path(args.folder).glob("*.json"))
        summary = schema_coverage(paths[args.offset::args.every], timeout_s=args.timeout,
                                  max_depth=args.max_depth, jsonl=args.jsonl, samples=args.samples,
                                  log=lambda s: print(s, file=sys.stderr, flush=True))
    for key in ("schemas", "compiled", "compiled_pct", "valid", "valid_accepted_pct", "invalid",
                "invalid_rejected_pct", "sampled", "sampled_valid_pct", "compile_p50_s", "compile_p99_s"):
        v = summary[key]
        print(f"{key:22s} {v:.3f}" if isinstance(v, float) else f"{key:22s} {v}")
    print("refusals:", json.dumps(summary["refusals"]))
    if summary["sampled"]:
        print("schemas with sampled texts that do not validate:", json.dumps(summary["schemas_with_invalid_samples"]))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
