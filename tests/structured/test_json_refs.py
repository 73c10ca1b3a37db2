"""`$ref`s by URI: the base URI that `$id`s set, embedded resources, anchors, and the dynamic
references that a document extends nowhere (`reading.local_refs`). The oracle is `jsonschema`'s
validator for the schema's draft, which resolves references with `referencing` (the
specification's base-URI rules), on instances on both sides of each schema."""
from __future__ import annotations

import pytest
from instance_walk import dfa_accepts, verdicts

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.json_schema.reading import local_refs
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.errors import SpecError

D2020 = "https://json-schema.org/draft/2020-12/schema"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D7 = "http://json-schema.org/draft-07/schema#"

CASES = {
    "relative id of an embedded resource": (
        {"$schema": D2020, "$id": "https://example.com/trees/root.json", "type": "array",
         "items": {"$ref": "leaf.json"},
         "$defs": {"leaf": {"$id": "leaf.json", "type": "integer", "minimum": 3}}},
        [[3, 4], [1], ["a"], []]),
    "a path up from the base": (
        {"$schema": D2020, "$id": "https://example.com/a/b/root.json", "type": "object",
         "properties": {"x": {"$ref": "../c/item.json"}, "y": {"$ref": "https://example.com/a/c/item.json"}},
         "$defs": {"item": {"$id": "https://example.com/a/c/item.json", "enum": ["p", "q"]}}},
        [{"x": "p", "y": "q"}, {"x": "r"}, {"y": 1}]),
    "the same anchor in two resources": (
        {"$schema": D2020, "$id": "https://example.com/root", "$ref": "child#thing",
         "$defs": {"here": {"$anchor": "thing", "type": "number"},
                   "child": {"$id": "child", "$defs": {"there": {"$anchor": "thing", "type": "string"}}}}},
        ["s", 1, None]),
    "a pointer inside an embedded resource": (
        {"$schema": D2020, "$ref": "https://example.com/inner.json",
         "$defs": {"inner": {"$id": "https://example.com/inner.json", "$ref": "#/$defs/word",
                             "$defs": {"word": {"type": "string", "maxLength": 3}}}}},
        ["abc", "abcd", 7]),
    "a URN id": (
        {"$schema": D2020, "$ref": "urn:example:thing",
         "$defs": {"thing": {"$id": "urn:example:thing", "$ref": "#/$defs/flag",
                             "$defs": {"flag": {"type": "boolean"}}}}},
        [True, "true", 0]),
    "a dynamic reference no one extends": (
        {"$schema": D2020, "$id": "https://example.com/tree", "$dynamicAnchor": "node", "type": "object",
         "properties": {"value": {"type": "integer"}, "kids": {"type": "array", "items": {"$dynamicRef": "#node"}}},
         "additionalProperties": False},
        [{"value": 1, "kids": [{"value": 2}]}, {"value": 1, "kids": [{"value": "2"}]}, {"kids": [{"other": 1}]}]),
    "a recursive reference with one recursive anchor": (
        {"$schema": D2019, "$recursiveAnchor": True, "type": "object",
         "properties": {"n": {"type": "integer"}, "next": {"$recursiveRef": "#"}}, "additionalProperties": False},
        [{"n": 1, "next": {"n": 2}}, {"n": 1, "next": {"n": "x"}}, {"next": {"m": 1}}]),
    "a reference to a dynamic anchor": (
        {"$schema": D2020, "type": "array", "items": {"$ref": "#elem"},
         "$defs": {"e": {"$dynamicAnchor": "elem", "type": "string"}}},
        [["a"], [1], []]),
    "an id inside an unknown keyword is no identifier": (
        {"$schema": D2020, "$id": "https://example.com/root.json", "$ref": "https://example.com/thing.json",
         "$defs": {"real": {"$id": "https://example.com/thing.json", "type": "string"},
                   "fake": {"somethingElse": {"$id": "https://example.com/thing.json", "type": "integer"}}}},
        ["x", 1]),
    "draft 7: an id beside a ref sets no base": (
        {"$schema": D7, "$id": "http://example.com/root.json", "type": "object",
         "properties": {"a": {"$id": "http://example.com/elsewhere/", "$ref": "#/definitions/small"}},
         "definitions": {"small": {"type": "integer", "maximum": 5}}},
        [{"a": 4}, {"a": 6}, {"a": "4"}]),
    "draft 7: a fragment id is an anchor": (
        {"$schema": D7, "type": "array", "items": {"$ref": "#short"},
         "definitions": {"s": {"$id": "#short", "type": "string", "maxLength": 2}}},
        [["ab"], ["abc"], [1]]),
    "an empty dependentRequired list asks nothing": (
        {"$schema": D2020, "dependentRequired": {"bar": [], "foo": ["baz"]}},
        [{}, {"bar": 2}, {"foo": 1}, {"foo": 1, "baz": 2}, 3]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_references_resolve_as_the_specification_says(name):
    found = verdicts(*CASES[name])
    assert all(a == b for _, a, b in found), found
    assert {b for _, _, b in found} == {True, False}  # (both sides of the schema are tried)


def test_what_is_already_local_is_left_as_it_is():
    schema = {"$id": "https://example.com/s.json", "properties": {"a": {"$ref": "#/$defs/a"}},
              "$defs": {"a": {"type": "string"}}}
    assert local_refs(schema) is schema
    anchors = {"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"$ref": "#x"}},
               "definitions": {"x": {"id": "#x", "type": "string"}}}
    out = local_refs(anchors)
    assert out["properties"]["a"]["$ref"] == "#/definitions/x" and anchors["properties"]["a"]["$ref"] == "#x"


def test_a_pointer_that_misses_in_its_resource_is_read_from_the_root():
    """A generator's `"$id": "/properties/a"` makes each member a resource; its `#/definitions/x`
    meant the document's, and is read so (the specification has no target for it)."""
    schema = {"$schema": "http://json-schema.org/draft-06/schema#", "type": "object",
              "properties": {"a": {"$id": "/properties/a", "type": "object",
                                   "properties": {"b": {"$ref": "#/definitions/small"}}}},
              "definitions": {"small": {"type": "integer", "maximum": 3}}}
    assert local_refs(schema) is schema
    dfa = fst_to_dfa(json_schema_fst(schema))
    assert dfa_accepts(dfa, schema, {"a": {"b": 2}}) and not dfa_accepts(dfa, schema, {"a": {"b": 5}})


def test_a_name_with_a_percent_sign_survives_the_rewrite():
    schema = {"$schema": D2020, "$ref": "https://example.com/p.json",
              "$defs": {"50%": {"$id": "https://example.com/p.json", "type": "integer"}}}
    dfa = fst_to_dfa(json_schema_fst(schema))
    assert dfa_accepts(dfa, schema, 5) and not dfa_accepts(dfa, schema, "5")


@pytest.mark.parametrize("schema,match", [
    # extended by a second resource: the target depends on the path taken, so it stays refused
    ({"$schema": D2020, "$id": "https://example.com/root", "$dynamicAnchor": "meta", "$ref": "ext",
      "$defs": {"ext": {"$id": "ext", "$dynamicAnchor": "meta", "properties": {"x": {"$dynamicRef": "#meta"}}}}},
     r"\$dynamicRef"),
    ({"$schema": D2020, "$id": "https://example.com/root", "$ref": "other.json"}, "outside the schema"),
])
def test_what_cannot_be_resolved_here_is_refused(schema, match):
    with pytest.raises(SpecError, match=match):
        json_schema_fst(schema)
