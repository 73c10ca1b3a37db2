"""`json_strict`: objects and tuples take only the members and items their schema declares, where
that schema alone describes its location (`reading.closed_declared`). Oracles: `jsonschema`
on the schema as written (a strict text is valid there too), and a walk of the instance that
finds an undeclared member or item of a schema that alone describes its place."""
from __future__ import annotations

import json

import jsonschema
import pytest
from instance_walk import dfa_accepts

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.request import ConstraintRequest
from fstbeam.compiler.structured.json_schema.reading import closed_declared
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.errors import SpecError

I = {"type": "integer"}


def _only_declared(node, value) -> bool:
    """The instance has no member or item past what a plain schema (no combinator, no $ref, no
    additionalProperties / items of its own) declares: the oracle for the schemas below."""
    if not isinstance(node, dict):
        return True
    if isinstance(value, dict) and "properties" in node:
        if "additionalProperties" not in node and set(value) - set(node["properties"]) - set(node.get("required", [])):
            return False
        return all(_only_declared(node["properties"].get(k), v) for k, v in value.items())
    if isinstance(value, list) and "prefixItems" in node:
        if "items" not in node and len(value) > len(node["prefixItems"]):
            return False
        return all(_only_declared(s, v) for s, v in zip(node["prefixItems"], value))
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        return all(_only_declared(node["items"], v) for v in value)
    return True


PLAIN = [
    ({"type": "object", "properties": {"a": I, "b": {"type": "string"}}, "required": ["a"]},
     [{"a": 1}, {"a": 1, "b": "x"}, {"a": 1, "c": 2}, {"b": "x"}, {"a": 1, "b": "x", "z": None}]),
    ({"type": "object", "properties": {"o": {"type": "object", "properties": {"n": I}}, "free": {"type": "object"}}},
     [{"o": {"n": 1}}, {"o": {"n": 1, "m": 2}}, {"free": {"x": [1, {"y": 2}]}}, {"o": {}, "free": {}, "other": 1}]),
    ({"type": "array", "prefixItems": [I, {"type": "string"}]}, [[1], [1, "a"], [1, "a", 2], [1, "a", "b"], []]),
    ({"type": "array", "items": {"type": "object", "properties": {"k": I}}}, [[{"k": 1}], [{"k": 1, "j": 2}], []]),
    ({"properties": {"a": I}, "additionalProperties": {"type": "string"}}, [{"a": 1, "b": "x"}, {"a": 1, "b": 2}]),
    # a required name that `properties` misses is declared too (Github_easy o21083 requires "id", declares "_id")
    ({"type": "object", "properties": {"_id": I}, "required": ["id"]},
     [{"id": 1}, {"id": {"x": [1]}, "_id": 2}, {"_id": 2}, {"id": 1, "other": 3}]),
]


@pytest.mark.parametrize("schema, instances", PLAIN)
def test_strict_accepts_exactly_the_valid_texts_without_undeclared_members(schema, instances):
    strict, spec = fst_to_dfa(json_schema_fst(schema, strict=True)), fst_to_dfa(json_schema_fst(schema))
    for inst in instances:
        valid = jsonschema.Draft202012Validator(schema).is_valid(inst)
        assert dfa_accepts(spec, schema, inst) == valid, inst
        assert dfa_accepts(strict, schema, inst) == (valid and _only_declared(schema, inst)), inst
    # (a schema that says what other members take is the same either way)
    assert any(dfa_accepts(spec, schema, i) and not dfa_accepts(strict, schema, i) for i in instances) == (
        "additionalProperties" not in schema)


def _closed(schema) -> list[str]:
    """Paths of the nodes `closed_declared` closed (its output against the input)."""
    out = []

    def walk(a, b, path):
        if isinstance(a, dict) and isinstance(b, dict):
            if set(b) - set(a):
                out.append(path or "/")
            for k in a:
                walk(a[k], b[k], f"{path}/{k}")
        elif isinstance(a, list):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{path}/{i}")
    walk(schema, closed_declared(schema, "test"), "")
    return out


OBJ = {"properties": {"a": I}}
BASE = {"properties": {"b": I}}


@pytest.mark.parametrize("schema, closed", [
    ({"allOf": [OBJ, BASE]}, []),  # each branch meets the other: closing one refuses the other's members
    ({**OBJ, "allOf": [BASE]}, []),
    ({"anyOf": [OBJ, BASE]}, ["/anyOf/0", "/anyOf/1"]),  # alternatives: each closed
    ({**OBJ, "anyOf": [BASE]}, []),  # beside the node's own members
    ({"properties": {"a": I, "b": I}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, ["/"]),
    ({"definitions": {"base": OBJ, "solo": BASE}, "allOf": [{"$ref": "#/definitions/base"}, BASE],
      "properties": {"x": {"$ref": "#/definitions/solo"}}}, ["/definitions/solo"]),
    ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": OBJ}, "properties": {"x": {"$ref": "#/$defs/a", "title": "t"}},
      "allOf": [{"$ref": "#/$defs/a"}]}, []),  # a joined $ref followed through an alias
    ({"$defs": {"b": OBJ}, "properties": {"x": {"$ref": "other.json#/b"}}, "allOf": [{"$ref": "other.json"}]}, []),
    # a joined ref by $anchor or $id keeps only its own target open (it resolves as the compiler resolves it)
    ({"$defs": {"base": {**OBJ, "$anchor": "base"}, "solo": BASE}, "allOf": [{"$ref": "#base"}, BASE],
      "properties": {"x": {"$ref": "#/$defs/solo"}}}, ["/$defs/solo"]),
    ({"definitions": {"base": {**OBJ, "$id": "base.json"}, "solo": BASE}, "allOf": [{"$ref": "base.json"}, BASE],
      "properties": {"x": {"$ref": "#/definitions/solo"}}}, ["/definitions/solo"]),
    ({**OBJ, "if": {"required": ["a"]}, "then": BASE}, []),
    ({"type": "array", "items": [I]}, ["/"]),  # draft 4-7 tuples: additionalItems
    ({"type": "array", "items": OBJ, "contains": BASE}, []),
    ({"properties": {"ab": OBJ}, "patternProperties": {"^a": BASE}}, ["/"]),  # the member meets the pattern's schema
    ({"type": "object"}, []),
    ({"enum": [{"properties": {}}], **OBJ}, ["/"]),  # data is not read as schemas
    ({"properties": {"a": {"type": "integer", "required": True}}}, ["/"]),  # draft 3's `required` (a flag)
])
def test_closed_declared_leaves_joined_schemas_as_the_specification_reads_them(schema, closed):
    assert _closed(schema) == closed
    assert _closed(schema) == _closed(json.loads(json.dumps(schema)))  # (the input is not changed)


def test_a_joined_object_keeps_the_members_its_partners_declare():
    schema = {"type": "object", "properties": {"a": I}, "allOf": [{"properties": {"b": I}}]}
    dfa = fst_to_dfa(json_schema_fst(schema, strict=True))
    assert dfa_accepts(dfa, schema, {"a": 1, "b": 2}) and dfa_accepts(dfa, schema, {"a": 1, "c": 3})


def test_request_key_and_errors():
    obj = {"json_schema": {"type": "object", "properties": {"a": I}}, "json_strict": True}
    req = ConstraintRequest.from_json(obj, allow_paths=False)
    assert req.json_strict is True and req.to_json() == obj
    with pytest.raises(SpecError, match="json_strict must be true or false"):
        ConstraintRequest.from_kwargs(json_schema={}, json_strict="yes")
    with pytest.raises(SpecError, match="give json_schema too"):
        ConstraintRequest.from_kwargs(regex="a+", json_strict=True)
