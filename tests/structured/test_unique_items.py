"""`uniqueItems` (json_unique) against the `jsonschema` validator: every array up to a length over
a pool of candidate items, serialized compactly as the automaton reads it."""
from __future__ import annotations

import itertools
import json
import logging
import sys
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

from fstbeam.compiler.structured.json_schema.schema import json_schema_fst  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import accepts  # noqa: E402


def valid(schema, value) -> bool:
    return jsonschema.validators.validator_for(schema)(schema).is_valid(value)


def arrays(pool, longest):
    for n in range(longest + 1):
        yield from (list(t) for t in itertools.product(pool, repeat=n))


def texts(value):
    """The compact spelling, and one with a string's first character escaped (the same value)."""
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    first = next((v for v in value if isinstance(v, str) and v), None)
    if first is None:
        return [compact]
    escaped = '"\\u%04x%s"' % (ord(first[0]), first[1:])
    return [compact, compact.replace(json.dumps(first), escaped, 1)]


EXACT = [
    {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True},
    {"type": "array", "items": {"enum": [1, 1.0, 2, "1", None]}, "uniqueItems": True},
    {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True, "minItems": 1},
    {"type": "array", "items": {"enum": ["a", "b", "c", "d"]}, "uniqueItems": True,
     "minItems": 2, "maxItems": 3},
    {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True,
     "contains": {"const": "b"}},
    # the list found through $ref and allOf; other keywords of the item still apply
    {"$defs": {"colour": {"enum": ["red", "green", "blue", 7]}}, "type": "array",
     "items": {"allOf": [{"$ref": "#/$defs/colour"}, {"type": "string"}]}, "uniqueItems": True},
    {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True,
                                               "items": {"const": "x"}}}},
    # integers between bounds are a finite list too (exclusive bounds and multipleOf still apply)
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 3}, "uniqueItems": True},
    {"type": "array", "items": {"type": ["integer", "null"], "exclusiveMinimum": -1.5, "maximum": 4,
                                "multipleOf": 2}, "uniqueItems": True},
]
POOLS = [
    ["a", "b", "c", "d"],
    [1, 1.0, 2, "1", None, 3],
    [True, False, 0],
    ["a", "b", "c", "d", "e"],
    ["a", "b", "c"],
    ["red", "green", "blue", 7, "pink"],
    ["x", "y"],
    [0, 1.0, 3, 4, -1],
    [-2, 0, 2, 2.0, None, 4, 1],
]


@pytest.mark.parametrize("k", range(len(EXACT)))
def test_items_from_a_short_list_are_unique_exactly(k, caplog):
    schema, pool = EXACT[k], POOLS[k]
    with caplog.at_level(logging.WARNING, logger="fstbeam"):
        fst = json_schema_fst(schema)
    assert not [r for r in caplog.records if "uniqueItems" in r.getMessage()]
    wrap = "tags" in schema.get("properties", {})
    for value in arrays(pool, 4):
        doc = {"tags": value} if wrap else value
        for text in texts(value):
            text = '{"tags":%s}' % text if wrap else text
            assert accepts(fst, text) == valid(schema, doc), (schema, text)


def test_a_long_list_keeps_neighbours_apart_and_no_valid_array_out(caplog):
    values = [f"v{i:02d}" for i in range(24)]  # 2^24 subsets: past the budget
    schema = {"type": "array", "items": {"enum": values}, "uniqueItems": True}
    with caplog.at_level(logging.WARNING, logger="fstbeam"):
        fst = json_schema_fst(schema)
    assert any("neighbouring items only" in r.getMessage() for r in caplog.records)
    pool = values[:3] + values[-2:]
    for value in arrays(pool, 4):
        text = json.dumps(value, separators=(",", ":"))
        in_a_row = any(a == b for a, b in zip(value, value[1:]))
        if valid(schema, value):
            assert accepts(fst, text), text  # never a valid array rejected
        elif in_a_row:
            assert not accepts(fst, text), text
        else:
            assert accepts(fst, text), text  # the documented approximation: apart, not checked


@pytest.mark.parametrize("schema", [
    {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    {"type": "array", "prefixItems": [{"enum": ["a", "b"]}], "items": {"enum": ["a", "b"]},
     "uniqueItems": True},
    {"type": "array", "uniqueItems": True},
    {"type": "array", "items": {"type": "integer", "minimum": 0}, "uniqueItems": True},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1000}, "uniqueItems": True},
])
def test_not_enforced_is_a_warning_naming_the_path(schema, caplog):
    with caplog.at_level(logging.WARNING, logger="fstbeam"):
        fst = json_schema_fst({"type": "object", "properties": {"list": schema}})
    assert any("uniqueItems at /properties/list is not enforced" in r.getMessage()
               for r in caplog.records)
    item = '"a"' if "integer" not in json.dumps(schema) else "1"
    assert accepts(fst, '{"list":[%s,%s]}' % (item, item))


def test_draft7_ref_siblings_are_not_the_items_values():
    """Drafts 3-7: an `enum` beside `$ref` is no keyword, so the list is the target's."""
    schema = {"$schema": "http://json-schema.org/draft-07/schema#",
              "definitions": {"ab": {"enum": ["a", "b", "c"]}}, "type": "array",
              "items": {"$ref": "#/definitions/ab", "enum": ["a"]}, "uniqueItems": True}
    fst = json_schema_fst(schema)
    for value in arrays(["a", "b", "c"], 3):
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(fst, text) == valid(schema, value), text
