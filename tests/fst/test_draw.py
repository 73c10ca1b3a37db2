"""fstbeam.fst.draw: SVG and PNG without Graphviz; a big automaton is drawn in part, never refused."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pynini
import pytest

from fstbeam.fst.draw import draw, to_dot
from fstbeam.fst.optimize import optimize

SVG = "{http://www.w3.org/2000/svg}"


def _small():
    return optimize(pynini.union("cat", "cats", "car", "a b"), stage="t")


def _big():
    ab = pynini.union("a", "b")
    return optimize(pynini.closure(ab) + "a" + pynini.closure(ab, 9, 9), stage="t")  # 1,024 states


def _svg(path):
    root = ET.parse(path).getroot()  # well-formed XML, or this raises
    texts = [t.text for t in root.iter(f"{SVG}text")]
    return root, texts


def test_dot_source_merges_parallel_arcs():
    letters = optimize(pynini.union(*"abcdefghijklmnopqrstuvwxyz") + " ", stage="t")
    src = to_dot(letters)
    assert '[label="a-z"]' in src and '[label="␣"]' in src
    assert "doublecircle" in src and "__start ->" in src


def test_svg_without_graphviz_has_every_state_and_arc(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "")  # no `dot` anywhere
    fst = _small()
    root, texts = _svg(draw(fst, tmp_path / "pets.svg", title="pets"))
    circles = root.findall(f"{SVG}circle")
    finals = sum(1 for s in fst.states() if fst.final(s) != pynini.Weight.zero(fst.weight_type()))
    assert len(circles) == fst.num_states() + finals  # a final state has a second, inner circle
    edges = {(s, a.nextstate) for s in fst.states() for a in fst.arcs(s)}
    assert len(root.findall(f"{SVG}path")) == len(edges) + 1  # one per merged edge, plus the start arrow
    assert "pets" in texts and {"c", "a", "t", "s", "r", "␣", "b"} <= set(texts)


def test_png_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    out = draw(_small(), tmp_path / "pets.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_draw_dot_text(tmp_path):
    out = draw(_small(), tmp_path / "pets.dot")
    assert out.read_text(encoding="utf-8").startswith("digraph fst {")


def test_big_automaton_is_drawn_in_part_with_the_rest_counted(tmp_path):
    root, texts = _svg(draw(_big(), tmp_path / "big.svg", max_states=50))
    assert "974 more states" in texts
    assert any(t and t.startswith("50 of 1,024 states, breadth-first from the start") for t in texts)
    states = [t for t in texts if t and t.isdigit()]
    assert len(states) == 50
    dashed = [p for p in root.findall(f"{SVG}path") if p.get("stroke-dasharray")]
    assert dashed  # arcs into the states not drawn


def test_draw_after_a_prefix_starts_there(tmp_path):
    fst = _small()
    out = draw(fst, tmp_path / "after.dot", after="ca")
    src = out.read_text(encoding="utf-8")
    # from the state after "ca": only t, s and r are left to read
    labels = set(re.findall(r'label="([^"]*)"\];', src))
    assert {"t", "r", "s"} <= labels and "c" not in labels and "after 'ca'" in src
    from fstbeam.errors import Error

    with pytest.raises(Error, match="allows no 'x' after 'ca'"):
        draw(fst, tmp_path / "x.svg", after="cax")
    assert not (tmp_path / "x.svg").exists()


def test_unknown_suffix(tmp_path):
    with pytest.raises(ValueError, match="use one of"):
        draw(_small(), tmp_path / "pets.pdf")


def test_inspect_prints_the_check_whatever_happens_to_the_drawing(tmp_path, capsys, monkeypatch):
    from fstbeam.cli.compile_constraints import main

    monkeypatch.setenv("PATH", "")
    monkeypatch.chdir(tmp_path)
    assert main(["inspect", "--grammar", "dates", "--check", "3 May 2024", "--draw", "dates.svg"]) == 0
    out = capsys.readouterr().out
    assert "check       '3 May 2024': accepted" in out and "drew        dates.svg" in out
    ET.parse(tmp_path / "dates.svg")
    # an unwritable target: the check is still printed, the drawing's failure is reported
    code = main(["inspect", "--grammar", "dates", "--check", "31 April 2024", "--draw", "missing/dates.svg"])
    out = capsys.readouterr().out
    assert code == 1 and "check       '31 April 2024': rejected" in out and "draw        failed" in out
