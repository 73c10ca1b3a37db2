"""A `oneOf`/`anyOf` whose branches only require members, as a rule over member markers.

``{"type": "object", "properties": {...}, "oneOf": [{"required": ["a", "b"]},
{"required": ["a", "c"]}]}`` (44 of the 1,600 JSON Schema Bench schemas; travis's npm deployment)
says which *sets* of the object's own members may be present together. Compiled as combinators,
each branch is a whole object automaton (a free-value slot per member of the location),
determinized and counted against the others (`exactly_one`) and met with the object: seconds on
travis. Every member of an object is written once, after a marker of its own
(`containers.object_value`), so the same condition is a small automaton over those markers:
a state per subset of the named members seen so far, final where exactly one (`oneOf`) or at
least one (`anyOf`) branch has all of its names.

A `not` of such a condition (`{"not": {"required": ["a"]}}`: no member a;
`{"not": {"allOf": [{"required": ["site"]}, {"required": ["app"]}]}}`: not both) is the same rule
with the final states flipped. As a combinator it was a difference from every JSON value at that
location to ``max_depth``, which cut the whole object's nesting there (OpenRTB's root `not`
rejected every bid request nested deeper than 3); the rule cuts nothing.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import pynini

__all__ = ["required_choices", "choice_rule", "bans_other_values", "NOTES", "OBJECT_KEYS"]

# keywords that only annotate a schema (a branch of them and `required` only requires)
NOTES = {"description", "title", "$comment"}
# an object node's own keywords: they make `_typed` build the node's own object (not a free value
# or a type filter; with the dependency keywords, `branches.OBJECT_KEYWORDS`), and are what
# an `allOf`/`if` branch is merged with (`branches`)
OBJECT_KEYS = ("properties", "required", "additionalProperties", "patternProperties", "propertyNames",
               "minProperties", "maxProperties")
MAX_NAMES = 12  # 2^12 subset states over n + 1 symbols at most (`choice_rule`), before minimizing


def required_choices(node: Mapping[str, Any], slots: Collection[str]) -> list[tuple[str, list[list[str]]]]:
    """The node's `oneOf`/`anyOf` that are rules over its members: ``(keyword, [names of
    each branch])``. Only where the node's own object is built (an object keyword beside them,
    no `enum`/`const`) and every name is one of ``slots``. (Any other value meets every branch:
    a `oneOf` of two or more leaves the node objects only, its caller's part.)"""
    if "enum" in node or "const" in node or not any(k in node for k in OBJECT_KEYS):
        return []
    t = node.get("type")
    if t is not None and "object" not in (t if isinstance(t, list) else [t]):
        return []
    out = []
    for kw in ("oneOf", "anyOf"):
        sets = _required_sets(node.get(kw), slots)
        if sets is not None:
            out.append((kw, sets))
    banned = node.get("not")
    if isinstance(banned, dict) and len(set(banned) - NOTES) == 1:
        (kw,) = set(banned) - NOTES
        if kw == "required":
            sets = _required_sets([banned], slots)
            kw = "allOf"
        else:
            sets = _required_sets(banned[kw], slots) if kw in ("allOf", "anyOf", "oneOf") else None
        if sets is not None:
            out.append((f"not {kw}", sets))
    return out


def bans_other_values(kind: str, sets: Sequence[Sequence[str]]) -> bool:
    """Whether a rule leaves the node objects only: `required` holds on any other value, so a
    `oneOf` of two or more branches, and a `not` of a condition that holds, fail on it."""
    if kind == "oneOf":
        return len(sets) > 1
    return kind in ("not allOf", "not anyOf") or (kind == "not oneOf" and len(sets) == 1)


def _required_sets(branches: Any, slots: Collection[str]) -> list[list[str]] | None:
    """The names each branch requires, where every branch only requires members of ``slots``
    (and they name at most `MAX_NAMES` in all)."""
    if not isinstance(branches, list) or not branches:
        return None
    sets = []
    for b in branches:
        names = b.get("required") if isinstance(b, dict) and set(b) - NOTES == {"required"} else None
        if not (isinstance(names, list) and all(isinstance(n, str) and n in slots for n in names)):
            return None
        sets.append(list(dict.fromkeys(names)))
    return sets if len({n for s in sets for n in s}) <= MAX_NAMES else None


def choice_rule(kind: str, sets: Sequence[Sequence[str]], slot_label: Mapping[str, int],
                alphabet: Collection[int]) -> pynini.Fst:
    """Label sequences over ``alphabet`` in which exactly one (``kind`` "oneOf"), at least
    one ("anyOf") or every one ("allOf") of ``sets`` has all of its members' labels
    (``slot_label``; a name without one is a member that cannot appear); "not oneOf" etc.: the
    others. Each member label appears at most once (a slot). A minimal DFA.

    Built over a small alphabet first (one symbol per name, one for every other label: a state
    per subset of the names seen, 2^n of them), minimized there, and only then spelled over
    ``alphabet``: a `oneOf` of n single names is n + 1 states (none met, or which one), where the
    subsets spelled over the whole alphabet were 2^n states of ~270 arcs each."""
    negated, base = kind.startswith("not "), kind.removeprefix("not ")
    names = sorted({n for s in sets for n in s if n in slot_label})
    needs = [sum(1 << names.index(n) for n in s) if all(n in slot_label for n in s) else None
             for s in sets]
    other = len(names) + 1  # (the small alphabet: name i is i + 1; 0 is epsilon)
    f = pynini.Fst()
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    states = [f.add_state() for _ in range(1 << len(names))]
    f.set_start(states[0])
    for seen, s in enumerate(states):
        met = sum(1 for need in needs if need is not None and need & seen == need)
        holds = met == 1 if base == "oneOf" else met >= 1 if base == "anyOf" else met == len(needs)
        if holds != negated:
            f.set_final(s)
        for i in range(len(names)):
            f.add_arc(s, pynini.Arc(i + 1, i + 1, one, states[seen | 1 << i]))  # type: ignore[attr-defined]
        f.add_arc(s, pynini.Arc(other, other, one, s))  # type: ignore[attr-defined]
    f.minimize(allow_nondet=False).connect()
    spelled = [slot_label[n] for n in names]
    rest = sorted(set(alphabet) - set(spelled))
    out = pynini.Fst()
    if f.num_states() == 0:  # (no subset meets the condition: the empty language)
        return out
    out.add_states(f.num_states())
    out.set_start(f.start())
    zero = pynini.Weight.zero(f.weight_type())  # type: ignore[attr-defined]
    for s in f.states():
        if f.final(s) != zero:
            out.set_final(s)
        for arc in f.arcs(s):
            for label in rest if arc.ilabel == other else [spelled[arc.ilabel - 1]]:
                out.add_arc(s, pynini.Arc(label, label, one, arc.nextstate))  # type: ignore[attr-defined]
    return out.arcsort("ilabel")  # type: ignore[no-any-return]
