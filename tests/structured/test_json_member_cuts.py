"""`allOf` branches met apart (not merged into one object) build a member that another branch
leaves free only as deep as that branch's free value nests (`Unrolling.cut_members`): the
product keeps no more of it. The language is the one built without the bound (the two minimal
DFAs are equivalent), the instances `jsonschema` validates within the depth are accepted, and
the operands of the products are smaller (travis: 13.5 M arcs built for the root's own members,
1.8 M kept)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pynini
import pytest

jsonschema = pytest.importorskip("jsonschema")

from fstbeam.compiler.structured.json_schema import branches as jb  # noqa: E402
from fstbeam.compiler.structured.json_schema import schema as js  # noqa: E402
from fstbeam.compiler.structured.json_schema.location import order_instance  # noqa: E402
from fstbeam.compiler.structured.json_schema.refs import Unrolling  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import accepts  # noqa: E402

DEEP = {"type": "object", "properties": {"list": {"type": "array", "items": {
    "type": "object", "properties": {"x": {"type": "array", "items": {"type": "object", "properties": {
        "y": {"type": "array", "items": {"type": "integer"}}}}}}}}}}
BASE = {"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}}

SCHEMAS = {
    # the root's own members beside a `$ref` to a plain object (travis's shape)
    "ref beside own": {"$defs": {"base": BASE}, "allOf": [
        {"$ref": "#/$defs/base"}, {"type": "object", "properties": {"deep": DEEP, "name": {"maxLength": 3}}}]},
    # the node's own object keywords as the plain side, branches with combinators inside
    "own object": {"type": "object", "properties": {"size": {"type": "integer"}}, "allOf": [
        {"properties": {"deep": {"not": DEEP}, "alt": {"oneOf": [DEEP, {"type": "array"}]}}},
        {"properties": {"cond": {"if": {"type": "object"}, "then": DEEP, "else": {"type": "string"}}}}]},
    # free values (`{}`, `{"type": "object"}`) and enums of nested values inside the bounded member
    "free inside": {"allOf": [BASE, {"properties": {"any": {}, "obj": {"type": "object"},
                                                     "lit": {"enum": [[[[[1]]]], {"a": {"b": {"c": {}}}}, 2]}}}]},
    # recursion inside the bounded member
    "recursive": {"$defs": {"tree": {"type": "object", "properties": {"kids": {
        "type": "array", "items": {"$ref": "#/$defs/tree"}}, "v": {"type": "integer"}}}},
        "allOf": [BASE, {"properties": {"tree": {"$ref": "#/$defs/tree"}}}]},
    # a side with an `additionalProperties` schema is not plain: its members are not bounded by it
    "not plain": {"allOf": [{"type": "object", "properties": {"size": {}}, "additionalProperties": {"type": "array"}},
                            {"properties": {"deep": DEEP, "size": {"type": "integer"}}}]},
}

CANDIDATES = [
    {}, {"name": "ab"}, {"name": "abcd"}, {"size": 1, "name": "x"}, {"size": "1"},
    {"deep": {"list": []}}, {"deep": {"list": [{"x": []}]}}, {"deep": {"list": [{"x": [{"y": [1]}]}]}},
    {"deep": {"list": [{"x": [{"y": ["1"]}]}]}}, {"deep": 1}, {"alt": []}, {"alt": {"list": [{}]}},
    {"cond": "s"}, {"cond": {"list": [{"x": [{}]}]}}, {"cond": 2}, {"any": [[[1]]]}, {"any": [[[[1]]]]},
    {"obj": {"a": {"b": {"c": 1}}}}, {"lit": 2}, {"lit": [[[[1]]]]}, {"lit": {"a": {"b": {"c": {}}}}},
    {"tree": {"kids": [{"kids": [{"v": 1}]}]}}, {"tree": {"kids": [{"v": "x"}]}}, {"size": [1]},
]


def _nesting(value) -> int:
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    return 0


def _uncut(monkeypatch) -> None:
    monkeypatch.setattr(jb, "free_elsewhere", lambda node, resolve, path: [set()] * (1 + len(node["allOf"])))


def _apart(monkeypatch) -> None:
    monkeypatch.setattr(jb, "MAX_EXPOSED_NODES", 0)  # every allOf met as separate objects


@pytest.mark.parametrize("name", list(SCHEMAS))
@pytest.mark.parametrize("max_depth", [1, 2, 3, None])
def test_the_bound_keeps_the_language(name, max_depth, monkeypatch):
    schema = SCHEMAS[name]
    _apart(monkeypatch)
    cut = js.json_schema_fst(schema, max_depth=max_depth)
    _uncut(monkeypatch)
    whole = js.json_schema_fst(schema, max_depth=max_depth)
    assert cut.num_states() == whole.num_states()
    assert pynini.equivalent(cut, whole)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_instances_within_the_depth_as_jsonschema_says(name, monkeypatch):
    schema = SCHEMAS[name]
    _apart(monkeypatch)
    fst = js.json_schema_fst(schema, max_depth=3)
    for value in CANDIDATES:
        text = json.dumps(order_instance(schema, value), separators=(",", ":"))
        ok = jsonschema.validators.validator_for(schema)(schema).is_valid(value)
        if _nesting(value) <= 3:  # (deeper: cut by the free side, as without the bound)
            assert accepts(fst, text) == ok, (name, value)
        elif not ok:
            assert not accepts(fst, text), (name, value)


def _operands(schema, monkeypatch, max_depth=3) -> tuple[list[int], pynini.Fst]:
    """The states of every operand of the compile's products, and the automaton."""
    seen: list[int] = []
    meet = js.SchemaCompiler.meet

    def recording(self, a, b):
        seen.extend((a.num_states(), b.num_states()))
        return meet(self, a, b)

    monkeypatch.setattr(js.SchemaCompiler, "meet", recording)
    fst = js.json_schema_fst(schema, max_depth=max_depth)
    monkeypatch.setattr(js.SchemaCompiler, "meet", meet)
    return seen, fst


def test_the_bound_shrinks_the_operands(monkeypatch):
    schema = {"allOf": [BASE, {"properties": {f"deep{i}": DEEP for i in range(4)}}]}
    _apart(monkeypatch)
    cut = max(_operands(schema, monkeypatch)[0])
    _uncut(monkeypatch)
    whole = max(_operands(schema, monkeypatch)[0])
    assert cut < whole / 2, (cut, whole)


def test_free_elsewhere_names_only_members_a_plain_side_leaves_free():
    def resolve(ref, path):
        return BASE

    node = {"allOf": [{"$ref": "#/b"}, {"properties": {"name": {}, "deep": {}}},
                      {"properties": {"x": {}}, "additionalProperties": False}]}
    # the base leaves `deep` and `x` free, the second branch `size` and `x`; the third frees
    # nothing (additionalProperties false); the node has no object keywords
    assert jb.free_elsewhere(node, resolve, "") == [set(), {"size"}, {"deep"}, {"x"}]
    node["allOf"][1]["additionalProperties"] = {"type": "string"}  # (not free: bounds nothing)
    assert jb.free_elsewhere(node, resolve, "") == [set(), set(), {"deep"}, {"x"}]


def test_member_bounds_apply_one_level_down_only():
    outer = Unrolling(3).cut_members({"a": 2})
    assert outer.inside("a").cut == 2 and outer.inside("b").cut is None and outer.inside().cut is None
    inner = outer.inside("a")
    assert inner.member_cuts == () and inner.inside("a").cut == 1 and inner.inside().inside().cut == 0
    assert inner.inside().inside().scalars_only and not inner.inside().scalars_only
    assert inner.free_depth(3) == 2 and Unrolling(3).free_depth(3) == 3
    entered = outer.enter(7)
    assert entered is not None and entered.member_cuts == outer.member_cuts


def test_members_exposed_only_above_the_free_depth_are_merged(monkeypatch):
    """The eslintrc shape: `rules` is an `allOf` of rule groups, each declaring its own rules and
    leaving the others' free; every rule is a shallow `$ref` (525 schema nodes in all, past
    `MAX_EXPOSED_NODES`, but none as deep as the free values nest). Merged, the language is the one
    met apart (nothing is cut there), and no product of whole groups is built."""
    rule = {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 2}, {"enum": ["off", "on"]}, {"type": "array"}]}
    groups = [{"type": "object", "properties": {f"g{g}r{i}": {"$ref": "#/$defs/rule"} for i in range(35)}}
              for g in range(3)]
    schema = {"$defs": {"rule": rule}, "type": "object", "allOf": groups}
    merged_operands, merged = _operands(schema, monkeypatch, max_depth=2)
    monkeypatch.setattr(jb, "MAX_EXPOSED_NODES", -1)  # met apart
    apart_operands, apart = _operands(schema, monkeypatch, max_depth=2)
    assert merged.num_states() == apart.num_states() and pynini.equivalent(merged, apart)
    assert sum(merged_operands) < sum(apart_operands) / 4, (sum(merged_operands), sum(apart_operands))
    for value in ({"g0r1": 2, "g2r34": [[1]]}, {"g1r0": 3}, {"g0r0": "off", "x": {}}):
        text = json.dumps(order_instance(schema, value), separators=(",", ":"))
        assert accepts(merged, text) == jsonschema.validators.validator_for(schema)(schema).is_valid(value)
