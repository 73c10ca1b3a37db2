"""fstbeam.fst.draw: small automata render; big ones are refused with their size."""
from __future__ import annotations

import shutil

import pynini
import pytest

from fstbeam.fst.draw import draw, to_dot
from fstbeam.fst.optimize import FstSizeError, optimize

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")


def _small():
    return optimize(pynini.union("cat", "cats", "car", "a b"), stage="t")


def test_dot_source_merges_parallel_arcs():
    letters = optimize(pynini.union(*"abcdefghijklmnopqrstuvwxyz") + " ", stage="t")
    src = to_dot(letters)
    assert '[label="a-z"]' in src and '[label="␣"]' in src
    assert "doublecircle" in src and "__start ->" in src


@needs_dot
def test_draw_svg(tmp_path):
    out = draw(_small(), tmp_path / "pets.svg", title="pets")
    text = out.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "pets" in text


@needs_dot
def test_draw_png(tmp_path):
    out = draw(_small(), tmp_path / "pets.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_draw_dot_needs_no_graphviz(tmp_path):
    out = draw(_small(), tmp_path / "pets.dot")
    assert out.read_text(encoding="utf-8").startswith("digraph fst {")


def test_big_automaton_is_refused_with_its_size(tmp_path):
    ab = pynini.union("a", "b")
    big = optimize(pynini.closure(ab) + "a" + pynini.closure(ab, 9, 9), stage="t")  # 1,024 states
    with pytest.raises(FstSizeError, match=r"refusing to draw an automaton with 1,024 states and 2,048 arcs \(limit 200\)"):
        draw(big, tmp_path / "big.svg")
    assert not (tmp_path / "big.svg").exists()


def test_unknown_suffix(tmp_path):
    with pytest.raises(ValueError, match="use one of"):
        draw(_small(), tmp_path / "pets.pdf")
