"""Free values shared between compiles (`json_free_values`): a compile that takes them from the
store builds the same automaton, state for state, as one that builds them itself, whatever was
compiled before it, in either whitespace mode, and in-place edits of a compile's copy reach no
other compile."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pynini
import pytest

from fstbeam.compiler.structured.json_schema import free_values as json_free_values
from fstbeam.compiler.structured.json_schema.lexical import lit
from fstbeam.compiler.structured.json_schema.schema import SchemaCompiler, json_schema_fst

sys.path.insert(0, str(Path(__file__).parent))
from test_json_schema_random import random_schema  # noqa: E402

# each reaches free values: at the root, in free members and items, in `not` and `if`
# (whose complement is taken within the location's free value, keys in the location's order)
SCHEMAS = [
    {},
    {"type": "object", "properties": {"a": {}, "b": {"type": "integer"}}, "required": ["b"]},
    {"type": "array", "items": True, "maxItems": 3},
    {"not": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}},
    {"properties": {"a": {"type": "integer"}}, "if": {"required": ["a"]},
     "then": {"properties": {"b": {"type": "string"}}}, "else": {"type": "array"}},
    {"anyOf": [{"type": "object"}, {"type": "array", "items": {"not": {"type": "string"}}}]},
]


DEPTH = 2  # small automata: the store is keyed by depth like by the rest


def _cold(schema: dict, whitespace: str) -> bytes:
    json_free_values.clear()
    out: bytes = json_schema_fst(schema, whitespace=whitespace, max_depth=DEPTH).write_to_string()
    return out


@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_shared_free_values_build_the_same_automaton(whitespace: str) -> None:
    cold = {i: _cold(s, whitespace) for i, s in enumerate(SCHEMAS)}
    json_free_values.clear()
    other = "flexible" if whitespace == "compact" else "compact"
    rng = random.Random(7)
    order = list(range(len(SCHEMAS)))
    rng.shuffle(order)
    for i in order:  # the store filled by the others, and by the other whitespace mode
        json_schema_fst(SCHEMAS[(i + 1) % len(SCHEMAS)], whitespace=other, max_depth=DEPTH)
        warm = json_schema_fst(SCHEMAS[i], whitespace=whitespace, max_depth=DEPTH)
        assert warm.write_to_string() == cold[i], SCHEMAS[i]


def test_random_schemas_warm_and_cold_are_one_language() -> None:
    rng = random.Random(11)
    json_free_values.clear()
    for _ in range(8):
        schema = random_schema(rng, depth=2)
        warm = json_schema_fst(schema, max_depth=DEPTH)
        cold = pynini.Fst.read_from_string(_cold(schema, "compact"))
        assert warm.write_to_string() == cold.write_to_string(), schema
        assert pynini.equal(warm, cold), schema


def test_a_compiles_in_place_edit_stays_in_that_compile() -> None:
    json_free_values.clear()
    compiler = SchemaCompiler({}, where="t", max_depth=DEPTH, whitespace="compact",
                              string_words=None)
    free = compiler.any_value(compiler.plain, DEPTH)
    before = free.num_states()
    free.union(lit("not json"))  # what a careless caller might do to its copy
    fresh = SchemaCompiler({}, where="t", max_depth=DEPTH, whitespace="compact", string_words=None)
    again = fresh.any_value(fresh.plain, DEPTH)
    assert again.num_states() == before
    assert not pynini.intersect(lit("not json"), again).num_states()
    assert json_schema_fst({}, max_depth=DEPTH).write_to_string() == _cold({}, "compact")
