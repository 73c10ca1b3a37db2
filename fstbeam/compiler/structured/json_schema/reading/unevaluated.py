"""`unevaluatedProperties` and `unevaluatedItems` where what they see is known before any
instance is: read as the `additionalProperties`/`items` they then mean.

An object member is *evaluated* by the `properties`, `patternProperties` and
`additionalProperties` of the schemas that apply at its object's place and succeed; the
unevaluated members must match `unevaluatedProperties`. Where the node's other schemas there are
its own keywords, its `allOf` branches and its `$ref` targets (all of which must succeed for
the node to), the evaluated names are fixed: those properties and patterns, or everything where
one of those schemas has `additionalProperties` (or an `unevaluatedProperties` of its own).
The keyword is then a further `allOf` branch: ``{"properties": {names: true},
"patternProperties": {patterns: true}, "additionalProperties": U}`` (or, with no `allOf` or
`$ref`, the node's own `additionalProperties`). The same holds for items with `prefixItems`
(2019-09: an `items` list) and `items`/`additionalItems`.

Beside `anyOf`, `oneOf`, `if`, `dependentSchemas`, `contains` (for items) or a dynamic
reference, what is evaluated depends on which branch an instance matches: the keyword is kept,
and the compiler refuses it naming its path. (The JSON Schema Store idiom, `allOf` of `$ref`s
closed by `"unevaluatedProperties": false`, is the fixed kind: discovery.schema's eight.)
"""
from __future__ import annotations

from typing import Any

from .....errors import SpecError
from .uris import Resolver
from .walk import declared_draft, rebuilt, schema_nodes

__all__ = ["read_unevaluated"]

# Keywords that make what a node's schemas evaluate depend on the instance
_DYNAMIC = frozenset({"anyOf", "oneOf", "if", "dependentSchemas", "$dynamicRef", "$recursiveRef"})
_ALL = "all"  # every member (item) is evaluated: the keyword has nothing to see


def read_unevaluated(schema: Any) -> Any:
    """``schema`` with each fixed `unevaluatedProperties`/`unevaluatedItems` written as what it
    means (module doc); the schema itself where there is none to rewrite."""
    if not isinstance(schema, dict) or not any(
            "unevaluatedProperties" in n or "unevaluatedItems" in n for n, _, _ in schema_nodes(schema)):
        return schema
    resolver = Resolver(schema, "json_schema")
    legacy_items = declared_draft(schema) == 2019  # (an `items` list and `additionalItems`)

    def finish(node: dict[str, Any], out: dict[str, Any], path: str, flag: bool) -> None:
        if "unevaluatedProperties" in node:
            _rewrite(out, "unevaluatedProperties", _closure(node, resolver, "properties"), legacy_items)
        if "unevaluatedItems" in node:
            _rewrite(out, "unevaluatedItems", _closure(node, resolver, "items"), legacy_items)

    return rebuilt(schema, finish=finish)


def _closure(node: dict[str, Any], resolver: Resolver, kind: str) -> list[dict[str, Any]] | None:
    """``node`` and the schemas that apply at its place whatever the instance (`allOf`
    branches, `$ref` targets, theirs in turn); None where a branch is taken by the instance."""
    dynamic = _DYNAMIC | ({"contains"} if kind == "items" else set())
    out: list[dict[str, Any]] = []
    todo: list[Any] = [node]
    seen: set[int] = set()
    while todo:
        n = todo.pop()
        if not isinstance(n, dict) or id(n) in seen:
            continue  # (`true` evaluates nothing; `false` lets nothing through anyway)
        seen.add(id(n))
        out.append(n)
        if dynamic & n.keys():
            return None
        todo += list(n["allOf"]) if isinstance(n.get("allOf"), list) else []
        if isinstance(n.get("$ref"), str):
            try:
                todo.append(resolver.resolve(n["$ref"], "")[0])
            except SpecError:
                return None  # (the compiler names the reference)
    return out


def _evaluated(closure: list[dict[str, Any]], kind: str, legacy_items: bool) -> Any:
    """What the schemas of ``closure`` evaluate: `_ALL`, or (names, patterns) of members, or
    the number of leading items."""
    others = closure[1:]
    if kind == "properties":
        if any("additionalProperties" in n for n in closure) or any("unevaluatedProperties" in n for n in others):
            return _ALL
        names = [k for n in closure if isinstance(n.get("properties"), dict) for k in n["properties"]]
        patterns = [k for n in closure if isinstance(n.get("patternProperties"), dict) for k in n["patternProperties"]]
        return list(dict.fromkeys(names)), list(dict.fromkeys(patterns))
    if any("unevaluatedItems" in n for n in others) or any(  # (`additionalItems` acts after an `items` list only)
            isinstance(n.get("items"), (dict, bool)) or "additionalItems" in n and isinstance(n.get("items"), list)
            for n in closure):
        return _ALL
    key = "items" if legacy_items else "prefixItems"
    return max([len(n[key]) for n in closure if isinstance(n.get(key), list)] or [0])


def _rewrite(out: dict[str, Any], keyword: str, closure: list[dict[str, Any]] | None,
             legacy_items: bool) -> None:
    """Replace ``out[keyword]`` by what it means, where ``closure`` fixes that."""
    if closure is None:
        return  # (kept: refused by the compiler, naming it)
    kind = "properties" if keyword == "unevaluatedProperties" else "items"
    rest = out.pop(keyword)
    evaluated = _evaluated(closure, kind, legacy_items)
    if evaluated == _ALL or rest is True or rest == {}:
        return
    alone = len(closure) == 1  # (no `allOf`, no `$ref`: the node's own keyword says it)
    if kind == "properties":
        names, patterns = evaluated
        if alone:
            out["additionalProperties"] = rest
            return
        branch = {"properties": dict.fromkeys(names, True), "patternProperties": dict.fromkeys(patterns, True),
                  "additionalProperties": rest}
    elif legacy_items:
        branch = {"items": [True] * evaluated, "additionalItems": rest} if evaluated else {"items": rest}
    else:
        branch = {"prefixItems": [True] * evaluated, "items": rest} if evaluated else {"items": rest}
    if alone:  # (the node's own items, if any, are the evaluated ones)
        out["additionalItems" if legacy_items and evaluated else "items"] = rest
        return
    out["allOf"] = [*out.get("allOf", []), branch]
