"""What `max_depth` cuts, against `jsonschema`: recursion counts the instance levels that enter
a recursive definition (not `$ref` hops), and a finite declared structure is never cut. Each schema reproduces a valid
JSONSchemaBench instance that an earlier rule rejected."""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pynini
import pytest

jsonschema = pytest.importorskip("jsonschema")

from fstbeam.compiler.structured.json_schema.location import order_instance  # noqa: E402
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import accepts  # noqa: E402


def check(schema, instances, max_depth=4):
    """Every instance accepted exactly when `jsonschema` says it is valid; returns the
    verdicts (so a test can also require that the valid ones are there)."""
    fst = json_schema_fst(schema, max_depth=max_depth)
    cls = jsonschema.validators.validator_for(schema)
    out = []
    for value in instances:
        text = json.dumps(order_instance(schema, value), separators=(",", ":"),
                          ensure_ascii=False)
        ok = cls(schema).is_valid(value)
        assert accepts(fst, text) == ok, (value, ok)
        out.append(ok)
    return out


# a cycle through three definitions (JSONSchemaBench Github_medium o55244): a test group
# holds cases, each a test or a group
GROUPS = {
    "$ref": "#/definitions/data",
    "definitions": {
        "data": {"type": "object", "properties": {"cases": {"$ref": "#/definitions/group"}},
                 "required": ["cases"], "additionalProperties": False},
        "group": {"type": "array", "items": {"$ref": "#/definitions/item"}, "minItems": 1},
        "item": {"oneOf": [{"$ref": "#/definitions/test"}, {"$ref": "#/definitions/sub"}]},
        "test": {"type": "object", "properties": {"p": {"type": "integer"}}, "required": ["p"]},
        "sub": {"type": "object", "properties": {"cases": {"$ref": "#/definitions/group"}},
                "required": ["cases"], "additionalProperties": False},
    },
}


def test_recursion_counts_instance_levels_not_ref_hops():
    # each level of cases is 2 instance levels (the array, then its item): the `$ref`s from
    # `group` to `item` to `sub` at one place are not counted
    one = {"cases": [{"p": 1}]}
    two = {"cases": [{"p": 1}, {"cases": [{"p": 2}]}]}
    three = {"cases": [{"cases": [{"cases": [{"p": 3}]}]}]}
    bad = [{"cases": []}, {"cases": [{"cases": [{"q": 1}]}]}, {"cases": [{"p": "x"}]}]
    assert check(GROUPS, [one, two, *bad], max_depth=4) == [True] * 2 + [False] * 3
    # deeper than max_depth levels: cut (the documented bound), never accepted wrongly
    text = json.dumps(three, separators=(",", ":"))
    assert not accepts(json_schema_fst(GROUPS, max_depth=4), text)
    assert check(GROUPS, [three, *bad], max_depth=6) == [True] + [False] * 3


# hayson's shape: a value is one of several kinds; a grid's meta is a dict (allOf), whose
# members are values again: four `$ref`s before the first nested value
HAYSON = {
    "anyOf": [{"$ref": "#/definitions/val"}],
    "definitions": {
        "val": {"oneOf": [{"type": "number"}, {"$ref": "#/definitions/dict"},
                          {"$ref": "#/definitions/grid"}]},
        "dict": {"type": "object", "properties": {"_kind": {"enum": ["dict"]}},
                 "additionalProperties": False,
                 "patternProperties": {"^[a-z]": {"$ref": "#/definitions/val"}}},
        "meta": {"allOf": [{"$ref": "#/definitions/dict"}], "required": ["ver"]},
        "grid": {"type": "object", "additionalProperties": False, "required": ["_kind", "meta"],
                 "properties": {"_kind": {"enum": ["grid"]},
                                "meta": {"$ref": "#/definitions/meta"},
                                "rows": {"type": "array",
                                         "items": {"$ref": "#/definitions/dict"}}}},
    },
}


def test_a_cycle_through_allof_and_a_discriminated_oneof():
    grid = {"_kind": "grid", "meta": {"_kind": "dict", "ver": 3},
            "rows": [{"_kind": "dict", "c": 1, "d": {"_kind": "dict", "e": 2}}]}
    bad = [{"_kind": "grid", "meta": {"_kind": "dict"}},  # meta without ver
           {"_kind": "grid", "meta": {"ver": 1}, "rows": [{"C": 1}]},  # key not ^[a-z]
           {"_kind": "dict", "a": {"_kind": "grid"}}]
    assert check(HAYSON, [grid, {"a": 1, "b": {"c": 2}}, 5, *bad], max_depth=4) == [
        True] * 3 + [False] * 3


def test_a_level_that_would_outgrow_the_state_limit_is_not_unrolled(caplog):
    # each level copies the value into 7 places: the third level is predicted past a small
    # state limit and dropped, with a WARNING naming where
    wide = {"$ref": "#/$defs/v",
            "$defs": {"v": {"anyOf": [{"type": "integer"}, {
                "type": "object", "additionalProperties": False,
                "properties": {k: {"$ref": "#/$defs/v"} for k in "abcdefg"}}]}}}
    from fstbeam.compiler.structured.json_schema import schema as json_schema

    limit = json_schema.JSON_SCHEMA_DEFAULTS["max_states"]
    json_schema.JSON_SCHEMA_DEFAULTS["max_states"] = 20_000
    try:
        with caplog.at_level(logging.WARNING, logger="fstbeam"):
            fst = json_schema_fst(wide, max_depth=6)
    finally:
        json_schema.JSON_SCHEMA_DEFAULTS["max_states"] = limit
    assert "recursion at /$defs/v unrolled" in caplog.text
    assert accepts(fst, '{"a":{"b":1},"g":2}')
    assert not accepts(fst, '{"a":"x"}')


@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_a_nearly_empty_innermost_level_does_not_stop_the_unrolling(whitespace, caplog):
    # Github_medium o55244 with flexible whitespace: its innermost `group` level (no recursion
    # left) is 4 states and the next a few thousand, so the growth read from them (~800x here)
    # predicted millions of states for a level that takes a few thousand, and the default
    # rule's 4th level was dropped: the flexible automaton rejected what the compact one took
    from fstbeam.compiler.structured.json_schema import schema as json_schema

    two = {"cases": [{"p": 1}, {"cases": [{"p": 2}]}]}
    bad = [{"cases": []}, {"cases": [{"cases": [{"q": 1}]}]}]
    limit = json_schema.JSON_SCHEMA_DEFAULTS["max_states"]
    # a limit the levels stay far below, which the growth out of the innermost level (818x,
    # 2.7 million states predicted) passes 4x over with flexible whitespace
    json_schema.JSON_SCHEMA_DEFAULTS["max_states"] = 300_000
    try:
        with caplog.at_level(logging.INFO, logger="fstbeam"):
            fst = json_schema_fst(GROUPS, whitespace=whitespace)
    finally:
        json_schema.JSON_SCHEMA_DEFAULTS["max_states"] = limit
    assert "recursion unrolled 4 levels" in caplog.text
    assert "not 4" not in caplog.text
    assert verdicts(fst, GROUPS, [two, *bad]) == [(True, True), (False, False), (False, False)]


def test_declared_nesting_is_never_cut_free_values_nest_from_where_they_start():
    # six declared levels, then a free object: max_depth=1 bounds only the free object
    schema: dict = {"type": "object"}
    for key in "fedcba":
        schema = {"type": "object", "properties": {key: schema}, "required": [key]}

    def doc(inner):
        for key in "fedcba":
            inner = {key: inner}
        return inner

    assert check(schema, [doc({"x": 1}), doc({}), doc(1), {"a": 1}], max_depth=1) == [
        True, True, False, False]
    text = json.dumps(doc({"x": {"y": 1}}), separators=(",", ":"))  # the free object nests 2
    assert not accepts(json_schema_fst(schema, max_depth=1), text)
    assert accepts(json_schema_fst(schema, max_depth=2), text)
    assert accepts(json_schema_fst(schema, max_depth=4), json.dumps(doc({"x": {"y": {"z": [1]}}}),
                                                                     separators=(",", ":")))  # 4 levels


@pytest.mark.parametrize("meta,ignored", [("http://json-schema.org/draft-07/schema#", True),
                                          ("http://json-schema.org/draft-04/schema#", True),
                                          ("https://json-schema.org/draft/2020-12/schema", False)])
def test_keywords_beside_ref_are_ignored_up_to_draft_7(meta, ignored):
    # JSONSchemaBench briefcase (draft 7): `"secrettype": {"$ref": ..., "enum": ["key", "sas"]}`
    defs = {"p": {"properties": {"key": {"type": "string"}}}}
    enum = {"$schema": meta, "$defs": defs,
            "properties": {"s": {"$ref": "#/$defs/p", "enum": ["key", {"key": "sas"}]}}}
    assert check(enum, [{"s": {"key": "k"}}, {"s": {"key": 1}}, {"s": "key"}]) == [
        ignored, False, True]
    # two `oneOf` branches told apart only by an `enum` beside the `$ref`: the same branch in
    # draft 7, so nothing is valid (`disjoint` must not read the ignored enums)
    one_of = {"$schema": meta, "$defs": defs, "required": ["t"],
              "oneOf": [{"properties": {"t": {"$ref": "#/$defs/p", "enum": [1]}}},
                        {"properties": {"t": {"$ref": "#/$defs/p", "enum": [2]}}}]}
    assert check(one_of, [{"t": 1}, {"t": 3}, {"t": {}}]) == [not ignored, False, False]


# ---- the default rule (max_depth not given) -----------------------------------------------------
def nest(value, levels):
    for _ in range(levels):
        value = [value]
    return value


def verdicts(fst, schema, instances):
    """(accepted, valid per `jsonschema`) of each instance."""
    cls = jsonschema.validators.validator_for(schema)
    return [(accepts(fst, json.dumps(order_instance(schema, v), separators=(",", ":"))),
             cls(schema).is_valid(v)) for v in instances]


def test_default_free_values_nest_one_level_more_in_the_top_two_levels():
    # JSONSchemaBench Kubernetes kb_1143: a member written `{"type": "object"}` holds a document
    # nesting 4 levels; a free value further down, or one the schema does not write (an
    # undeclared member), keeps 3 in a small schema
    schema = {"type": "object",
              "properties": {"w": {}, "t": {"type": "object"},
                             "k": {"type": "object", "additionalProperties": False,
                                   "properties": {"x": {}}}}}
    good = [{"w": nest(1, 4)}, {"t": {"a": nest(1, 3)}}, {"k": {"x": nest(1, 3)}},
            {"e": nest(1, 3)}]
    cut = [{"w": nest(1, 5)}, {"k": {"x": nest(1, 4)}}, {"e": nest(1, 4)}]
    bad = [{"k": {"y": 1}}, {"t": 1}]
    default = json_schema_fst(schema)
    assert verdicts(default, schema, good + bad) == [(True, True)] * 4 + [(False, False)] * 2
    # past the bound: cut (valid for jsonschema, documented), never a wrong acceptance
    assert verdicts(default, schema, cut) == [(False, True)] * 3
    # a given max_depth is that depth everywhere, as before
    assert verdicts(json_schema_fst(schema, max_depth=3), schema, good[:2]) == [(False, True)] * 2
    assert verdicts(json_schema_fst(schema, max_depth=4), schema, cut) == [
        (False, True), (True, True), (True, True)]
    # the root value itself is in the top levels too (`{}`: any JSON nesting 4 levels)
    assert verdicts(json_schema_fst({}), {}, [nest(1, 4), nest(1, 5)]) == [(True, True), (False, True)]
    # a node with combinators keeps 3 for all its free values (its automata are multiplied)
    branches = {"anyOf": [schema, {"required": ["w"]}]}
    assert verdicts(json_schema_fst(branches), branches, [good[0], {"w": nest(1, 3)}, bad[0]]) == [
        (False, True), (True, True), (False, False)]


def test_default_every_top_free_value_nests_deeper_in_a_large_schema():
    # JSONSchemaBench Kubernetes kb_84 (44 declared properties): an undeclared member of the root
    # (a key written with a trailing space) holds 4 levels
    from fstbeam.compiler.structured.json_schema.schema import JSON_SCHEMA_DEFAULTS

    many = JSON_SCHEMA_DEFAULTS["top_free_properties"]
    schema = {"type": "object", "properties": {
        "m": {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(many)}}}}
    few = {**schema, "properties": {}}
    big, small = json_schema_fst(schema), json_schema_fst(few)
    extra4, extra5, deep4 = {"e": nest(1, 4)}, {"e": nest(1, 5)}, {"m": {"e": [nest(1, 3)]}}
    assert verdicts(big, schema, [extra4, extra5, deep4, {"m": {"p0": "x"}}]) == [
        (True, True), (False, True), (False, True), (False, False)]
    assert verdicts(small, few, [extra4, {"e": nest(1, 3)}]) == [(False, True), (True, True)]


def test_default_free_values_beside_a_word_list_keep_three_levels():
    # each level copies the word list's text automaton twice over: no extra level there
    from fstbeam.compiler.structured.json_schema.lexical import lit

    words = pynini.closure(lit("ab"), 1)
    fst = json_schema_fst({}, string_words=words)
    assert accepts(fst, json.dumps(nest("abab", 3)))
    assert not accepts(fst, json.dumps(nest("abab", 4)))
    assert not accepts(fst, json.dumps(nest("ba", 1)))


def test_default_recursion_takes_a_fourth_level_where_the_document_is_small(caplog):
    # JSONSchemaBench Github_medium o55244: a group inside a group is 4 instance levels
    two = {"cases": [{"p": 1}, {"cases": [{"p": 2}]}]}
    three = {"cases": [{"cases": [{"cases": [{"p": 3}]}]}]}
    bad = [{"cases": []}, {"cases": [{"cases": [{"q": 1}]}]}]
    assert verdicts(json_schema_fst(GROUPS), GROUPS, [two, three, *bad]) == [
        (True, True), (False, True), (False, False), (False, False)]
    assert verdicts(json_schema_fst(GROUPS, max_depth=3), GROUPS, [two]) == [(False, True)]
    # a document over the size budget at 3 levels keeps 3, said at INFO (the extra level is a bonus, not a promise)
    from fstbeam.compiler.structured.json_schema import schema as json_schema

    budget = json_schema.JSON_SCHEMA_DEFAULTS["deeper_recursion_states"]
    json_schema.JSON_SCHEMA_DEFAULTS["deeper_recursion_states"] = 10
    try:
        with caplog.at_level(logging.INFO, logger="fstbeam"):
            fst = json_schema_fst(GROUPS)
    finally:
        json_schema.JSON_SCHEMA_DEFAULTS["deeper_recursion_states"] = budget
    assert "recursion unrolled 3 levels, not 4" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # max_depth kept: no warning
    assert verdicts(fst, GROUPS, [{"cases": [{"p": 1}]}, two, *bad]) == [
        (True, True), (False, True), (False, False), (False, False)]
