"""json_schema_fst against the `jsonschema` validator on small schemas and many candidate
instances (each serialized as the automaton reads it: `order_instance`, compact JSON)."""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pynini
import pytest

jsonschema = pytest.importorskip("jsonschema")

from fstbeam.compiler.structured.json_schema.location import order_instance  # noqa: E402
from fstbeam.compiler.structured.json_schema.schema import (  # noqa: E402
    UnsupportedSchema,
    json_schema_fst,
)
from fstbeam.errors import SpecError  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import accepts  # noqa: E402


def dumps(schema, value) -> str:
    return json.dumps(order_instance(schema, value), separators=(",", ":"), ensure_ascii=False)


def valid(schema, value) -> bool:
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema).is_valid(value)


SCALARS = [None, True, False, 0, -0.5, 1, 2, 3, -1, 7, 10, 12.5, 100, 2.25, "", "a", "ab", "abc",
           "abcd", "é", 'q"x', "a\nb", "x/y"]
CANDIDATES = SCALARS + [
    [], [1], [1, 2], [1, 2, 3], ["a"], ["a", 1], [None, None], [[1]], [{"a": 1}],
    {}, {"a": 1}, {"a": "x"}, {"b": 2}, {"a": 1, "b": 2}, {"b": 2, "a": 1}, {"c": None},
    {"a": 1, "c": [1]}, {"a": {"a": 1}}, {"a": {"b": {"a": 2}}}, {"a": [1, {"b": 1}]},
    {"a": 3, "b": "x", "c": True}, {"k": "a"}, {"k": "b", "v": 1}, {"k": "c"}, {"k": "a", "v": 2},
    {"k": "c", "v": 1}, {"k": 1},
]

SCHEMAS = [
    {"type": "integer"},
    {"type": ["string", "null"]},
    {"type": "number", "minimum": -0.5, "exclusiveMaximum": 12.5},
    {"type": "integer", "minimum": 2, "maximum": 10},
    {"type": "integer", "exclusiveMinimum": 1, "multipleOf": 3},
    {"type": "number", "multipleOf": 0.25},
    {"type": "string", "minLength": 2, "maxLength": 3},
    {"enum": [1, "a", None, [1, 2], {"a": 1}]},
    {"const": {"a": 1, "b": 2}},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
    {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
    {"type": "array", "contains": {"type": "integer", "minimum": 2}},
    {"type": "array", "contains": {"type": "integer"}, "minContains": 2, "maxContains": 2},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
     "items": [{"type": "integer"}], "additionalItems": {"type": "string"}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    {"type": "object", "properties": {"a": {"type": "integer"}},
     "additionalProperties": False},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
    {"type": "object", "minProperties": 2, "maxProperties": 2},
    {"type": "object", "dependentRequired": {"a": ["b"]}},
    {"anyOf": [{"type": "string", "maxLength": 1}, {"type": "integer", "minimum": 5}]},
    {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 2}]},
    {"allOf": [{"type": "number", "minimum": 1}, {"type": "integer", "maximum": 7}]},
    {"not": {"type": "object"}},
    {"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}, "v": {"type": "integer"}},
                "required": ["k"]},
               {"type": "object", "properties": {"k": {"const": "b"}}, "required": ["k"]},
               {"type": "object", "properties": {"k": {"enum": ["a", "c"]}}, "required": ["k"]}]},
    {"not": {"properties": {"a": {"type": "integer"}}, "required": ["a"]}},
    {"if": {"type": "integer"}, "then": {"minimum": 3}, "else": {"type": "string"}},
    {"anyOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]},
               {"properties": {"b": {"const": 2}}, "required": ["b"]}]},
    {"$defs": {"t": {"type": "object", "properties": {"a": {"$ref": "#/$defs/t"}},
                     "additionalProperties": False}}, "$ref": "#/$defs/t"},
    {"definitions": {"n": {"type": "integer", "maximum": 3}},
     "type": "array", "items": {"$ref": "#/definitions/n"}},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "minimum": 1,
     "exclusiveMinimum": True},
    {"type": "object", "properties": {"a": {"type": "integer", "nullable": True}}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
     "dependencies": {"a": {"required": ["c"]}}},
    # oneOf branches told apart within the parent's type and required keys (json_disjoint)
    {"type": "object", "required": ["k"],
     "oneOf": [{"properties": {"k": {"const": "a"}}}, {"properties": {"k": {"const": "b"}}},
               {"properties": {"k": {"enum": ["a", "c"]}}}]},
    # a branch whose key is every name but the others' (`not` of their enum): told apart
    # statically, and still exact (travis's `provider`)
    {"type": "object", "required": ["k"],
     "oneOf": [{"properties": {"k": {"enum": ["a"]}, "v": {"type": "integer"}}},
               {"properties": {"k": {"const": "b"}}, "required": ["v"]},
               {"properties": {"k": {"type": "string", "not": {"enum": ["a", "b"]}}}},
               {"properties": {"k": {"not": {"enum": ["a"]}}}}]},
    {"required": ["k"],  # no type: non-objects match both branches, so none is valid
     "oneOf": [{"properties": {"k": {"const": "a"}}}, {"properties": {"k": {"const": "b"}}}]},
    {"type": "object", "required": ["b"],
     "oneOf": [{"properties": {"a": {}}, "additionalProperties": False},
               {"properties": {"b": {"type": "integer"}}}]},
    # one definition behind several $ref wrappers (one location, compiled once)
    {"$defs": {"o": {"type": "object", "properties": {"a": {"type": "integer"},
                                                      "b": {"type": "string"}}}},
     "type": "object", "properties": {"a": {"$ref": "#/$defs/o"},
                                      "b": {"$ref": "#/$defs/o", "description": "x"}},
     "additionalProperties": {"$ref": "#/$defs/o"}},
    # allOf of if/then: a product minimized as it grows
    {"allOf": [{"if": {"properties": {"k": {"const": "a"}}},
                "then": {"properties": {"v": {"type": "integer"}}}},
               {"if": {"properties": {"k": {"const": "b"}}}, "then": {"required": ["v"]}},
               {"if": {"properties": {"k": {"const": "c"}}},
                "else": {"not": {"required": ["c"]}}}]},
    # draft-7 "a excludes b" dependencies: a rule over the members (declared), else if/then
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
     "properties": {"a": {}, "b": {}, "c": {}},
     "dependencies": {"a": {"not": {"required": ["b"]}},
                      "c": {"description": "x", "not": {"required": ["a", "b"]}}}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"type": "integer"}},
     "dependencies": {"a": {"not": {"required": ["b"]}}, "b": {"not": {"required": ["c"]}}}},
    # oneOf/anyOf that only require members: a rule over the members (required_choices)
    {"type": "object", "properties": {"a": {"type": "integer"}},
     "oneOf": [{"required": ["a", "b"]}, {"description": "x", "required": ["a", "c"]}]},
    {"properties": {"a": {}}, "anyOf": [{"required": ["a"]}, {"required": ["b", "c"]}]},
    {"properties": {"a": {}}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"type": ["object", "null", "integer"], "properties": {"a": {}},
     "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"type": ["object", "null"], "properties": {"b": {}}, "oneOf": [{"required": ["b"]}]},
    {"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": False,
     "oneOf": [{"required": ["a"]}, {"required": ["c"]}, {"required": []}]},
    {"type": "object", "minProperties": 2, "dependentRequired": {"b": ["c"]},
     "anyOf": [{"required": ["b"]}, {"required": ["k"]}], "oneOf": [{"required": ["a"]}]},
    # a `not` of a required-only condition: the same rule, its final states flipped
    {"properties": {"a": {}, "b": {}}, "not": {"required": ["a"]}},
    {"type": ["object", "integer"], "properties": {"a": {}, "b": {}},
     "not": {"allOf": [{"required": ["a"]}, {"required": ["b"]}]}},
    {"properties": {"a": {}, "b": {}, "c": {}},
     "not": {"anyOf": [{"required": ["a", "c"]}, {"title": "x", "required": ["b"]}]}},
    {"properties": {"a": {}, "b": {}}, "not": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}},
    {"properties": {"a": {}, "k": {}}, "not": {"oneOf": [{"required": ["a"]}]}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False,
     "not": {"required": ["b"]}},
    # if/then/else, `not` and dependent schemas of an object node, merged with its own object
    # (json_branches): members a branch does not name keep the node's schema
    {"type": "object", "properties": {"k": {"enum": ["a", "b", "c"]}, "v": {"type": "integer"}},
     "if": {"properties": {"k": {"const": "a"}}, "required": ["k"]}, "then": {"required": ["v"]},
     "else": {"properties": {"v": False}}},
    {"type": "object", "properties": {"k": {}, "v": {}}, "additionalProperties": False,
     "allOf": [{"if": {"properties": {"k": {"const": "b"}}, "required": ["k"]},
                "then": {"required": ["v"], "oneOf": [{"required": ["k"]}, {"required": ["c"]}]}},
               {"if": {"properties": {"k": {"const": "c"}}}, "then": {"properties": {"v": False}}},
               {"type": "object", "minProperties": 1}]},
    {"type": "object", "properties": {"a": {"type": "integer"}, "k": {}},
     "not": {"properties": {"k": {"const": "a"}}, "required": ["k"]}},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"},
     "if": {"properties": {"b": {"const": 2}}, "required": ["b"]}, "then": {"required": ["a"]},
     "else": {"properties": {"c": {"type": "null"}}, "additionalProperties": False}},
    {"type": "object", "dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}},
     "properties": {"a": {}, "b": {}}},
    {"type": "object", "properties": {"k": {"type": "string"}, "a": {}},
     "if": {"type": "string"}, "then": False, "else": {"minProperties": 1, "maxProperties": 1}},
    {"type": "object", "patternProperties": {"^v": {"type": "integer"}}, "properties": {"k": {}},
     "if": {"properties": {"k": {"const": "c"}}, "required": ["k"]},
     "then": {"oneOf": [{"required": ["v"]}, {"required": ["k", "a"]}]},
     "else": {"if": {"required": ["a"]}, "then": {"properties": {"a": {"type": "integer"}}}}},
    {"type": "object", "properties": {"k": {}, "v": {}, "a": {}},
     "if": {"anyOf": [{"required": ["v"]}, {"required": ["b"]}]},
     "then": {"anyOf": [{"required": ["k"]}, {"required": ["c"]}]}, "else": {"required": ["a"]}},
    {"type": "object", "minProperties": 1, "maxProperties": 3, "properties": {"a": {}, "b": {}},
     "if": {"minProperties": 2, "maxProperties": 2}, "then": {"required": ["a"]}},
    # an allOf of object schemas: one merged object (json_branches.merged_all_of)
    {"$defs": {"base": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}},
     "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"b": {"type": "integer"}, "a": {"maximum": 2}}}]},
    {"type": "object", "properties": {"k": {}}, "additionalProperties": False,
     "allOf": [{"required": ["k"]}, {"properties": {"k": {"type": "string"}, "v": {}}},
               {"anyOf": [{"minProperties": 1}]}]},
    {"allOf": [{"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}},
               {"properties": {"b": {"type": "integer"}, "c": {}}, "additionalProperties": False}]},
    {"allOf": [{"type": "object", "patternProperties": {"^[ab]$": {"type": "integer"}}, "properties": {"k": {}}},
               {"properties": {"a": {"minimum": 2}, "c": {"type": "null"}}, "maxProperties": 2}]},
    {"allOf": [{"type": "object", "required": ["k"]}, {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
               {"properties": {"k": {"enum": ["a", "c"]}}}]},
    {"allOf": [{"type": "object", "patternProperties": {"^a": {"type": "integer"}},
                "anyOf": [{"required": ["a"]}, {"required": ["k"]}]}, {"properties": {"k": {"type": "string"}}}]},
    # an upper bound of 0 (pynini.closure(f, 0, 0) has no upper bound)
    {"maxItems": 0},
    {"properties": {"a": {"maxItems": 0}}},
    {"type": "string", "maxLength": 0},
    {"type": "object", "maxProperties": 0},
    {"type": "array", "contains": {"type": "integer"}, "minContains": 0, "maxContains": 0},
    {"type": "array", "minItems": 2, "maxItems": 1},
    # an enum's strings escaped together, beside other values
    {"enum": ["a", "ab", "abc", "é", 'q"x', "a\nb", 1, None, [1, 2]]},
    True,
    False,
    {},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: json.dumps(s)[:60])
def test_accepts_exactly_the_valid_instances(schema):
    fst = json_schema_fst(schema, max_depth=3)
    for value in CANDIDATES:
        assert accepts(fst, dumps(schema, value)) == valid(schema, value), (schema, value)


def test_a_required_only_not_does_not_cut_the_nesting():
    """A `not` of `required`s is a rule over the object's members: values nested deeper than
    ``max_depth`` below it stay (as a difference from every value to ``max_depth`` it cut them:
    JSONSchemaBench o65671's bid requests)."""
    schema = {"type": "object", "properties": {"site": {}, "app": {},
                                               "imp": {"type": "array", "items": {"type": "object"}}},
              "not": {"allOf": [{"required": ["site"]}, {"required": ["app"]}]}}
    fst = json_schema_fst(schema, max_depth=3)
    deep = {"imp": [{"a": {"b": {}}}], "site": {}}  # 5 levels: the items' free objects 3 each
    for value, ok in ((deep, True), ({"site": {}, "app": {}}, False), ({"app": 1, "site": 2}, False),
                      ({"imp": []}, True), ([1], False)):  # (`required` holds on an array: banned)
        assert valid(schema, value) is ok
        assert accepts(fst, dumps(schema, value)) is ok, value


def test_an_if_inside_an_object_does_not_cut_its_members_nesting():
    """`if`/`then`/`else`, `not`, dependent schemas and `allOf` object branches of an object node
    are taken inside its own object: values nested deeper than ``max_depth`` in its declared
    members stay (as combinators met with the object, the branches' free members cut them:
    semgrep's join rules, o29389's `allOf` of a `$ref` and its own members)."""
    deep_item = {"type": "array", "items": {"type": "object", "properties": {
        "b": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "integer"}}}}}}}
    base = {"type": "object", "properties": {"k": {"enum": ["x", "y"]}, "v": deep_item, "w": {}}}
    deep = {"k": "x", "v": [{"b": [{"c": 1}]}]}  # 5 levels, all declared
    cases = [
        ({"if": {"properties": {"k": {"const": "x"}}, "required": ["k"]}, "then": {"required": ["v"]},
          "else": {"properties": {"v": False}}}, [(deep, True), ({"k": "y", "v": []}, False), ({"k": "x"}, False)]),
        ({"allOf": [{"if": {"properties": {"k": {"const": "y"}}}, "then": {"required": ["w"]}}]},
         [(deep, True), ({**deep, "k": "y"}, False), ({**deep, "k": "y", "w": 0}, True)]),
        ({"not": {"properties": {"k": {"const": "y"}}, "required": ["k"]}}, [(deep, True), ({**deep, "k": "y"}, False)]),
        ({"dependentSchemas": {"k": {"required": ["v"]}}}, [(deep, True), ({"k": "x"}, False)]),
        ({"allOf": [{"required": ["v"]}, {"properties": {"w": {"type": "null"}}}]},
         [(deep, True), ({**deep, "w": 1}, False), ({"k": "x"}, False)]),
    ]
    for extra, values in cases:
        schema = {**base, **extra}
        fst = json_schema_fst(schema, max_depth=3)
        for value, ok in values:
            assert valid(schema, value) is ok
            assert accepts(fst, dumps(schema, value)) is ok, (extra, value)


@pytest.mark.parametrize("extra, names", [(False, ["a", "va"]), ({"type": "string"}, ["a", "b"])])
def test_an_all_of_branch_adding_members_beside_patterns(extra, names):
    """A member an `allOf` branch adds beside another's `patternProperties` takes the patterns'
    schemas where they match and the `additionalProperties` only where none does."""
    schema = {"allOf": [{"type": "object", "patternProperties": {"^v": {"type": "integer"}},
                         "additionalProperties": extra}, {"properties": {n: {} for n in names}}]}
    fst = json_schema_fst(schema, max_depth=3)
    for value in ({"va": 1}, {"va": "x"}, {"a": 1}, {"a": "x"}, {"b": "x"}, {"v": 2, "a": "y"}, {}):
        assert accepts(fst, dumps(schema, value)) == valid(schema, value), value


def test_an_all_of_that_would_expose_large_members_is_met_as_before(monkeypatch):
    """Past `MAX_EXPOSED_NODES` (the declared members one branch leaves free, counted in schema
    objects, where they hold values as deep as the free side's values nest) the branches are met
    as separate objects again: the deep value is cut there."""
    from fstbeam.compiler.structured.json_schema import branches as json_branches

    item = {"type": "object", "properties": {"b": {"type": "array", "items": {"type": "object"}}}}
    schema = {"allOf": [{"type": "object", "properties": {"a": {"type": "array", "items": item}}},
                        {"properties": {"k": {"type": "integer"}}}]}
    deep = {"a": [{"b": [{"c": {}}]}], "k": 1}  # 5 levels, the last one free
    assert valid(schema, deep)
    assert accepts(json_schema_fst(schema, max_depth=3), dumps(schema, deep))
    monkeypatch.setattr(json_branches, "MAX_EXPOSED_NODES", 3)  # `a` and `k` hold more
    assert not accepts(json_schema_fst(schema, max_depth=3), dumps(schema, deep))


def test_integer_bounds_exhaustive_with_signs_and_zero():
    for lo, hi in ((-12, 7), (0, 0), (-3, -1), (9, 101)):
        schema = {"type": "integer", "minimum": lo, "maximum": hi}
        fst = json_schema_fst(schema)
        for v in range(-130, 130):
            assert accepts(fst, str(v)) == (lo <= v <= hi), (lo, hi, v)
        assert accepts(fst, "-0") == (lo <= 0 <= hi)
        assert not accepts(fst, "01")


def test_decimal_bounds_against_decimal_arithmetic():
    from decimal import Decimal

    schema = {"type": "number", "exclusiveMinimum": -1.25, "maximum": 3.5}
    fst = json_schema_fst(schema)
    texts = [f"{i / 100:.2f}" for i in range(-400, 500, 7)] + ["-1.25", "-1.250", "3.5", "3.50"]
    for t in texts:
        assert accepts(fst, t) == (Decimal("-1.25") < Decimal(t) <= Decimal("3.5")), t


def test_string_escapes_count_as_one_code_point():
    fst = json_schema_fst({"type": "string", "maxLength": 2})
    assert accepts(fst, '"\\n\\u0041"')
    assert accepts(fst, '"é\\""')
    assert not accepts(fst, '"abc"')
    assert not accepts(fst, '"\n"')  # raw control character
    assert not accepts(fst, '"\\x"')


@pytest.mark.parametrize("fmt,good,bad", [
    ("date", ["2024-02-29", "1999-12-31", "2000-02-29", "0000-02-29"],
     ["2024-13-01", "2024-04-31", "24-01-01", "2023-02-29", "1900-02-29"]),
    ("date-time", ["2024-01-01T10:00:00Z", "2024-01-01t10:00:00.5+01:00"],
     ["2024-01-01 10:00:00", "2024-01-01T25:00:00Z"]),
    ("ipv4", ["127.0.0.1", "255.255.255.255"], ["256.1.1.1", "01.2.3.4", "1.2.3"]),
    ("ipv6", ["::1", "fe80::1:2", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4"], ["1::2::3", "12345::",
                                                                 "1::2:3:4:5:6:7:8:9"]),
    ("uuid", ["123e4567-e89b-12d3-a456-426614174000"], ["123e4567e89b12d3a456426614174000"]),
    ("email", ["a.b@example.com"], ["a@", "@b.c", "a..b@c.d"]),
    ("hostname", ["example.com", "a-b.c"], ["-a.com", "a_b.com"]),
    ("email", ['"joe bloggs"@example.com', '"a\\"b"@c.d', "joe@[IPv6:::1]", "joe@[127.0.0.1]"],
     ['"a"b"@c.d', "joe@[127.0.0.300]", "joe@[IPv6:1:x]", "joe@invalid=domain.com"]),
    ("uri", ["https://example.com/a?b=c#d", "ldap://[2001:db8::7]/c=GB?one", "http://[v1.fe]/",
             "https://u:p@h:8080/p", "urn:a:b", "tel:+1-816", "a:"],
     ["no scheme", "//x", "https://[@example.org/t", "mailto:a[b", "http://a%zz",
      "http://a/b#c#d", "https://a/foo bar", "bar,baz:foo", "http://[::1",
      "http://[::g]/"]),
    ("uri-reference", ["//foo.bar/?q#f", "/abc", "#f", "abc", "", "./a:b", "x@y", "http://a"],
     ["a:b[c", "http]//a", "a b", ":a", "#frag\\ment"]),
    # RFC 3339 appendix A: a unit is left out only at the end of its run
    ("duration", ["P4DT12H30M5S", "P4Y", "PT0S", "P1Y2M", "PT1H5M", "PT5M6S", "P2W", "P1DT12H"],
     ["P1Y2D", "PT1H5S", "P2D1Y", "P1D2H", "PT", "P1YT", "P1Y2W", "P1", "PT1D"]),
    ("x-unknown-format", ["anything at all"], []),
])
def test_formats(fmt, good, bad):
    fst = json_schema_fst({"type": "string", "format": fmt})
    for s in good:
        assert accepts(fst, json.dumps(s)), s
    for s in bad:
        assert not accepts(fst, json.dumps(s)), s


def test_date_days_follow_the_calendar():
    """Every day of February and of a 31-day month in years around every leap rule (centuries
    divisible by 400 or not, year 0), against Python's calendar (the Gregorian rule, which
    RFC 3339 appendix C states), in date and date-time."""
    import calendar

    def leap(y: int) -> bool:  # (`calendar.isleap` takes year 0 as the proleptic leap year it is)
        return calendar.isleap(y)
    date = json_schema_fst({"type": "string", "format": "date"})
    stamp = json_schema_fst({"type": "string", "format": "date-time"})
    years = [0, 1, 4, 96, 100, 104, 200, 400, 1600, 1700, 1900, 1996, 1999, 2000, 2023, 2024, 2100, 2400, 9996, 9999]
    for y in years:
        for m, last in ((2, 29 if leap(y) else 28), (1, 31), (4, 30)):
            for d in range(27, 33):
                text = f"{y:04d}-{m:02d}-{d:02d}"
                assert accepts(date, json.dumps(text)) == (d <= last), text
                assert accepts(stamp, json.dumps(text + "T00:00:00Z")) == (d <= last), text


def test_flexible_whitespace():
    schema = {"type": "object", "properties": {"a": {"type": "array"}}}
    value = {"a": [1, {"b": None}]}
    compact = json_schema_fst(schema)
    loose = json_schema_fst(schema, whitespace="flexible")
    pretty = json.dumps(value, indent=1)
    assert not accepts(compact, pretty)
    assert accepts(loose, pretty)
    assert accepts(loose, dumps(schema, value))
    assert not accepts(loose, " " * 20 + dumps(schema, value))


def test_property_order_declared_first_then_others():
    schema = {"properties": {"b": {}, "a": {}}}
    fst = json_schema_fst(schema)
    assert dumps(schema, {"z": 1, "a": 2, "b": 3}) == '{"b":3,"a":2,"z":1}'
    assert accepts(fst, '{"b":3,"a":2,"z":1}')
    assert not accepts(fst, '{"a":2,"b":3}')


def test_depth_limit_for_free_json():
    fst = json_schema_fst({}, max_depth=2)
    assert accepts(fst, "[[1]]")
    assert not accepts(fst, "[[[1]]]")


def test_string_words_limit_free_text_only():
    words = pynini.accep("ok", token_type="byte") | pynini.accep("fine", token_type="byte")
    schema = {"type": "object", "properties": {"s": {"type": "string"},
                                               "d": {"type": "string", "format": "date"}}}
    fst = json_schema_fst(schema, string_words=words)
    assert accepts(fst, '{"s":"fine","d":"2024-01-01"}')
    assert not accepts(fst, '{"s":"bad"}')


@pytest.mark.parametrize("schema,keyword,path", [
    ({"properties": {"a": {"anyOf": [{"required": ["x"]}], "if": {"required": ["y"]}, "unevaluatedProperties": False}}},
     "unevaluatedProperties", "/properties/a/unevaluatedProperties"),
    ({"type": "strin"}, "type", "/type"),
    ({"type": "number", "multipleOf": 0.0000001234567}, "multipleOf", None),
    ({"properties": {"a": {"const": "x\u0000"}}}, "const", "/properties/a/const"),
    ({"properties": {"a": {"enum": ["x\u0000", "y"]}}}, "enum", "/properties/a/enum"),
])
def test_refusals_name_keyword_and_path(schema, keyword, path):
    with pytest.raises(SpecError) as info:
        json_schema_fst(schema)
    assert keyword in str(info.value)
    if path is not None:
        assert isinstance(info.value, UnsupportedSchema)
        assert info.value.path == path
        assert info.value.keyword == keyword


def test_remote_ref_is_refused():
    with pytest.raises(SpecError, match="outside the schema"):
        json_schema_fst({"$ref": "http://example.com/s.json"})


def test_json_text_schema_and_bad_options():
    assert accepts(json_schema_fst('{"type": "boolean"}'), "true")
    with pytest.raises(SpecError, match="not valid JSON"):
        json_schema_fst("{nope")
    with pytest.raises(SpecError, match="whitespace"):
        json_schema_fst({}, whitespace="pretty")


def test_disjoint_by_a_not_enum_of_the_other_names():
    """`disjoint` proves a listed value apart from a `not` that names it (and only then): the
    oneOf schema above checks that the compiled language stays exact."""
    from fstbeam.compiler.structured.json_schema.disjoint import disjoint
    from fstbeam.compiler.structured.json_schema.location import Resolver

    res = Resolver({}, "t")
    others = {"type": "string", "not": {"enum": ["a", "b"]}}
    assert disjoint({"enum": ["a"]}, others, res) and disjoint(others, {"const": "b"}, res)
    assert not disjoint({"enum": ["a", "c"]}, others, res)  # "c" is valid against both
    assert not disjoint({"const": 1}, {"not": {"enum": [1.0]}}, res)  # numbers: the automata
    assert not disjoint({"const": "a"}, {"not": {"enum": ["a"], "minLength": 5}}, res)
    for a, b in (({"enum": ["a"]}, others), ({"enum": ["a", "c"]}, others),
                 ({"const": "a"}, {"not": {"enum": ["a"], "minLength": 5}})):
        both = [v for v in ("a", "b", "c", 1) if valid(a, v) and valid(b, v)]
        assert bool(both) != disjoint(a, b, res)  # jsonschema agrees


@pytest.mark.parametrize("node, enforced", [
    ({"pattern": "[a-z]+", "maxLength": 65}, False),  # unbounded pattern, past the limit
    ({"format": "email", "maxLength": 100}, False),
    ({"pattern": "[a-z]+", "maxLength": 64}, True),  # at the limit: counted
    ({"pattern": "^[a-z]{1,100}$", "maxLength": 70}, True),  # a bounded pattern: counted
    ({"maxLength": 100}, True),  # a free string's count: counted
])
def test_a_long_count_beside_an_unbounded_pattern_is_not_enforced(node, enforced, caplog):
    """Past `MAX_PATTERNED_LENGTH` beside a pattern or format with unbounded strings, maxLength is
    a documented approximation (a WARNING names its path); elsewhere it is exact."""
    schema = {"type": "object", "properties": {"s": {"type": "string", **node}}}
    with caplog.at_level(logging.WARNING, logger="fstbeam"):
        fst = json_schema_fst(schema)
    warned = any("maxLength" in r.getMessage() and "/properties/s" in r.getMessage() for r in caplog.records)
    assert warned is not enforced
    n = node["maxLength"]
    user = "a" * (n - 12) if "format" in node else "a" * n
    text = f"{user}@example.com" if "format" in node else user
    assert len(text) == n and valid(schema, {"s": text})
    assert accepts(fst, dumps(schema, {"s": text}))
    assert accepts(fst, dumps(schema, {"s": text + "a"})) is not enforced
    assert valid(schema, {"s": text + "a"}) is False
