"""A keyword the schema's declared draft does not define is ignored, as the specification says
and as that draft's validator does. The oracle is `jsonschema`'s validator for the declared
draft (`validator_for`), the one the decoder's check uses and that labels JSONSchemaBench."""
from __future__ import annotations

import json
import logging

import jsonschema
import pytest
from instance_walk import dfa_accepts
from regex_oracle import accepts

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.json_schema.location import order_instance
from fstbeam.compiler.structured.json_schema.reading import declared_draft, for_draft
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT6 = "http://json-schema.org/draft-06/schema#"
DRAFT7 = "http://json-schema.org/draft-07/schema#"


def _accepts(schema, instance) -> bool:
    return dfa_accepts(fst_to_dfa(json_schema_fst(schema)), schema, instance)


def _valid(schema, instance) -> bool:
    return jsonschema.validators.validator_for(schema)(schema).is_valid(instance)


ITEM = {"type": "object", "properties": {"kind": {"type": "string"}, "title": {"type": "string"}},
        "if": {"properties": {"kind": {"const": "action"}}}, "then": {"required": ["title"]}}
CASES = [
    # (schema without $schema, instances): each schema is tried under drafts 4, 6 and 7 and none
    ({"type": "array", "items": ITEM}, [[{"kind": "action"}], [{"kind": "action", "title": "t"}], [{"kind": "x"}]]),
    ({"type": "object", "properties": {"a": {"const": 1}}}, [{"a": 1}, {"a": 2}]),
    ({"type": "array", "contains": {"type": "integer"}}, [[1, "a"], ["a"]]),
    ({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}, "additionalProperties": {"type": "integer"}},
     [{"ab": 1}, {"A1": 2}]),
]


@pytest.mark.parametrize("meta", [DRAFT4, DRAFT6, DRAFT7, None], ids=["draft4", "draft6", "draft7", "latest"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_automaton_reads_a_schema_as_its_drafts_validator_does(meta, case):
    base, instances = CASES[case]
    schema = base if meta is None else {"$schema": meta, **base}
    verdicts = [(_accepts(schema, x), _valid(schema, x)) for x in instances]
    assert all(a == b for a, b in verdicts), verdicts
    assert len({b for _, b in verdicts}) > 1 or meta in (DRAFT4, DRAFT6)  # (the keyword decides somewhere)


def test_a_property_named_like_a_later_keyword_is_a_name_not_a_keyword():
    schema = {"$schema": DRAFT4, "type": "object", "properties": {"if": {"type": "integer"}, "const": {"enum": ["x"]}},
              "required": ["if"]}
    assert for_draft(schema) == (schema, [])
    assert _accepts(schema, {"if": 3, "const": "x"}) and not _accepts(schema, {"if": "3"})


def test_a_reference_into_a_left_out_keyword_still_resolves():
    schema = {"$schema": DRAFT4, "type": "object",
              "properties": {"a": {"$ref": "#/definitions/d/if"}},
              "definitions": {"d": {"if": {"type": "integer"}, "then": {"minimum": 5}}}}
    kept, dropped = for_draft(schema)
    assert dropped == [("then", "/definitions/d")]
    assert "if" in kept["definitions"]["d"]
    assert _accepts(schema, {"a": 1}) and not _accepts(schema, {"a": "x"})


def test_left_out_keywords_are_a_warning_naming_them_and_their_paths(caplog):
    schema = {"$schema": DRAFT4, "type": "array", "items": ITEM}
    with caplog.at_level(logging.WARNING, logger="fstbeam"):
        json_schema_fst(schema)
    text = caplog.text
    assert "if at /items is not a keyword of the schema's draft" in text and "then at /items" in text
    assert declared_draft(schema) == 4 and declared_draft({"$schema": "https://json-schema.org/draft/2020-12/schema"}) == 2020
    assert declared_draft({"$schema": "http://json-schema.org/draft-05/schema#"}) is None  # (jsonschema: the latest)


def test_a_member_named_only_in_a_left_out_branch_is_an_undeclared_one():
    """order_instance reads the schema as the compiler does: `title`, declared only in the left
    out `then`, is written where the instance has it, among the undeclared members."""
    schema = {"$schema": DRAFT4, "type": "object", "properties": {"kind": {"type": "string"}},
              "then": {"properties": {"title": {"type": "string"}}}}
    value = {"title": 1, "kind": "a"}
    assert list(order_instance(schema, value)) == ["kind", "title"]
    assert _accepts(schema, value) == _valid(schema, value) is True


@pytest.mark.parametrize("meta, applies", [(DRAFT7, True), ("https://json-schema.org/draft/2019-09/schema", False),
                                           ("https://json-schema.org/draft/2020-12/schema", False)])
def test_keywords_a_later_draft_removed_are_ignored_there(meta, applies):
    """`dependencies` (split into dependentSchemas/dependentRequired in 2019-09) and
    `additionalItems` (2020-12: `items` beside `prefixItems`)."""
    deps = {"$schema": meta, "type": "object", "dependencies": {"a": ["b"]}}
    assert _accepts(deps, {"a": 1}) == _valid(deps, {"a": 1}) == (not applies)
    items = {"$schema": meta, "type": "array", "prefixItems": [{"type": "integer"}], "additionalItems": False}
    if meta == DRAFT7:  # (no prefixItems in draft-07: the item list is `items`)
        items = {"$schema": meta, "type": "array", "items": [{"type": "integer"}], "additionalItems": False}
    assert _accepts(items, [1, "a"]) == _valid(items, [1, "a"]) == (meta != DRAFT7)


NUMBER_TEXTS = ["1", "1.0", "-0.00", "0", "-0", "2.5", "3", "3.0", '"a"']


@pytest.mark.parametrize("meta", [DRAFT4, DRAFT6, None])
@pytest.mark.parametrize("schema", [
    {"type": "integer", "enum": [0, 1]},
    {"type": "integer", "enum": [1.0, 2.5, "a"]},
    {"type": ["integer", "string"], "enum": [3, "a", 0]},
    {"type": "number", "enum": [1, 3.0]},
    {"enum": [0, 1]},
])
def test_an_enum_beside_type_integer_is_read_as_the_drafts_validator_does(meta, schema):
    """Draft 4's integer has no fraction (`1.0` is a number there), from draft 6 on an integer is
    any number with a zero fraction; an enum's values equal the instance by value in every draft
    (Github_easy o19071: draft 4, `is_test: {"type": "integer", "enum": [0, 1]}` accepted `-0.00`)."""
    schema = dict(schema, **({"$schema": meta} if meta else {}))
    fst = json_schema_fst(schema)
    for text in NUMBER_TEXTS:
        assert accepts(fst, text) == _valid(schema, json.loads(text)), (schema, text)
