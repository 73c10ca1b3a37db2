"""Lexicon-scale rows of bench_compile.py: time (wall and CPU) and peak RSS per compile stage.

Each row runs in a fresh subprocess (so its peak RSS is its own) with the default tokenizer
prepared first, as `compile_constraints(tokenizer=vocab)` sees it, and the disk cache off.

Rows: ``C2`` (the rich word-list language), ``C2-simple`` (``word (" " word)* [.!?]?`` as a
pynini grammar), ``250k``/``500k``/``1M`` synthetic lists (benchmarks/lexicon_synth.py),
``C2-cached`` (a second compile that loads the first from the disk cache) and ``C2-before``
(today's main branch, /work/main or $FSTBEAM_BEFORE, for the before/after ratio).
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
SIZES = {"250k": 250_000, "500k": 500_000, "1M": 1_000_000}


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class _Clock:
    def __init__(self):
        self.rows: dict[str, dict] = {}

    def stage(self, name, fn):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        self.rows[name] = {"wall_s": round(time.perf_counter() - w, 3), "cpu_s": round(time.process_time() - c, 3), "peak_rss_mb": _rss_mb()}
        return out


def _words(row: str) -> list[str]:
    from fstbeam.compiler.hard.cefr import cefr_words

    if row.startswith("C2"):
        return cefr_words("C2")
    sys.path.insert(0, str(HERE))
    from lexicon_synth import synthetic_words

    return synthetic_words(SIZES[row])


def run_row(row: str) -> dict:
    """Measure one row in this process (called in a subprocess by `rows`)."""
    import logging

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(relativeCreated)8.0f ms %(name)s: %(message)s")
    from fstbeam.compiler.hard.token_trie import token_trie

    try:
        from fstbeam.contract.vocab import load_vocab
    except ImportError:  # C2-before on a main branch from before the vocabulary moved to the contract
        from fstbeam.compiler.vocab import load_vocab

    vocab = load_vocab("default")
    trie = token_trie(vocab)
    words = _words(row)
    out = {"row": row, "words": len(words), "rss_before_mb": _rss_mb()}
    if row in ("C2-before", "C2-cached"):
        import fstbeam

        if row == "C2-cached":
            fstbeam.compile_constraints(words=words, tokenizer=vocab)  # fills the cache
        w, c = time.perf_counter(), time.process_time()
        cc = fstbeam.compile_constraints(words=words, tokenizer=vocab)
        out.update(total_wall_s=round(time.perf_counter() - w, 3), total_cpu_s=round(time.process_time() - c, 3),
                   stages_wall_s=cc.stats["seconds"], states=cc.hard.num_states,
                   table_mb=round(cc.hard.nbytes / 2**20, 1), peak_rss_mb=_rss_mb())
        return out
    from fstbeam.compiler.char_dfa import fst_to_dfa
    from fstbeam.compiler.hard.lift.token_fsa import lift, token_fst_bytes
    from fstbeam.compiler.hard.tables import build_tables
    from fstbeam.fst.wordlist.language import text_dfa_fst_bytes, word_list_dfa

    clock = _Clock()
    if row == "C2-simple":  # a pynini grammar: optimized by OpenFst, lifted from its [S, 256] table
        import pynini
        from bench_compile import simple_language

        fst = clock.stage("word list", lambda: simple_language(words))
        fsa = clock.stage("lift", lambda: lift(fst_to_dfa(pynini.connect(fst)), trie, vocab.width))
    else:
        dfa = clock.stage("word list", lambda: word_list_dfa(words))
        fsa = clock.stage("lift", lambda: lift(dfa, trie, vocab.width))

    def tables():
        h = build_tables(fsa, vocab)
        token_fst_bytes(fsa)
        if row != "C2-simple":
            text_dfa_fst_bytes(dfa)
        return h

    h = clock.stage("tables", tables)
    out.update(stages=clock.rows, states=h.num_states, table_mb=round(h.nbytes / 2**20, 1), peak_rss_mb=_rss_mb(),
               total_wall_s=round(sum(r["wall_s"] for r in clock.rows.values()), 3),
               total_cpu_s=round(sum(r["cpu_s"] for r in clock.rows.values()), 3))
    return out


def _subprocess(row: str) -> dict:
    env = dict(os.environ, FSTBEAM_NO_DISK_CACHE="1", PYTHONPATH=f"{HERE.parent}:{HERE}")
    if row == "C2-before":
        env["PYTHONPATH"] = f"{os.environ.get('FSTBEAM_BEFORE', '/work/main')}:{HERE}"
    if row == "C2-cached":
        env.pop("FSTBEAM_NO_DISK_CACHE")
        env["FSTBEAM_CACHE"] = tempfile.mkdtemp(prefix="fstbeam-bench-")
    proc = subprocess.run([sys.executable, str(HERE / "bench_compile.py"), "--stages", row], env=env,
                          capture_output=True, text=True, timeout=3600)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        return {"row": row, "error": proc.stderr[-800:]}
    return json.loads(lines[-1])


def rows(names: list[str], repeat: int) -> list[dict]:
    """Each row ``repeat`` times, interleaved (row1, row2, ..., row1, ...); the fastest run kept."""
    best: dict[str, dict] = {}
    load = []
    for _ in range(repeat):
        for name in names:
            load.append(os.getloadavg()[0])
            r = _subprocess(name)
            r["load_1min"] = round(load[-1], 2)
            print(json.dumps({k: v for k, v in r.items() if k != "stages"}), flush=True)
            if "error" in r or name not in best or r["total_wall_s"] < best[name].get("total_wall_s", 1e9):
                best[name] = r
    return [best[n] for n in names]


def plot(results: list[dict], path: Path) -> None:
    """Wall time, CPU time and peak RSS against the number of words (synthetic rows and C2)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted((r for r in results if r.get("row") in ("C2", *SIZES) and "stages" in r), key=lambda r: r["words"])
    if not pts:
        return
    x = [r["words"] / 1e3 for r in pts]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for stage, style in (("word list", "o-"), ("lift", "s-"), ("tables", "^-")):
        a.plot(x, [r["stages"][stage]["cpu_s"] for r in pts], style, label=f"{stage} (CPU)")
    a.plot(x, [r["total_cpu_s"] for r in pts], "k*-", label="total (CPU)")
    a.set(xlabel="words (thousands)", ylabel="CPU seconds", title="compile time per stage (CPU; wall in the JSON)")
    a.legend(fontsize=8)
    b.plot(x, [r["peak_rss_mb"] for r in pts], "o-", label="peak RSS")
    b.plot(x, [r["rss_before_mb"] for r in pts], "--", label="tokenizer loaded (before compiling)")
    b.set(xlabel="words (thousands)", ylabel="MB", title="peak memory")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
