"""Subschemas that cannot reach recursion are compiled once, whatever the recursion budget left
where they are met (circleci's executor `oneOf`, once per level of its recursive `jobs`), and
the language is the one compiled with a budget per level: against `jsonschema` and against the
automaton built the old way (both differences empty)."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pynini
import pytest

jsonschema = pytest.importorskip("jsonschema")

from fstbeam.compiler.structured.json_schema import schema as js  # noqa: E402
from fstbeam.compiler.structured.json_schema.location import Resolver, order_instance  # noqa: E402
from fstbeam.compiler.structured.json_schema.refs import RecursionReach, recursive_targets  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from node_builds import compile_counting  # noqa: E402
from regex_oracle import accepts  # noqa: E402

# a job holds steps; a step is a command or a nested job (recursion); both pick an executor
# from a discriminated `oneOf` that holds no `$ref` back
JOBS = {
    "$ref": "#/definitions/job",
    "definitions": {
        "executor": {"oneOf": [
            {"type": "object", "properties": {"docker": {"type": "string", "maxLength": 3}},
             "required": ["docker"], "additionalProperties": False},
            {"type": "object", "properties": {"machine": {"type": "boolean"}},
             "required": ["machine"], "additionalProperties": False},
            {"enum": ["small", "large"]},
        ]},
        # recursion through a property named "default" (circleci's step parameters)
        "param": {"type": "object", "properties": {"default": {"$ref": "#/definitions/job"}},
                  "additionalProperties": False},
        "job": {"type": "object", "additionalProperties": False, "required": ["steps"],
                "properties": {"executor": {"$ref": "#/definitions/executor"},
                               "param": {"$ref": "#/definitions/param"},
                               "steps": {"type": "array", "maxItems": 2,
                                         "items": {"$ref": "#/definitions/step"}}}},
        "step": {"anyOf": [{"type": "string", "maxLength": 2}, {"$ref": "#/definitions/job"},
                           {"type": "object", "additionalProperties": False,
                            "properties": {"run": {"$ref": "#/definitions/executor"},
                                           "param": {"$ref": "#/definitions/param"}}}]},
    },
}


def _compile(monkeypatch, old_keys: bool) -> tuple[pynini.Fst, Counter]:
    def old(m):  # every node keyed by its budget, as before
        m.setattr(RecursionReach, "__call__", lambda self, n: True)

    return compile_counting(monkeypatch, JOBS, max_depth=4, patch=old if old_keys else None)


def test_what_reaches_recursion():
    resolver = Resolver(JOBS, "t")
    recursive, _ = recursive_targets(JOBS, resolver)
    reach = RecursionReach(resolver, recursive)
    d = JOBS["definitions"]
    assert reach(d["job"]) and reach(d["step"]) and reach(JOBS)
    assert reach(d["job"]["properties"]["steps"]) and reach(d["param"])
    assert not reach(d["executor"]) and not reach(d["job"]["properties"]["executor"])
    assert reach(d["step"]["anyOf"][2])  # (through `param`)
    assert not reach(d["step"]["anyOf"][0])


def test_a_subschema_without_recursion_is_compiled_once_and_the_language_is_unchanged(monkeypatch):
    new, calls = _compile(monkeypatch, old_keys=False)
    old, old_calls = _compile(monkeypatch, old_keys=True)
    assert old_calls["/definitions/executor"] > 1  # one per level of recursion, before
    assert calls["/definitions/executor"] == 1
    assert calls["/definitions/job"] > 1  # the recursion itself is still unrolled per level
    for a, b in ((new, old), (old, new)):
        d = pynini.difference(a, b)
        d.connect()
        assert d.num_states() == 0


def test_recursion_through_a_member_named_like_a_data_keyword_is_unrolled():
    """A member named `default` (or `enum`, `const`, `examples`) holds a schema, not data: its
    `$ref` back is recursion, unrolled to the depth (it was missed, and the compile recursed
    without end)."""
    for name in ("default", "enum", "const", "examples"):
        node = {"type": "object", "properties": {name: {"$ref": "#/$defs/n"}, "v": {"type": "integer"}},
                "additionalProperties": False}
        schema = {"$ref": "#/$defs/n", "$defs": {"n": node}}
        recursive, _ = recursive_targets(schema, Resolver(schema, "t"))
        assert recursive == {id(node)}
        fst = js.json_schema_fst(schema, max_depth=3)
        for depth in range(5):
            value: dict = {"v": 1}
            for _ in range(depth):
                value = {name: value}
            assert accepts(fst, json.dumps(value, separators=(",", ":"))) == (depth < 3), (name, depth)


def _nest(levels: int, executor) -> dict:
    job: dict = {"steps": ["ls"], "executor": executor}
    for i in range(levels):
        job = {"steps": [job, {"run": executor}]} if i % 2 else {"steps": [], "param": {"default": job}}
    return job


@pytest.mark.parametrize("levels", [0, 1, 2])
def test_nested_jobs_against_jsonschema(levels):
    # (5 levels: `param` is recursive too, param -> default -> job -> param, so the nesting of
    # `_nest(2)` enters job, step, param, job and step, one instance level each)
    fst = js.json_schema_fst(JOBS, max_depth=5)
    validator = jsonschema.validators.validator_for(JOBS)(JOBS)
    executors = [{"docker": "abc"}, {"machine": True}, "small", {"docker": "abcd"},
                 {"docker": "a", "machine": True}, "medium", {}]
    assert validator.is_valid(_nest(levels, "small"))  # valid instances are among them
    for ex in executors:
        value = _nest(levels, ex)
        text = json.dumps(order_instance(JOBS, value), separators=(",", ":"))
        assert accepts(fst, text) == validator.is_valid(value), value
