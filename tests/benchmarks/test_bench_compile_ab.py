"""bench_compile_ab's ``--same-language`` check: two dumped tables are walked in lockstep; tables
of one language pass, tables of two languages that differ in one text do not."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_compile_ab as ab  # noqa: E402

import fstbeam  # noqa: E402
from fstbeam.contract.vocab import Vocab  # noqa: E402

VOCAB = Vocab.from_dict([None, b"a", b"b", b"ab", b"ba", b"aa"], eos_ids=[0], name="ab")


def _dump(path: Path, **kw) -> Path:
    h = fstbeam.compile_constraints(tokenizer=VOCAB, **kw).hard
    np.savez(path, start=h.start, width=h.width, **h.arrays())
    return path


def test_same_language_passes_one_language_and_fails_two(tmp_path):
    a = _dump(tmp_path / "a.npz", regex="(ab)+")
    b = _dump(tmp_path / "b.npz", regex="ab(ab)*")  # the same language, written otherwise
    c = _dump(tmp_path / "c.npz", regex="(ab)+a?")
    same, pairs = ab.same_language(a, b)
    assert same and pairs >= 2
    assert ab.same_language(a, c) == (False, 0)
