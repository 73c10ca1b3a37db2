"""Structured outputs over HTTP (issue 36, item 5), with the ``openai`` client against a real
server on 127.0.0.1 (tiny random model): OpenAI's ``response_format`` (``json_object``,
``json_schema``), vLLM's ``structured_outputs`` and the older ``guided_*`` fields are the same
constraints as the request keys ``json_schema``, ``regex`` and ``choice``. The oracle is the
text itself: it parses and validates with ``jsonschema``, matches with Python's ``re``, is one of
the choices; and the same request given as ``constraints`` keys gives the same text."""
from __future__ import annotations

import json
import os
import re
import sys

import httpx
import pytest

sys.path.insert(0, os.path.dirname(__file__))

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = {"type": "object", "properties": {"pet": {"enum": ["cat", "dog"]}, "legs": {"enum": [3, 4]}},
          "required": ["pet", "legs"], "additionalProperties": False}


def _client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=300)


def _text(server, **body):
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "the cat", "max_tokens": 24, **body}, timeout=300)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


def test_response_format_json_schema_gives_valid_json(server):
    c = _client(server)
    out = c.completions.create(model="tiny", prompt="the cat", max_tokens=24, extra_body={
        "response_format": {"type": "json_schema", "json_schema": {"name": "pet", "schema": SCHEMA}}})
    text = out.choices[0].text
    jsonschema.validate(json.loads(text), SCHEMA)
    assert out.choices[0].finish_reason == "stop"
    # the same constraint given as a constraints key: the same text
    assert _text(server, constraints={"json_schema": SCHEMA})["text"] == text


OPEN = {"type": "object", "properties": {"pet": {"enum": ["cat", "dog"]}, "legs": {"enum": [3, 4]}},
        "required": ["pet", "legs"]}  # (other members allowed, as the specification reads it)


@pytest.mark.parametrize("body", [
    {"response_format": {"type": "json_schema", "json_schema": {"name": "pet", "schema": OPEN, "strict": True}}},
    {"structured_outputs": {"json": OPEN, "disable_additional_properties": True}},
])
def test_strict_schemas_take_only_the_declared_members(server, body):
    choice = _text(server, **body)
    assert choice["finish_reason"] == "stop", choice  # (a finite language: it ends within the limit)
    out = json.loads(choice["text"])
    jsonschema.validate(out, OPEN)
    assert set(out) == {"pet", "legs"}
    # the same as the request key (beside the other json_* options, which went with the schema to its base)
    keys = {"json_schema": OPEN, "json_strict": True, "json_max_depth": 2, "json_whitespace": "compact"}
    assert _text(server, constraints=keys)["text"] == choice["text"]


def test_chat_response_format_json_object(server):
    c = _client(server)
    out = c.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "a pet"}], max_tokens=12,
                                    response_format={"type": "json_object"})
    choice = out.choices[0]
    if choice.finish_reason == "stop":  # an object that ended within the limit parses
        assert isinstance(json.loads(choice.message.content), dict)
    else:
        assert choice.message.content.startswith("{")


@pytest.mark.parametrize("field,value,check", [
    ("guided_regex", "[ab]{2,3}c", lambda t: re.fullmatch("[ab]{2,3}c", t)),
    ("structured_outputs", {"regex": "(yes|no)!"}, lambda t: t in ("yes!", "no!")),
    ("guided_choice", ["red fox", "blue jay"], lambda t: t in ("red fox", "blue jay")),
    ("structured_outputs", {"choice": ["up", "down"]}, lambda t: t in ("up", "down")),
    ("guided_json", SCHEMA, lambda t: jsonschema.validate(json.loads(t), SCHEMA) is None),
])
def test_vllm_fields_constrain_the_output(server, field, value, check):
    choice = _text(server, **{field: value})
    assert choice["finish_reason"] == "stop" and check(choice["text"]), choice


@pytest.mark.parametrize("body,param", [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "response_format.json_schema"),
    ({"guided_regex": "a+", "guided_choice": ["a"]}, "guided_choice"),
    ({"guided_regex": "a+", "constraints": {"regex": "b+"}}, "regex"),
    ({"guided_regex": "(a)\\1"}, None),  # a backreference: not regular, named in the message
    ({"structured_outputs": {}}, "structured_outputs"),
    ({"structured_outputs": {"regex": "a+", "disable_additional_properties": True}},
     "structured_outputs.disable_additional_properties"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}, "strict": "yes"}}},
     "response_format.json_schema.strict"),
])
def test_structured_fields_it_cannot_honour_are_400(server, body, param):
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "x", "max_tokens": 4, **body}, timeout=120)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    if param is not None:
        assert err["param"] == param, err
    else:
        assert "backreference" in err["message"].lower(), err
