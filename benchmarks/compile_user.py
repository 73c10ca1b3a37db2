"""The compile as a user meets it (issue 26): the public calls, each in a fresh process.

``fstbeam.compile_constraints(cefr=LEVEL, tokenizer=v)`` with its default options, the
vocabulary ``v = fstbeam.load_vocab("default")`` loaded first (not timed), in three settings:

- cold: nothing cached: ``FSTBEAM_CACHE`` is an empty folder (holding only links to the
  converted default model, which installing fstbeam provides) and ``NUMBA_CACHE_DIR`` is empty;
- disk cache off: ``FSTBEAM_NO_DISK_CACHE=1`` (a new word list or option: everything built);
- warm: a later process with the disk cache filled (a cache load, not a compile).

The timed span starts before the first use of ``fstbeam.compile_constraints`` (its lazy import
counts: the user's first call pays it) and ends when the call returns. Stages come from
``cc.stats["seconds"]`` plus ``import`` and ``other`` (the rest of the call: the Compiler, the
spec, the vocabulary fingerprint), so they add up to the total wall time.

Per request: ``fstbeam.with_request(base, phrases=...)`` with its default satisfiability check
on a ``cefr="A2"`` base, 10 and 100 short phrases of A2 words. Every repetition uses phrases the
process has never compiled ("fresh"); "repeated" sends the last set again (compiled automata of
short phrases are remembered per tokenizer, `fstbeam.compiler.light.memo`). Best of 5.
"""
from __future__ import annotations

import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
MODES = ("cold", "nocache", "warm")


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def user_compile(tokenizer, **spec) -> dict:
    """Time ``fstbeam.compile_constraints(tokenizer=tokenizer, **spec)`` as the README shows it."""
    import fstbeam

    w, c = time.perf_counter(), time.process_time()
    compile_constraints = fstbeam.compile_constraints  # the lazy import is part of the first call
    import_s = time.perf_counter() - w
    cc = compile_constraints(tokenizer=tokenizer, **spec)
    total, cpu = time.perf_counter() - w, time.process_time() - c
    stages = {"import": round(import_s, 4), **cc.stats["seconds"]}
    stages["other"] = round(total - sum(stages.values()), 4)
    return {"total_s": round(total, 3), "cpu_s": round(cpu, 3), "stages_s": stages, "cc": cc}


def short_phrases(words, n: int, rng: random.Random, seen: set) -> list[str]:
    """``n`` two-word phrases of ``words`` (plain lower-case words) not in ``seen``."""
    plain = [w for w in words if w.isascii() and w.isalpha() and w.islower() and 2 <= len(w) <= 8]
    out = []
    while len(out) < n:
        p = f"{rng.choice(plain)} {rng.choice(plain)}"
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def user_requests(base, words, sizes=(10, 100), repeat: int = 5, seed: int = 0) -> dict:
    """Best-of-``repeat`` wall time of ``fstbeam.with_request(base, phrases=...)`` (checked)."""
    import fstbeam

    rng, seen = random.Random(seed), set()
    t = time.perf_counter()
    fstbeam.with_request(base, phrases=short_phrases(words, 2, rng, seen))
    out = {"first_request_ms": round((time.perf_counter() - t) * 1e3, 2)}  # builds the token index
    for n in sizes:
        fresh, cpu = [], []
        for _ in range(repeat):
            phrases = short_phrases(words, n, rng, seen)
            w, c = time.perf_counter(), time.process_time()
            fstbeam.with_request(base, phrases=phrases)
            fresh.append(time.perf_counter() - w)
            cpu.append(time.process_time() - c)
        again = []
        for _ in range(repeat):
            w = time.perf_counter()
            fstbeam.with_request(base, phrases=phrases)
            again.append(time.perf_counter() - w)
        out[f"{n}_phrases"] = {
            "fresh_best_ms": round(min(fresh) * 1e3, 2), "fresh_median_ms": round(statistics.median(fresh) * 1e3, 2),
            "fresh_cpu_best_ms": round(min(cpu) * 1e3, 2), "repeated_best_ms": round(min(again) * 1e3, 3),
        }
    return out


def run_mode(mode: str, level: str) -> dict:
    """One measurement in this process (called in a fresh subprocess by `measure`)."""
    import fstbeam

    v = fstbeam.load_vocab("default")
    rss_before = _rss_mb()
    r = user_compile(v, cefr=level)
    cc = r.pop("cc")
    r.update(mode=mode, level=level, rss_before_mb=rss_before, peak_rss_mb=_rss_mb(),
             table_mb=round(cc.hard.nbytes / 2**20, 1), states=cc.hard.num_states, numba_loaded="numba" in sys.modules)
    return r


def run_requests(level: str = "A2") -> dict:
    import fstbeam
    from fstbeam.compiler.hard.cefr import cefr_words

    v = fstbeam.load_vocab("default")
    base = fstbeam.compile_constraints(cefr=level, tokenizer=v)
    out = user_requests(base, cefr_words(level))
    out.update(level=level, peak_rss_mb=_rss_mb())
    return out


def _cold_cache() -> str:
    """An empty FSTBEAM_CACHE that links the converted default model (an install-time artifact)."""
    from fstbeam.files.cache import cache_root

    real = cache_root()
    tmp = Path(tempfile.mkdtemp(prefix="fstbeam-cold-"))
    for entry in real.iterdir():
        if entry.is_dir() and entry.name not in ("index", "grammars"):  # the compile caches stay empty
            (tmp / entry.name).symlink_to(entry)
    return str(tmp)


def _subprocess(args: list[str], env: dict, code: str | None = None) -> dict:
    """Run bench_compile.py ``args`` with ``code`` (a checkout's root; default this one) first on
    the import path."""
    env = dict(env, PYTHONPATH=os.pathsep.join([code or str(HERE.parent), str(HERE), env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(HERE / "bench_compile.py"), *args], env=env,
                          capture_output=True, text=True, timeout=1800)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        return {"error": proc.stderr[-800:]}
    return json.loads(lines[-1])


def measure(level: str, repeat: int, codes: dict[str, str | None]) -> dict:
    """Each mode ``repeat`` times in fresh processes for each checkout of ``codes`` (name ->
    root, None: this one), interleaved; the fastest run of each kept."""
    base_env = {k: v for k, v in os.environ.items() if k not in ("FSTBEAM_NO_DISK_CACHE", "FSTBEAM_CACHE", "NUMBA_CACHE_DIR")}
    best: dict[str, dict] = {name: {} for name in codes}
    runs: dict[tuple, list] = {}
    for _ in range(repeat):
        for mode in MODES:
            for name, code in codes.items():
                env = dict(base_env)
                if mode == "cold":
                    env["FSTBEAM_CACHE"] = _cold_cache()
                    env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba-cold-")
                elif mode == "nocache":
                    env["FSTBEAM_NO_DISK_CACHE"] = "1"
                else:
                    _subprocess(["--user-one", "warm", level], env, code)  # fills the disk cache for this code
                load = round(os.getloadavg()[0], 2)
                r = _subprocess(["--user-one", mode, level], env, code)
                r.update(load_1min=load, code=name)
                runs.setdefault((name, mode), []).append(r.get("total_s"))
                print(json.dumps({k: v for k, v in r.items() if k != "stages_s"}), flush=True)
                if "error" in r or mode not in best[name] or r["total_s"] < best[name][mode].get("total_s", 1e9):
                    best[name][mode] = r
    for (name, mode), totals in runs.items():
        best[name][mode]["all_runs_s"] = totals
    return best


def measure_requests(repeat: int, codes: dict[str, str | None]) -> dict:
    """`run_requests` ``repeat`` times per checkout, interleaved; the run with the best 10-phrase
    figure kept (every run's figures are printed)."""
    best: dict[str, dict] = {}
    key = lambda r: r.get("10_phrases", {}).get("fresh_best_ms", 1e9)  # noqa: E731
    for _ in range(repeat):
        for name, code in codes.items():
            load = round(os.getloadavg()[0], 2)
            r = _subprocess(["--requests-one"], dict(os.environ), code)
            r.update(load_1min=load, code=name)
            print(json.dumps(r), flush=True)
            if name not in best or key(r) < key(best[name]):
                best[name] = r
    return best
