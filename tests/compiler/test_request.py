"""ConstraintRequest: the one request type of every door, its JSON form, schema and merge rule."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fstbeam.compiler.light.alternatives import AnyOf
from fstbeam.compiler.request import JSON_KEYS, ConstraintRequest, json_schema
from fstbeam.compiler.spec import Phrase
from fstbeam.errors import GrammarError, SpecError

DOC = Path(__file__).resolve().parents[2] / "docs" / "request.schema.json"

EXAMPLES = [
    {"cefr": "A2", "phrases": ["the weather", ["rain", "rains"]], "avoid": ["cold"], "prefix": "Today"},
    {"words": ["cat", "dog"], "phrases": ["cat"], "ordered": True, "sentence_case": True},
    {"grammar": "dates", "grammar_params": {"style": "long"}},
    {"phrases": ["Vertrag"], "case_variants": False, "digits": False, "leading_space": True},
]


def test_the_published_schema_is_the_code_s():
    assert json.loads(DOC.read_text(encoding="utf-8")) == json_schema()
    assert set(json_schema()["properties"]) == set(JSON_KEYS)


@pytest.mark.parametrize("obj", EXAMPLES)
def test_json_round_trip_and_schema(obj):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(obj, json_schema())
    req = ConstraintRequest.from_json(obj)
    again = ConstraintRequest.from_json(req.to_json())
    assert again.to_json() == req.to_json()
    assert {k: v for k, v in req.to_json().items()} == {k: (v.upper() if k == "cefr" else v) for k, v in obj.items()}


@pytest.mark.parametrize("obj,needle", [
    ({"phrases": "x", "colour": 1}, "unknown key 'colour'"),
    ({"phrases": [3]}, "phrases[0] must be text"),
    ({"phrases": [[]]}, "phrases[0] is an empty list"),
    ({"avoid": ["ok", "\ud800"]}, "avoid[1] is not valid Unicode"),
    ({"prefix": ""}, "prefix is empty"),
    ({"words": ["a"], "cefr": "A1"}, "either words= or cefr="),
    ({"ordered": "yes"}, "ordered must be true or false"),
    ({"grammar_params": {"a": "b"}}, "give grammar= too"),
    ({"phrases": ["a\x00b"]}, "NUL"),
    ({"phrases": ["x" * 5000]}, "over the limit"),
])
def test_bad_json_names_the_field(obj, needle):
    with pytest.raises(SpecError) as e:
        ConstraintRequest.from_json(obj, where="in.jsonl:3")
    assert needle in str(e.value) and str(e.value).startswith("in.jsonl:3")


def test_grammar_params_must_be_a_mapping():
    with pytest.raises(GrammarError, match="must be a dict"):
        ConstraintRequest.from_kwargs(grammar="dates", grammar_params="style=long")


def test_a_server_never_reads_a_file_named_by_a_client():
    with pytest.raises(SpecError, match="file path is not read"):
        ConstraintRequest.from_json({"words": "/etc/passwd"}, allow_paths=False)


def test_with_no_base_a_request_is_compiled_whole():
    """The merge rule against a compiled base is tested in test_compiler.py (brute force); with
    no base the request is itself, its hard part included."""
    req = ConstraintRequest.from_json({"cefr": "a1", "phrases": ["a"]}, where="f:1")
    assert req.added_to(None) is req and req.cefr == "A1"


def test_items_are_phrases_and_anyofs_with_their_options():
    req = ConstraintRequest.from_json({"phrases": ["the hero", ["Haus", "Häuser"], ["same", "same"]], "sentence_case": True})
    a, b, c = req.phrases
    assert a == Phrase("the hero", sentence_case=True, source="request: phrases[0]")
    assert isinstance(b, AnyOf) and b.alternatives == ("Haus", "Häuser") and b.sentence_case
    assert isinstance(c, Phrase) and c.text == "same"  # one alternative is a phrase
    kw = ConstraintRequest.from_kwargs(phrases=[Phrase("x", case_sensitive=False), AnyOf("y", "z")])
    assert kw.phrases[0].case_sensitive is False and kw.phrases[1].alternatives == ("y", "z")
