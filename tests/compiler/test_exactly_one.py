"""`exactly_one`: the texts that exactly one of several DFAs accepts (JSON Schema's oneOf).

Oracle: Python's `re` over every string of up to 6 bytes of a small alphabet, counting the
patterns that fully match; and, for a schema, `jsonschema` on texts the automaton spells.
"""
from __future__ import annotations

import itertools
import json
import re

import jsonschema
import pynini
import pytest

from fstbeam.compiler.structured import exactly_one as exactly_one_module
from fstbeam.compiler.structured.exactly_one import MARKER, exactly_one
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.compiler.structured.regex import regex_fst
from fstbeam.fst import vector_fst
from fstbeam.fst.optimize import optimize

ALPHABET = "abc"
CASES = [
    ["a+", "ab*", "[ab]c"],
    ["(ab)*", "a(ba)*b", "[abc]{2}", "c*"],
    ["a", "a", "b"],  # two equal languages: neither text of theirs is in the result
    ["[abc]*", "a[bc]*", "b+c?", "(a|b)(a|c)*", "c"],
    ["a|b", "[^\\s\\S]", "b|c"],  # an empty language beside overlapping ones
]


def accepts(fst: pynini.Fst, text: str) -> bool:
    lin = pynini.accep(text, token_type="byte") if text else pynini.accep("")
    return pynini.intersect(lin, fst).num_states() > 0 if fst.num_states() else False


@pytest.fixture(params=["memory", "files", "per state"])
def counting(request, monkeypatch):
    """The three ways the markers are counted: the binary form in memory, through temporary
    files (a large automaton), and one Python step per arc (not a plain VectorFst)."""
    if request.param == "files":
        monkeypatch.setattr(vector_fst, "FILE_WRITE_STATES", 0)
    if request.param == "per state":
        monkeypatch.setattr(exactly_one_module, "_markers_per_state", lambda *args: None)
    return request.param


@pytest.mark.parametrize("patterns", CASES, ids=lambda p: "|".join(p))
def test_exactly_one_against_re(patterns, counting):
    dfas = [optimize(regex_fst(p), stage="test") for p in patterns]
    got = optimize(exactly_one(dfas), stage="test")
    assert got.properties(pynini.I_DETERMINISTIC, True) == pynini.I_DETERMINISTIC
    for n in range(7):
        for chars in itertools.product(ALPHABET, repeat=n):
            text = "".join(chars)
            hits = sum(re.fullmatch(p, text) is not None for p in patterns)
            assert accepts(got, text) == (hits == 1), (patterns, text, hits)


def test_labels_above_bytes_are_kept(counting):
    """Inputs may hold labels above 255 (`json_containers`' member marks): only the markers,
    far above them, are counted and dropped."""
    def fsa(*words):
        f = pynini.Fst()
        s = f.add_state()
        f.set_start(s)
        for w in words:
            q = s
            for label in w:
                r = f.add_state()
                f.add_arc(q, pynini.Arc(label, label, pynini.Weight.one(f.weight_type()), r))
                q = r
            f.set_final(q)
        return optimize(f, stage="test")

    a, b = fsa([256, 97], [257]), fsa([256, 97], [258])
    got = exactly_one([a, b])
    paths = {tuple(arc.ilabel for arc in _path(got, p)) for p in ([257], [258], [256, 97])}
    assert paths == {(257,), (258,), ()}
    assert all(arc.ilabel < MARKER for s in got.states() for arc in got.arcs(s))


def _path(fst, labels):
    """The arcs along ``labels`` to a final state, or nothing."""
    q, out = fst.start(), []
    for label in labels:
        nxt = [a for a in fst.arcs(q) if a.ilabel == label]
        if not nxt:
            return []
        out.append(nxt[0])
        q = nxt[0].nextstate
    return out if fst.final(q) != pynini.Weight.zero(fst.weight_type()) else []


def test_one_of_schema_against_jsonschema():
    """A oneOf whose branches overlap (and one accepts nothing): the texts of the automaton are
    exactly the valid instances among a brute-force set of candidates."""
    schema = {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 12}, {"enum": [3, 5, 30, "x"]},
                        {"not": {}}, {"type": "string", "maxLength": 1}]}
    fst = json_schema_fst(schema)
    candidates = [json.dumps(v) for v in [*range(-2, 40), "x", "y", "", "xy", None, True]]
    check = jsonschema.Draft7Validator(schema)
    for text in candidates:
        assert accepts(fst, text) == check.is_valid(json.loads(text)), text
