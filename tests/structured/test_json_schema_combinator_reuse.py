"""A shared node whose automaton depends on the recursion budget (its members recur) builds its
`oneOf` and `if` once when their subschemas cannot reach recursion (circleci's `jobs` member and
its executor `oneOf`, once per level of the recursive `orbs` before), and the language is the one
built per level: against `jsonschema` and against the automaton built the old way (both
differences empty)."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pynini
import pytest

jsonschema = pytest.importorskip("jsonschema")

from fstbeam.compiler.structured.json_schema import complements  # noqa: E402
from fstbeam.compiler.structured.json_schema import schema as js  # noqa: E402
from fstbeam.compiler.structured.json_schema.location import order_instance  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import accepts  # noqa: E402

# a map of tasks; a task may hold a nested task (recursion); each holds exactly one of `a` and
# `b` (overlapping branches: the `oneOf` subtracts their product), and `a` at most 5 when `a` is
# an integer (an `if` over members that hold no recursion)
TASKS = {
    "type": "object", "maxProperties": 2, "propertyNames": {"enum": ["x", "y"]},
    "additionalProperties": {
        # (objects or null: an object-only node takes its `if` inside its own object instead,
        # json_branches, which depends on the node's members and so on the recursion)
        "type": ["object", "null"], "additionalProperties": False,
        "properties": {"a": {"type": ["integer", "string"], "maxLength": 2},
                       "b": {"type": "boolean"},
                       "sub": {"$ref": "#/additionalProperties"}},
        # (`minProperties` beside `required`, implied by it: a combinator, not the member rule
        # of required_choices that a required-only oneOf is)
        "oneOf": [{"required": ["a"], "minProperties": 1}, {"required": ["b"]}],
        "if": {"properties": {"a": {"type": "integer"}}},
        "then": {"properties": {"a": {"maximum": 5}}},
    },
}


def _compile(monkeypatch, old_way: bool) -> tuple[pynini.Fst, Counter]:
    calls: Counter = Counter()
    one_of, if_, held = js.SchemaCompiler._one_of, complements.if_then_else, js.SchemaCompiler._held

    def counting_one_of(self, node, path, loc, rdepth):
        calls["oneOf"] += 1
        return one_of(self, node, path, loc, rdepth)

    def counting_if(c, node, path, loc, rdepth):
        calls["if"] += 1
        return if_(c, node, path, loc, rdepth)

    def build_always(self, kind, node, subs, loc, rdepth, build):  # the old way: no cache
        return build()

    with monkeypatch.context() as m:
        m.setattr(js.SchemaCompiler, "_one_of", counting_one_of)
        m.setattr(complements, "if_then_else", counting_if)
        m.setattr(js.SchemaCompiler, "_held", build_always if old_way else held)
        fst = js.json_schema_fst(TASKS, max_depth=3)
    return fst, calls


def test_the_combinators_are_built_once_and_the_language_is_unchanged(monkeypatch):
    new, calls = _compile(monkeypatch, old_way=False)
    old, old_calls = _compile(monkeypatch, old_way=True)
    assert old_calls["oneOf"] > 1 and old_calls["if"] > 1  # once per level of recursion, before
    assert calls["oneOf"] == 1 and calls["if"] == 1
    for a, b in ((new, old), (old, new)):
        d = pynini.difference(a, b)
        d.connect()
        assert d.num_states() == 0


def _nest(levels: int, task: dict) -> dict:
    for i in range(levels):
        task = {"b": bool(i % 2), "sub": task} if i % 2 else {"a": "q", "sub": task}
    return {"x": task}


@pytest.fixture(scope="module")
def tasks_fst() -> pynini.Fst:
    return js.json_schema_fst(TASKS, max_depth=3)


@pytest.mark.parametrize("levels", [0, 1, 2])
def test_nested_tasks_against_jsonschema(levels, tasks_fst):
    fst = tasks_fst
    validator = jsonschema.validators.validator_for(TASKS)(TASKS)
    tasks = [{"a": 3}, {"a": 5}, {"a": 6}, {"a": "zz"}, {"a": "zzz"}, {"b": True},
             {"a": 1, "b": False}, {}, {"a": -2, "sub": {}}, {"b": False, "c": 1}]
    assert validator.is_valid(_nest(levels, {"a": 3}))  # valid instances are among them
    assert not validator.is_valid(_nest(levels, {"a": 6}))  # and invalid ones
    for task in tasks:
        value = _nest(levels, task)
        text = json.dumps(order_instance(TASKS, value), separators=(",", ":"))
        assert accepts(fst, text) == validator.is_valid(value), value


def test_the_document_is_the_minimal_dfa(tasks_fst):
    # (the oneOf's difference is determinized where it is made, so the document may reach its
    # final step deterministic and untrimmed: it must still come out minimal)
    again = pynini.determinize(tasks_fst)
    again.connect()
    again.minimize()
    again.connect()
    assert tasks_fst.num_states() == again.num_states()
