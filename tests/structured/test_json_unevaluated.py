"""`unevaluatedProperties`/`unevaluatedItems` read as what they mean (`reading.unevaluated`):
where the node's `allOf` and `$ref`s fix what is evaluated, and beside one `oneOf`, `anyOf` or
`if`; against `jsonschema`'s validator for the schema's draft, on instances on both sides of
each schema. Refused, naming the path, beside `contains` or two branchings."""
from __future__ import annotations

import pytest
from instance_walk import verdicts

from fstbeam.compiler.structured.json_schema.schema import UnsupportedSchema, json_schema_fst

D2020 = "https://json-schema.org/draft/2020-12/schema"
D2019 = "https://json-schema.org/draft/2019-09/schema"
NAMED = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CASES = {
    "an allOf of references, closed": (
        {"$schema": D2020, "type": "object", "allOf": [{"$ref": "#/$defs/named"}, {"$ref": "#/$defs/aged"}],
         "unevaluatedProperties": False,
         "$defs": {"named": NAMED, "aged": {"properties": {"age": {"type": "integer"}}}}},
        [{"name": "a", "age": 3}, {"name": "a"}, {"name": "a", "other": 1}, {"age": 3}]),
    "the node's own members, the rest integers": (
        {"$schema": D2020, "properties": {"a": {"type": "string"}}, "unevaluatedProperties": {"type": "integer"}},
        [{"a": "x", "b": 2}, {"a": "x", "b": "y"}, {"b": 1, "c": 2}, {"a": 1}]),
    "patterns of a branch": (
        {"$schema": D2020, "allOf": [{"patternProperties": {"^x-": {"type": "boolean"}}}],
         "properties": {"id": {"type": "integer"}}, "unevaluatedProperties": False},
        [{"id": 1, "x-a": True}, {"id": 1, "y": True}, {"x-a": 1}, {}]),
    "a target that takes every member": (
        {"$schema": D2020, "$ref": "#/$defs/open", "unevaluatedProperties": False,
         "$defs": {"open": {"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}}}},
        [{"a": 1, "b": "x"}, {"a": 1, "b": 2}, {"a": "1"}]),
    "a branch closed on its own": (
        {"$schema": D2020, "allOf": [{"properties": {"a": {}}, "unevaluatedProperties": False}],
         "properties": {"b": {}}, "unevaluatedProperties": False},
        [{"a": 1}, {"a": 1, "b": 2}, {"c": 1}]),
    "prefix items of a branch, then nothing": (
        {"$schema": D2020, "type": "array", "allOf": [{"prefixItems": [{"type": "string"}, {"type": "integer"}]}],
         "unevaluatedItems": False},
        [["a", 1], ["a"], ["a", 1, 2], [1]]),
    "items after the node's own prefix": (
        {"$schema": D2020, "prefixItems": [{"type": "string"}], "unevaluatedItems": {"type": "boolean"}},
        [["a", True, False], ["a", 1], [], [True]]),
    "2019-09: an items list in a reference": (
        {"$schema": D2019, "$ref": "#/$defs/pair", "unevaluatedItems": {"const": 0},
         "$defs": {"pair": {"items": [{"type": "string"}, {"type": "string"}]}}},
        [["a", "b", 0, 0], ["a", "b", 1], ["a"], [1]]),
    "oneOf: the one branch that holds adds its members": (
        {"$schema": D2020, "type": "object", "properties": {"kind": {"type": "string"}},
         "oneOf": [{"properties": {"radius": {"type": "number"}}, "required": ["radius"]},
                   {"properties": {"side": {"type": "number"}}, "required": ["side"]}],
         "unevaluatedProperties": False},
        [{"kind": "c", "radius": 1}, {"kind": "s", "side": 2}, {"radius": 1, "side": 2}, {"radius": 1, "x": 0},
         {"side": 2, "radius": "r"}]),
    "anyOf: every branch that holds adds its members": (
        {"$schema": D2020, "anyOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": {"type": "integer"}}},
                                     {"properties": {"c": {"type": "string"}}, "required": ["c"]}],
         "unevaluatedProperties": {"type": "boolean"}},
        [{"a": 1, "b": 2}, {"a": 1, "c": "x"}, {"c": "x", "z": True}, {"c": 1}, {"c": "x", "z": 1}, {"a": "1", "b": 2}]),
    "if, then, else: the side taken adds its members": (
        {"$schema": D2020, "properties": {"t": {"enum": ["p", "q"]}},
         "if": {"properties": {"t": {"const": "p"}}}, "then": {"properties": {"pa": {}}}, "else": {"properties": {"qa": {}}},
         "unevaluatedProperties": False},
        [{"t": "p", "pa": 1}, {"t": "q", "qa": 1}, {"t": "p", "qa": 1}, {"t": "q", "pa": 1}, {"x": 1}]),
    "dependentSchemas: each member there adds its schema's members": (
        {"$schema": D2020, "properties": {"a": {}, "b": {}},
         "dependentSchemas": {"a": {"properties": {"a2": {"type": "integer"}}}, "b": {"properties": {"b2": {}}}},
         "unevaluatedProperties": False},
        [{"a": 1, "a2": 2}, {"a": 1, "b": 1, "a2": 2, "b2": 3}, {"a2": 2}, {"b": 1, "a2": 2}, {"a": 1, "a2": "x"}, {}]),
    "dependentSchemas beside items evaluates no item": (
        {"$schema": D2020, "prefixItems": [{}], "dependentSchemas": {"a": {"prefixItems": [{}, {}]}},
         "allOf": [{"type": ["array", "object"]}], "unevaluatedItems": False},
        [[1], [1, 2], {"a": 1}]),
    "oneOf over items": (
        {"$schema": D2020, "oneOf": [{"prefixItems": [{"const": 1}]}, {"prefixItems": [{"const": 2}, {"const": 3}]}],
         "unevaluatedItems": False},
        [[1], [2, 3], [1, 3], [2], [2, 3, 4]]),
    "2019-09: additionalItems without an items list evaluates nothing": (
        {"$schema": D2019, "allOf": [{"additionalItems": {"type": "number"}}], "unevaluatedItems": {"type": "string"}},
        [["a", "b"], ["a", 1], []]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_fixed_evaluation_reads_as_the_specification_says(name):
    found = verdicts(*CASES[name])
    assert all(a == b for _, a, b in found), found
    assert {b for _, _, b in found} == {True, False}


@pytest.mark.parametrize("schema,keyword,path", [
    ({"$schema": D2020, "properties": {"a": {"oneOf": [{"required": ["x"]}, {"required": ["y"]}],
                                             "if": {"required": ["z"]}, "then": {"properties": {"w": {}}},
                                             "unevaluatedProperties": False}}},
     "unevaluatedProperties", "/properties/a/unevaluatedProperties"),
    ({"$schema": D2020, "contains": {"type": "string"}, "unevaluatedItems": False}, "unevaluatedItems", "/unevaluatedItems"),
    # two branching keywords (one behind a reference), and a branch that branches again
    ({"$schema": D2020, "allOf": [{"$ref": "#/$defs/c"}], "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
      "unevaluatedProperties": False,
      "$defs": {"c": {"if": {"required": ["k"]}, "then": {"properties": {"k": {}}}}}}, "unevaluatedProperties",
     "/unevaluatedProperties"),
    ({"$schema": D2020, "oneOf": [{"anyOf": [{"properties": {"a": {}}}]}, {"properties": {"b": {}}}],
      "unevaluatedProperties": False}, "unevaluatedProperties", "/unevaluatedProperties"),
    ({"$schema": D2020, "anyOf": [{"properties": {k: {}}} for k in "abcde"], "unevaluatedProperties": False},
     "unevaluatedProperties", "/unevaluatedProperties"),
])
def test_evaluation_an_instance_decides_is_refused_by_path(schema, keyword, path):
    with pytest.raises(UnsupportedSchema) as info:
        json_schema_fst(schema)
    assert (info.value.keyword, info.value.path) == (keyword, path)
    assert "depend on the instance" in str(info.value)
