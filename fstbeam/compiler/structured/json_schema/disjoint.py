"""A quick static test that two schemas accept no common value (for `oneOf`).

`oneOf` needs the pairwise intersections of its branches; most real `oneOf`s are discriminated
(different types, or a required property with different constants), and proving that on the
schemas saves a product of two large automata per pair. Unsure means "maybe overlapping": the
automata decide.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pynini

from ....errors import SpecError
from ....fst.optimize import FstSizeError, optimize
from .lexical import union
from .location import Resolver
from .required_choices import NOTES

__all__ = ["disjoint", "join", "open_union", "minimal_once", "listed_values"]

# An `open_union` node's automaton this large is minimized where it is built (`minimal_once`); a
# smaller one is left to the document's minimization.
JOIN_OPT_STATES = 2_000

_ALL = {"null", "boolean", "object", "array", "number", "integer", "string"}


def _deref(node: Any, resolver: Resolver, depth: int = 8) -> Any:
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth:
        if set(node) - {"$ref", "description", "title", "$comment"} and not resolver.ref_alone:
            return node  # siblings beside $ref: not a plain alias
        try:
            node = resolver.resolve(node["$ref"], "")[0]
        except SpecError:
            return node
        depth -= 1
    return node


def _types(node: dict[str, Any]) -> set[str]:
    t = node.get("type")
    names = set(t if isinstance(t, list) else [t]) if t is not None else set(_ALL)
    if "number" in names:
        names.add("integer")
    return names & _ALL


def listed_values(node: dict[str, Any]) -> list[Any] | None:
    """The values a node lists with `const` (first) or `enum`; None where it lists none."""
    if "const" in node:
        return [node["const"]]
    return list(node["enum"]) if isinstance(node.get("enum"), list) else None


def _values(node: dict[str, Any]) -> set[str] | None:
    """The canonical JSON of the allowed values, when the node lists them (const/enum)."""
    vals = listed_values(node)
    if vals is None:
        return None
    out = set()
    for v in vals:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return None  # 1 and 1.0 are one value: let the automata decide
        out.add(json.dumps(v, sort_keys=True))
    return out


def disjoint(a: Any, b: Any, resolver: Resolver, depth: int = 3,
             within: dict[str, Any] | None = None) -> bool:
    """True only when no value can be valid against both ``a`` and ``b``, among the values
    valid against ``within`` (the parent's own `type` and `required`, which hold anyway)."""
    a, b = _deref(a, resolver), _deref(b, resolver)
    if a is False or b is False:
        return True
    if not isinstance(a, dict) or not isinstance(b, dict) or depth == 0:
        return False
    outer = _types(within) if within is not None else set(_ALL)
    ta, tb = _types(a) & outer, _types(b) & outer
    if not ta & tb:
        return True
    va, vb = _values(a), _values(b)
    if va is not None and vb is not None and not va & vb:
        return True
    # every value one side lists, the other excludes by name (travis's `provider`: an enum of
    # one beside `{"not": {"enum": [the others' names]}}`)
    for vals, other in ((va, b), (vb, a)):
        banned = other.get("not")
        if vals is not None and isinstance(banned, dict) and set(banned) <= {"enum", "const"}:
            out = _values(banned)
            if out is not None and vals <= out:
                return True
    if (ta & tb) <= {"object"}:
        # parent's required keys apply to objects
        extra = {r for r in (within or {}).get("required") or [] if isinstance(r, str)}
        return _objects_disjoint(a, b, resolver, depth, extra)
    return False


def _objects_disjoint(a: dict[str, Any], b: dict[str, Any], resolver: Resolver,
                      depth: int, extra: set[str]) -> bool:
    pa, pb = a.get("properties") or {}, b.get("properties") or {}
    ra = {r for r in a.get("required") or [] if isinstance(r, str)} | extra
    rb = {r for r in b.get("required") or [] if isinstance(r, str)} | extra
    # a property that one side requires and both declare: a common value has it, valid
    # against both declarations (hayson's `dict`, whose `_kind` is optional, beside `marker`)
    for p in ra | rb:
        if p in pa and p in pb and disjoint(pa[p], pb[p], resolver, depth - 1):
            return True
    for mine, other, other_props in ((ra, b, pb), (rb, a, pa)):
        closed = other.get("additionalProperties") is False and not other.get(
            "patternProperties")
        if closed and any(p not in other_props for p in mine):
            return True
    return False


def context_of(node: dict[str, Any]) -> dict[str, Any] | None:
    """What ``node``'s own keywords ensure beside its combinators (for `disjoint`): its types
    and, for objects, its required keys."""
    ctx: dict[str, Any] = {k: node[k] for k in ("type", "required") if k in node}
    return ctx or None


def type_of(v: Any, draft4: bool) -> str:
    """The JSON Schema type of a Python value (draft 4: 1.0 is a number, not an integer)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and not draft4):
        return "integer"
    if isinstance(v, (float, Decimal)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def join(langs: list[pynini.Fst]) -> pynini.Fst:
    """The union of the branch automata of an `anyOf` (or of a `oneOf` whose branches are
    disjoint), each taken once (a cached node met twice: draft-4 `$ref`s to `{}` beside their
    ignored enums, circleci's `step`)."""
    return union(list({id(f): f for f in langs}.values()))


def open_union(node: dict[str, Any], kinds: Callable[[Any], frozenset[str]], resolver: Resolver) -> bool:
    """Has ``node`` an `anyOf` or `oneOf` with two branches that may be objects whose undeclared
    members take any value? Those hold a slot for each key of their location and the same free
    tail, repeated once per branch in their union: `minimal_once` of the node's automaton."""
    return any(sum(_open_object(s, kinds(s), resolver) for s in node.get(kw) or []) >= 2
               for kw in ("anyOf", "oneOf"))


def minimal_once(fst: pynini.Fst, stage: str, max_states: int,
                 memo: dict[bytes, pynini.Fst]) -> pynini.Fst:
    """``fst`` (the automaton of an `open_union` node) minimized where it is large and not yet
    deterministic, once per content in ``memo`` (two recursion budgets may build one automaton):
    it is copied into every level that holds it (circleci's `step` anyOf 11,586 -> 2,644 states,
    its parameter `oneOf` of 7 13,061 -> 4,001: the whole document's determinization and
    minimization 9.4 -> 4.7 CPU-s). Closed objects share little (o68391's `block` oneOf, 50,746
    -> 48,306 states in 2.9 s): not asked. As is past ``max_states``."""
    det = pynini.I_DETERMINISTIC  # type: ignore[attr-defined]
    if fst.num_states() < JOIN_OPT_STATES or fst.properties(det, False) == det:
        return fst
    key = hashlib.blake2b(fst.write_to_string(), digest_size=20).digest()
    if key not in memo:
        try:
            memo[key] = optimize(fst, stage=stage, max_states=max_states)
        except FstSizeError:
            memo[key] = fst
    return memo[key].copy()


def _open_object(node: Any, kinds: frozenset[str], resolver: Resolver) -> bool:
    """May ``node`` hold an object whose undeclared members take any value?"""
    node = _deref(node, resolver)
    return "object" in kinds and (node is True or isinstance(node, dict) and (
        node.get("additionalProperties", True) is True or _is_free_schema(node["additionalProperties"])))


def _is_free_schema(node: Any) -> bool:
    return isinstance(node, dict) and not set(node) - NOTES
