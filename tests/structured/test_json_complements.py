"""The schema's negative parts (`not`, `oneOf`, `if`/`else`, a `oneOf` branch every value
matches) accept no text the specification rejects: `jsonschema` (the output check: numbers as
decimals) is the oracle, over hand-picked texts and random texts of each automaton."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from regex_oracle import accepts

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.runtime.structured_check import json_problem

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from automaton_walks import random_texts  # noqa: E402

TEXTS = ["1", "1.0", "-0", "1e3", "12E+2", "1.5", "2.5e-1", '"1e3"', "true", "false", "null", "[]", "{}",
         '{"a":1e3}', '{"a":1}', '{"a":1.0}', '{"a":"x"}', "[1e2]", "[1]", '{"a1e":2}', '{"x":{"y":[1]}}', '"s"',
         "[1,1e3]", "[1,2.5]", "[1,2]", '["1e3",1]']
SCHEMAS = [
    {"not": {"type": "integer"}},
    {"not": {"enum": [1, "x"]}},
    {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}},
    {"type": "object", "properties": {"a": {}}, "if": {"properties": {"a": {"type": "integer"}}},
     "then": {"required": ["a"]}, "else": {"properties": {"a": {"type": "string"}}}},
    # a branch every value matches (Github_easy o2231's `{"#ref": ...}`, a typo of `$ref`)
    {"oneOf": [{"properties": {"a": {"type": "integer"}}}, {"#ref": "#/x"}]},
    {"oneOf": [{"type": "string"}, {}]},
    {"oneOf": [{}]},
    {"oneOf": [{}, True]},
    {"type": "array", "contains": {"type": "integer"}, "maxContains": 1},  # (items that miss `contains`)
]


def _exponent(text: str) -> bool:
    """A number written with an exponent (outside the text's strings)."""
    return re.search(r"[0-9][eE]", re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)) is not None


def _depth(v) -> int:
    if isinstance(v, (dict, list)):
        return 1 + max((_depth(x) for x in (v.values() if isinstance(v, dict) else v)), default=0)
    return 0


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: json.dumps(s)[:60])
def test_accepts_only_what_validates_and_all_that_does_without_exponents(schema):
    """Numbers written with an exponent are kept out of complements (`complements.plain_numbers`:
    the compiler reads `integer` without them, so `not integer` took `1e3` in); every other valid
    text within the default depth is accepted."""
    fst, text = json_schema_fst(schema), json.dumps(schema)
    for t in TEXTS:
        valid = json_problem(text, t) is None
        if accepts(fst, t):
            assert valid, (schema, t)
        elif valid and not _exponent(t) and _depth(json.loads(t)) <= 3:
            pytest.fail(f"{schema}: {t} is valid and not accepted")


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: json.dumps(s)[:60])
def test_random_texts_of_the_automaton_validate(schema):
    fst = json_schema_fst(schema)
    texts = random_texts(fst_to_dfa(fst), 150, seed=7, budget=50) if fst.num_states() else []
    problems = [(t, p) for t in texts if (p := json_problem(json.dumps(schema), t.decode())) is not None
                and "could not be validated" not in p]
    assert problems == []


def test_a_one_of_with_two_branches_every_value_matches_is_empty_and_with_one_is_everything():
    assert json_schema_fst({"oneOf": [{}, True]}).num_states() == 0
    assert all(accepts(json_schema_fst({"oneOf": [{"title": "any"}]}), t) for t in ("1", "[]", '{"a":[1]}', '"s"'))
