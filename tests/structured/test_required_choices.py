"""`required_choices.choice_rule` against its definition, and a `oneOf` of required names past
the old limit of 8 compiled as a rule (not as whole objects met by `exactly_one`)."""
from __future__ import annotations

import itertools
import json
import random

import pynini
import pytest

jsonschema = pytest.importorskip("jsonschema")

from fstbeam.compiler.structured.json_schema import schema as json_schema  # noqa: E402
from fstbeam.compiler.structured.json_schema.location import order_instance  # noqa: E402
from fstbeam.compiler.structured.json_schema.required_choices import MAX_NAMES, choice_rule  # noqa: E402
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst  # noqa: E402

KINDS = ["oneOf", "anyOf", "allOf", "not oneOf", "not anyOf", "not allOf"]
OTHER = [3, 256]  # labels that are not a named member's


def holds(kind: str, sets, present: set[str], seen: set[str]) -> bool:
    """The rule's definition: how many branches have every name among the members seen (a name
    that is no member of the object never is)."""
    met = sum(1 for s in sets if all(n in present and n in seen for n in s))
    base = kind.removeprefix("not ")
    ok = met == 1 if base == "oneOf" else met >= 1 if base == "anyOf" else met == len(sets)
    return ok != kind.startswith("not ")


def accepts(fst: pynini.Fst, labels: list[int]) -> bool:
    q = fst.start()
    if q < 0:
        return False
    for label in labels:
        q = next((a.nextstate for a in fst.arcs(q) if a.ilabel == label), -1)
        if q < 0:
            return False
    return fst.final(q) != pynini.Weight.zero(fst.weight_type())


@pytest.mark.parametrize("seed", range(6))
def test_the_rule_accepts_by_its_definition(seed):
    """Every order of every subset of the members, other labels between them: accepted exactly
    where the definition holds, for random branch sets (names that are no member included)."""
    rng = random.Random(seed)
    pool = "abcdef"
    for _ in range(8):
        sets = [rng.sample(pool, rng.randint(0, 3)) for _ in range(rng.randint(1, 4))]
        present = set(rng.sample(pool, rng.randint(2, 5)))
        slot_label = {n: 1000 + i for i, n in enumerate(sorted(present))}
        alphabet = set(OTHER) | set(slot_label.values())
        for kind in KINDS:
            rule = choice_rule(kind, sets, slot_label, alphabet)
            for k in range(len(present) + 1):
                for seen in itertools.permutations(sorted(present), k):
                    labels = [3] + [x for n in seen for x in (slot_label[n], rng.choice(OTHER))]
                    assert accepts(rule, labels) == holds(kind, sets, present, set(seen)), (kind, sets, seen)


def test_a_one_of_single_names_is_small():
    """Minimized before it is spelled over the whole alphabet: a state for no name met and one
    per single name met (two or more: no way back, trimmed), not one per subset."""
    names = [f"m{i}" for i in range(MAX_NAMES)]
    slot_label = {n: 1000 + i for i, n in enumerate(names)}
    rule = choice_rule("oneOf", [[n] for n in names], slot_label, set(range(1, 257)) | set(slot_label.values()))
    assert rule.num_states() == MAX_NAMES + 1
    assert pynini.equivalent(rule, pynini.determinize(rule).minimize())


def test_a_one_of_past_eight_names_is_a_rule(monkeypatch):
    """o38403's shape (a `oneOf` of 9 `{"required": [name]}` beside `additionalProperties:
    false`): each branch as a whole object met by `exactly_one` was a 655,000-state
    determinization (1.6 GB, 12 s); as a rule over the members it is small and exact."""
    names = [f"p{i}" for i in range(10)]
    schema = {"type": "object", "additionalProperties": False,
              "properties": {n: {"type": "object", "properties": {"x": {"type": "boolean"}}} for n in names},
              "oneOf": [{"required": [n]} for n in names]}
    def refuse(*args, **kwargs):
        raise AssertionError("the oneOf was met as whole objects")

    monkeypatch.setattr(json_schema, "exactly_one", refuse)
    fst = json_schema_fst(schema, max_depth=3)
    values = [{}, {"p0": {}}, {"p9": {"x": True}}, {"p0": {}, "p1": {}}, {"p3": {"x": 1}},
              {n: {} for n in names}, {"q": {}}, {"p5": {}, "q": 1}]
    for value in values:
        text = json.dumps(order_instance(schema, value), separators=(",", ":"))
        out = pynini.intersect(pynini.accep(text, token_type="byte"), fst)
        out.connect()
        assert (out.num_states() > 0) == jsonschema.Draft202012Validator(schema).is_valid(value), value
