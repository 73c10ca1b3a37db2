"""benchmarks/structured_oracle.py: schema_coverage counts compiled schemas, accepted valid and
rejected invalid instances, and groups refusals by keyword (tiny synthetic sample)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("jsonschema")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from structured_oracle import check_schema, schema_coverage, serialize  # noqa: E402


def test_schema_coverage_counts_and_refusals(tmp_path):
    good = {"schema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}},
                       "required": ["n"]},
            "tests": [{"valid": True, "data": {"n": 2}}, {"valid": True, "data": {"x": 1, "n": 3}},
                      {"valid": False, "data": {"n": 4}}, {"valid": False, "data": {}}]}
    refused = {"schema": {"anyOf": [{"required": ["a"]}], "if": {"required": ["b"]}, "unevaluatedProperties": False},
               "tests": []}
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps(refused))
    jsonl = tmp_path / "out.jsonl"
    summary = schema_coverage(sorted(str(p) for p in tmp_path.glob("*.json")), timeout_s=60,
                              jsonl=str(jsonl))
    assert summary["schemas"] == 2 and summary["compiled"] == 1
    assert summary["valid"] == 2 and summary["valid_accepted_pct"] == 100.0
    assert summary["invalid"] == 2 and summary["invalid_rejected_pct"] == 100.0
    assert summary["refusals"] == {"unevaluatedProperties": 1}
    assert len(jsonl.read_text().splitlines()) == 2
    assert serialize(good["schema"], {"x": 1, "n": 3}) == '{"n":3,"x":1}'


# Schemas whose automata random walks once caught or nearly caught out: draft 4's integer beside
# an enum (o19071), ECMA's \s in a pattern (o8480, build-cache), decimal multipleOf (o46423),
# oneOf over numbers (oneof5_2), and three plain ones.
SAMPLED = ["Github_easy---o19071", "Github_medium---o8480", "JsonSchemaStore---build-cache-node-config-schema-5",
           "Github_medium---o46423", "Handwritten---oneof5_2", "Glaiveai2K---calculate_area_8e4a54fc",
           "Kubernetes---kb_627_Normalized", "Snowplow---sp_378_Normalized"]


@pytest.mark.parametrize("name", SAMPLED)
def test_random_texts_of_a_dev_schemas_automaton_validate(name):
    """The other direction from the test instances: texts the automaton accepts, drawn at random,
    each parse and validate by `jsonschema` (numbers as decimals, patterns as ECMA reads them)."""
    from regex_oracle import dev_sample

    folder = dev_sample()
    if not (folder / f"{name}.json").exists():
        pytest.skip("the JSONSchemaBench development sample is not beside the repository")
    out = check_schema(str(folder / f"{name}.json"), samples=40)
    assert out["compiled"] and out["sampled"] >= 30, out
    assert out["sampled_ok"] == out["sampled"], out["sampled_wrong"]


def test_random_texts_catch_an_automaton_that_accepts_too_much():
    """The oracle finds what it is for: the automaton of a looser schema, checked against a
    stricter one (and each walk ends in an accepting state, past its byte budget too)."""
    from automaton_walks import random_texts

    from fstbeam.compiler.char_dfa import fst_to_dfa
    from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
    from fstbeam.runtime.structured_check import json_problem

    loose = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    strict = json.dumps(dict(loose, properties={"n": {"type": "integer", "maximum": 9}}))
    dfa = fst_to_dfa(json_schema_fst(loose))
    texts = random_texts(dfa, 60, seed=3, budget=40)
    assert len(texts) == 60 and all(json_problem(json.dumps(loose), t.decode()) is None for t in texts)
    assert any(json_problem(strict, t.decode()) is not None for t in texts)
    assert all(json_problem(strict, t.decode()) is None for t in texts if json.loads(t)["n"] <= 9)
