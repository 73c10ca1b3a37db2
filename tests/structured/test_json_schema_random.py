"""Random small schemas and random instances: the automaton accepts an instance exactly when
`jsonschema` says it is valid (seeded; formats and patterns are left to the other tests)."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

from fstbeam.compiler.structured.json_schema.location import order_instance  # noqa: E402
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import accepts  # noqa: E402

KEYS = ["a", "b", "c"]


def random_schema(rng: random.Random, depth: int = 2) -> dict:
    kind = rng.choice(["integer", "number", "string", "boolean", "null", "array", "object",
                       "enum", "anyOf", "oneOf", "allOf", "not"] if depth else
                      ["integer", "number", "string", "boolean", "null", "enum"])
    if kind == "integer":
        s = {"type": "integer"}
        if rng.random() < 0.6:
            s["minimum"] = rng.randint(-5, 3)
        if rng.random() < 0.5:
            s["exclusiveMaximum"] = rng.randint(0, 9)
        if rng.random() < 0.3:
            s["multipleOf"] = rng.choice([2, 3])
        return s
    if kind == "number":
        s = {"type": "number"}
        if rng.random() < 0.6:
            s["maximum"] = rng.choice([0.5, 2.25, -1.5, 4])
        if rng.random() < 0.3:
            s["multipleOf"] = 0.5
        return s
    if kind == "string":
        s = {"type": "string"}
        if rng.random() < 0.5:
            s["minLength"] = rng.randint(0, 2)
        if rng.random() < 0.5:
            s["maxLength"] = rng.randint(1, 3)
        return s
    if kind in ("boolean", "null"):
        return {"type": kind}
    if kind == "enum":
        return {"enum": rng.sample([0, 1, 2.5, "x", "yy", None, True, [1], {"a": 1}], 3)}
    if kind == "array":
        s = {"type": "array", "items": random_schema(rng, depth - 1)}
        if rng.random() < 0.4:
            s["maxItems"] = rng.randint(0, 2)
        if rng.random() < 0.4:
            s["minItems"] = rng.randint(0, 2)
        return s
    if kind == "object":
        props = {k: random_schema(rng, depth - 1) for k in rng.sample(KEYS, rng.randint(0, 2))}
        s = {"type": "object", "properties": props}
        if props and rng.random() < 0.5:
            s["required"] = rng.sample(list(props), 1)
        r = rng.random()
        if r < 0.3:
            s["additionalProperties"] = False
        elif r < 0.5:
            s["additionalProperties"] = random_schema(rng, 0)
        if rng.random() < 0.2:
            s["maxProperties"] = 1
        return s
    n = rng.randint(1, 3)
    subs = [random_schema(rng, depth - 1) for _ in range(n)]
    return {"not": subs[0]} if kind == "not" else {kind: subs}


def random_instance(rng: random.Random, depth: int = 2):
    kind = rng.randrange(9 if depth else 7)
    if kind == 0:
        return rng.randint(-6, 9)
    if kind == 1:
        return rng.choice([0.5, 2.25, -1.5, 2.5, 1.0, -0.0])
    if kind == 2:
        return rng.choice(["", "x", "yy", "é\"", "abcd"])
    if kind == 3:
        return rng.choice([True, False])
    if kind == 4:
        return None
    if kind in (5, 6):
        return rng.choice([[1], {"a": 1}, [], {}])
    if kind == 7:
        return [random_instance(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    keys = rng.sample(KEYS + ["d"], rng.randint(0, 3))
    return {k: random_instance(rng, depth - 1) for k in keys}


@pytest.mark.parametrize("seed", range(60))
def test_random_schemas_against_jsonschema(seed):
    rng = random.Random(seed)
    schema = random_schema(rng)
    fst = json_schema_fst(schema, max_depth=4)  # instances nest at most 4 deep
    validator = jsonschema.Draft202012Validator(schema)
    for _ in range(40):
        value = random_instance(rng)
        text = json.dumps(order_instance(schema, value), separators=(",", ":"),
                          ensure_ascii=False)
        assert accepts(fst, text) == validator.is_valid(value), (schema, text)


def random_branch(rng: random.Random, depth: int) -> object:
    """A branch of an object node's `if`/`then`/`else`, `not`, `allOf` or dependent schema:
    mostly object keywords (merged with the node, json_branches), sometimes a value that holds
    no object or a whole random schema (met as before)."""
    kind = rng.randrange(8)
    k = rng.choice(KEYS + ["d"])
    if kind == 0:
        return {"properties": {k: random_schema(rng, depth - 1)}, "required": [k]} if rng.random() < 0.5 \
            else {"properties": {k: random_schema(rng, depth - 1)}}
    if kind == 1:
        return {"required": rng.sample(KEYS, rng.randint(1, 2))}
    if kind == 2:
        return {"properties": {k: {"const": rng.choice([1, "x", None])}}, "required": [k]}
    if kind == 3:
        return {"properties": {k: {}}, "additionalProperties": rng.choice([False, {"type": "integer"}])}
    if kind == 4:
        return {"type": rng.choice(["string", ["object", "null"]]), "minProperties": rng.randint(1, 2)}
    if kind == 5:
        return {"maxProperties": rng.randint(1, 2), "properties": {k: False}}
    if kind == 6:
        return {"oneOf": [{"required": [k]}, random_branch(rng, depth - 1) if depth > 1 else {"required": ["a"]}]}
    return random_schema(rng, depth - 1)


def random_object_node(rng: random.Random) -> dict:
    """An object node with combinators over object branches (or an `allOf` of objects)."""
    props = {k: random_schema(rng, 1) for k in rng.sample(KEYS, rng.randint(1, 3))}
    node: dict = {"type": "object", "properties": props}
    if rng.random() < 0.3:
        node["additionalProperties"] = rng.choice([False, {"type": "string"}])
    if rng.random() < 0.2:
        node["patternProperties"] = {"^d": {"type": "integer"}}
    if rng.random() < 0.3:
        node[rng.choice(["minProperties", "maxProperties"])] = rng.randint(1, 2)
    combinator = rng.randrange(5)
    if combinator == 0:
        node.update({"if": random_branch(rng, 2), "then": random_branch(rng, 2)})
        if rng.random() < 0.5:
            node["else"] = random_branch(rng, 2)
    elif combinator == 1:
        node["not"] = random_branch(rng, 2)
    elif combinator == 2:
        node["dependentSchemas"] = {rng.choice(KEYS): random_branch(rng, 2)}
    elif combinator == 3:
        node["allOf"] = [random_branch(rng, 2) for _ in range(rng.randint(1, 2))] + \
            ([{"if": random_branch(rng, 2), "then": random_branch(rng, 2)}] if rng.random() < 0.5 else [])
    else:  # an allOf of objects at a node without keywords of its own
        return {"allOf": [node, *(random_branch(rng, 2) for _ in range(rng.randint(1, 2)))]}
    return node


@pytest.mark.parametrize("seed", range(80))
def test_random_object_combinators_against_jsonschema(seed):
    rng = random.Random(1000 + seed)
    schema = random_object_node(rng)
    fst = json_schema_fst(schema, max_depth=4)
    validator = jsonschema.Draft202012Validator(schema)
    for _ in range(50):
        value = random_instance(rng) if rng.random() < 0.3 else {
            k: random_instance(rng, 1) for k in rng.sample(KEYS + ["d"], rng.randint(0, 4))}
        text = json.dumps(order_instance(schema, value), separators=(",", ":"), ensure_ascii=False)
        assert accepts(fst, text) == validator.is_valid(value), (schema, text)
