"""A subschema whose values can only be objects (or only arrays) is keyed on the part of its
location that objects (arrays) read (`Location.view`): travis's `deployment`, met as `deploy`
and as an item of `deploy`'s array form, is compiled once, and the language is the one compiled
with the whole location as the key (both differences empty) and agrees with `jsonschema`."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pynini
import pytest

jsonschema = pytest.importorskip("jsonschema")

from fstbeam.compiler.structured.json_schema import schema as js  # noqa: E402
from fstbeam.compiler.structured.json_schema.location import Location, Resolver, order_instance  # noqa: E402
from fstbeam.compiler.structured.json_schema.refs import PossibleTypes  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from node_builds import compile_counting  # noqa: E402
from regex_oracle import accepts  # noqa: E402

DEPLOY = {
    "type": "object",
    "properties": {"deploy": {"oneOf": [
        {"type": "array", "maxItems": 2, "items": {"$ref": "#/definitions/deployment"}},
        {"$ref": "#/definitions/deployment"},
    ]}},
    "definitions": {
        "deployment": {"allOf": [
            {"type": "object", "properties": {"on": {"type": "string", "maxLength": 2}}},
            {"oneOf": [
                {"properties": {"provider": {"const": "s3"}, "bucket": {"type": "string"}},
                 "required": ["provider", "bucket"]},
                {"properties": {"provider": {"const": "pages"}}, "required": ["provider"]},
            ]},
        ]},
        "either": {"anyOf": [{"type": "array"}, {"$ref": "#/definitions/deployment"}]},
        "loop": {"allOf": [{"$ref": "#/definitions/loop"}]},
    },
}


def _compile(monkeypatch, whole_location: bool) -> tuple[pynini.Fst, Counter]:
    def old(m):  # keyed on every node of the location, as before
        m.setattr(Location, "view", lambda self, objects, arrays: self.key)

    return compile_counting(monkeypatch, DEPLOY, max_depth=2, patch=old if whole_location else None)


def test_possible_types():
    d = DEPLOY["definitions"]
    kinds = PossibleTypes(Resolver(DEPLOY, "t"))
    assert kinds.of(d["deployment"]) == {"object"}  # from its allOf
    assert kinds.of(d["deployment"]["allOf"][1]) == {"object", "array", "other"}
    assert kinds.of(d["either"]) == {"object", "array"}
    assert kinds.of(d["loop"]) == {"object", "array", "other"}  # a cycle says "any"
    assert kinds.of({"enum": [[1], "a"]}) == {"array", "other"}
    assert kinds.of(False) == set()


def test_an_object_only_subschema_is_compiled_once_and_the_language_is_unchanged(monkeypatch):
    new, calls = _compile(monkeypatch, whole_location=False)
    old, old_calls = _compile(monkeypatch, whole_location=True)
    assert old_calls["/definitions/deployment"] == 2  # as `deploy` and as its item, before
    assert calls["/definitions/deployment"] == 1
    for a, b in ((new, old), (old, new)):
        diff = pynini.difference(a, b)
        diff.connect()
        assert diff.num_states() == 0


@pytest.mark.parametrize("deploy", [
    {"provider": "s3", "bucket": "b"}, {"provider": "pages", "on": "ab"},
    [{"provider": "pages"}, {"provider": "s3", "bucket": ""}], [],
    {"provider": "s3"}, {"provider": "pages", "on": "abc"}, [{"provider": "ftp"}],
    [{"provider": "pages"}] * 3, "s3", [[{"provider": "pages"}]],
])
def test_against_jsonschema(deploy):
    fst = js.json_schema_fst(DEPLOY, max_depth=2)
    value = {"deploy": deploy}
    valid = jsonschema.validators.validator_for(DEPLOY)(DEPLOY).is_valid(value)
    text = json.dumps(order_instance(DEPLOY, value), separators=(",", ":"))
    assert accepts(fst, text) == valid, value


def test_one_of_branches_of_different_kinds_are_not_met(monkeypatch):
    """`deploy`'s array form and its object form cannot overlap: no branch is determinized
    for their product (and the language is checked against `jsonschema` above)."""
    opts: Counter = Counter()
    opt = js.SchemaCompiler.opt

    def counting(self, fst, path):
        opts[path] += 1
        return opt(self, fst, path)

    monkeypatch.setattr(js.SchemaCompiler, "opt", counting)
    js.json_schema_fst(DEPLOY, max_depth=2)
    # (the object form is a bare `$ref`: only the oneOf would determinize it under this path)
    assert opts["/properties/deploy/oneOf/1"] == 0
    # the object branches of `deployment`'s own oneOf may overlap: those are still met
    assert opts["/definitions/deployment/allOf/1/oneOf/0"] == 1
