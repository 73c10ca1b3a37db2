"""Seeded, bounded fuzzing of artifact loading (DESIGN.md: artifacts are untrusted input).

A few hundred mutations of a small artifact with every member kind (manifest fields, member bytes,
array values and shapes, OpenFst counts, the zip structure; most re-sealed with fresh checksums)
are loaded and used (per-request phrases, the host matcher, the pooled device tables and a short
beam search) in subprocesses with a memory limit and a timeout. Each must either load and
work or raise an fstbeam error: no signal, no hang, no foreign exception.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from artifact_mutations import variants

HERE = Path(__file__).parent
N_VARIANTS = 360
WORKERS = 3
MEMORY_LIMIT = 3 << 30  # address space per worker (torch alone maps ~1 GiB)
TIMEOUT_S = 150


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run(paths: list[Path]) -> list[dict]:
    path = [str(HERE), str(HERE.parent / "runtime"), str(HERE.parent.parent), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path),
               FSTBEAM_NO_DISK_CACHE="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(HERE / "artifact_fuzz_worker.py")], input="\n".join(map(str, paths)) + "\n",
                          capture_output=True, text=True, timeout=TIMEOUT_S, preexec_fn=_limit, env=env)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if len(lines) < len(paths):
        crashed = paths[len(lines)]
        pytest.fail(f"worker died (exit {proc.returncode}) on {crashed.name}: {proc.stderr[-2000:]}")
    return lines


@pytest.mark.slow  # hundreds of subprocesses: CI runs it (-m slow)
def test_mutated_artifacts_load_or_raise_project_errors(tmp_path):
    cases = variants(seed=20261122, n=N_VARIANTS)
    paths = []
    for i, (label, data) in enumerate(cases):
        p = tmp_path / f"{i:04d}-{label}.fstbeam"
        p.write_bytes(data)
        paths.append(p)
    chunks = [paths[k::WORKERS] for k in range(WORKERS)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(WORKERS) as pool:
        results = [r for rs in pool.map(_run, chunks) for r in rs]
    outcomes = {Path(r["path"]).name: r["outcome"] for r in results}
    foreign = {n: o for n, o in outcomes.items() if o.startswith("FOREIGN")}
    assert not foreign, f"{len(foreign)} foreign exceptions: {dict(list(foreign.items())[:8])}"
    assert outcomes[paths[0].name] == "ok", "the unmutated artifact must load"
    by_kind = Counter((n.split("-", 1)[1].rsplit(".", 1)[0], o.split(":")[0]) for n, o in outcomes.items())
    # Every kind of mutation is exercised, and re-sealed edits are caught by validation (not only checksums).
    kinds = {k for k, _ in by_kind}
    assert {"manifest", "member-bytes", "array-values", "array-shape", "fst-counts", "zip"} <= kinds
    assert by_kind[("array-values", "error")] > 10
