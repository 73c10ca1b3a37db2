"""`unevaluatedProperties` and `unevaluatedItems` read as the `additionalProperties`/`items`
they mean, before the compiler sees them.

An object member is *evaluated* by the `properties`, `patternProperties` and
`additionalProperties` of the schemas that apply at its object's place and succeed; the
unevaluated members must match `unevaluatedProperties` (U). Where those schemas are the node's
own keywords, its `allOf` branches and its `$ref` targets (all must succeed for the node to),
the evaluated names are fixed: their properties and patterns, or everything where one of them has
`additionalProperties` (or an `unevaluatedProperties` of its own). The keyword is then the
further `allOf` branch ``closed(names) = {"properties": {names: true}, "patternProperties":
{patterns: true}, "additionalProperties": U}`` (with no `allOf` or `$ref`, the node's own
`additionalProperties`). Items the same way, with the longest `prefixItems` (2019-09: an
`items` list) and `items`/`additionalItems`.

One `oneOf`, `anyOf` (up to `MAX_ANY_OF` branches), `if` or `dependentSchemas` (up to
`MAX_ANY_OF` members; objects only, so it evaluates no item) among those schemas adds the names
of the branches that succeed. Since ``closed`` of fewer names is the stricter, "closed under the
succeeding branches' names" is "some succeeding branches S, with closed(base + names of S)":

    oneOf [B1..Bn]    ->  anyOf [B_i and closed(base + B_i)]            (oneOf keeps "exactly one")
    anyOf [B1..Bn]    ->  anyOf [all of S and closed(base + S)], S a nonempty subset
    if I then T else E ->  if I then closed(base + I + T) else closed(base + E)
    dependentSchemas {a: A, ...} -> anyOf [required K and closed(base + A for a in K)], K a subset

Beside two of those, `contains` (for items), a dynamic reference, or a branch that itself has
one, the keyword is kept and the compiler refuses it, naming its path.
"""
from __future__ import annotations

from itertools import combinations
from typing import Any

from .....errors import SpecError
from .uris import Resolver
from .walk import declared_draft, rebuilt, schema_nodes

__all__ = ["read_unevaluated", "MAX_ANY_OF"]

# Keywords that make what a node's schemas evaluate depend on the instance
_DYNAMIC = frozenset({"anyOf", "oneOf", "if", "dependentSchemas", "$dynamicRef", "$recursiveRef"})
_BRANCHING = ("oneOf", "anyOf", "if", "dependentSchemas")  # (the ones read here, one in all)
# An `anyOf` (`dependentSchemas`) beside unevaluated* is one branch per subset of its branches
# (members): at most 2^4
MAX_ANY_OF = 4
_ALL = "all"  # every member (item) is evaluated: the keyword has nothing to see

Closure = tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]


def read_unevaluated(schema: Any) -> Any:
    """``schema`` with each `unevaluatedProperties`/`unevaluatedItems` read here written as what
    it means (module doc); the schema itself where there is none."""
    if not isinstance(schema, dict) or not any(
            "unevaluatedProperties" in n or "unevaluatedItems" in n for n, _, _ in schema_nodes(schema)):
        return schema
    reading = _Reading(Resolver(schema, "json_schema"), legacy_items=declared_draft(schema) == 2019)

    def finish(node: dict[str, Any], out: dict[str, Any], path: str, flag: bool) -> None:
        for keyword, kind in (("unevaluatedProperties", "properties"), ("unevaluatedItems", "items")):
            if keyword in node:
                reading.rewrite(node, out, keyword, kind)

    return rebuilt(schema, finish=finish)


class _Reading:
    def __init__(self, resolver: Resolver, legacy_items: bool):
        self.resolver = resolver
        self.legacy_items = legacy_items  # 2019-09: an `items` list and `additionalItems`

    def rewrite(self, node: dict[str, Any], out: dict[str, Any], keyword: str, kind: str) -> None:
        """Replace ``out[keyword]`` by what it means, where that is read here (else kept)."""
        closure = self._closure(node, kind)
        if closure is None:
            return
        static, branching = closure
        rest = out[keyword]
        base = self._evaluated(static[1:], static, kind)
        if base == _ALL or rest is True or rest == {}:
            del out[keyword]
            return
        if not branching and len(static) == 1:  # (no `allOf`, no `$ref`: the node's own keyword)
            del out[keyword]
            if kind == "properties":
                out["additionalProperties"] = rest
            else:  # (after the node's own leading items, if any)
                out["additionalItems" if self.legacy_items and base else "items"] = rest
            return
        added = self._closed(base, rest, kind) if not branching else self._branching(branching[0], base, rest, kind)
        if added is None:
            return
        del out[keyword]
        out["allOf"] = [*out.get("allOf", []), added]

    def _closure(self, node: dict[str, Any], kind: str) -> Closure | None:
        """(``node`` and the schemas that apply at its place whatever the instance: `allOf`
        branches, `$ref` targets, theirs in turn; [(keyword, owner)] of the one branching
        keyword among them, if any); None where it cannot be read here."""
        # (`dependentSchemas` applies to objects only: no item is evaluated by it)
        dynamic = _DYNAMIC - {"dependentSchemas"} | {"contains"} if kind == "items" else _DYNAMIC
        static: list[dict[str, Any]] = []
        branching: list[tuple[str, dict[str, Any]]] = []
        todo: list[Any] = [node]
        seen: set[int] = set()
        while todo:
            n = todo.pop()
            if not isinstance(n, dict) or id(n) in seen:
                continue  # (`true` evaluates nothing; `false` lets nothing through anyway)
            seen.add(id(n))
            static.append(n)
            found = sorted(dynamic & n.keys())
            if any(k not in _BRANCHING for k in found) or len(branching) + len(found) > 1:
                return None
            branching += [(k, n) for k in found]
            todo += list(n["allOf"]) if isinstance(n.get("allOf"), list) else []
            if isinstance(n.get("$ref"), str):
                try:
                    todo.append(self.resolver.resolve(n["$ref"], "")[0])
                except SpecError:
                    return None  # (the compiler names the reference)
        return static, branching

    def _branch(self, sub: Any, kind: str) -> Any:
        """What a branch evaluates where it succeeds; None where that is not fixed."""
        closure = self._closure(sub, kind) if isinstance(sub, dict) else ([], [])
        if closure is None or closure[1]:
            return None
        return self._evaluated(closure[0], closure[0], kind)

    def _evaluated(self, others: list[dict[str, Any]], closure: list[dict[str, Any]], kind: str) -> Any:
        """What ``closure`` evaluates: `_ALL`, (names, patterns) of members, or the number of
        leading items (``others``: the schemas whose own unevaluated* counts)."""
        if kind == "properties":
            if any("additionalProperties" in n for n in closure) or any("unevaluatedProperties" in n for n in others):
                return _ALL
            names = [k for n in closure if isinstance(n.get("properties"), dict) for k in n["properties"]]
            pats = [k for n in closure if isinstance(n.get("patternProperties"), dict) for k in n["patternProperties"]]
            return list(dict.fromkeys(names)), list(dict.fromkeys(pats))
        if any("unevaluatedItems" in n for n in others) or any(  # (`additionalItems` acts after an `items` list only)
                isinstance(n.get("items"), (dict, bool)) or "additionalItems" in n and isinstance(n.get("items"), list)
                for n in closure):
            return _ALL
        key = "items" if self.legacy_items else "prefixItems"
        return max([len(n[key]) for n in closure if isinstance(n.get(key), list)] or [0])

    def _closed(self, evaluated: Any, rest: Any, kind: str) -> Any:
        """The schema "what ``evaluated`` leaves out matches ``rest``" (`true` for everything)."""
        if evaluated == _ALL:
            return True
        if kind == "properties":
            names, pats = evaluated
            return {"properties": dict.fromkeys(names, True), "patternProperties": dict.fromkeys(pats, True),
                    "additionalProperties": rest}
        if self.legacy_items:
            return {"items": [True] * evaluated, "additionalItems": rest} if evaluated else {"items": rest}
        return {"prefixItems": [True] * evaluated, "items": rest} if evaluated else {"items": rest}

    @staticmethod
    def _as_branch(closed: Any) -> dict[str, Any]:
        return {} if closed is True else closed

    def _union(self, parts: list[Any]) -> Any:
        if _ALL in parts:
            return _ALL
        if all(isinstance(p, int) for p in parts):
            return max(parts)
        return (list(dict.fromkeys(n for p in parts for n in p[0])), list(dict.fromkeys(x for p in parts for x in p[1])))

    def _branching(self, found: tuple[str, dict[str, Any]], base: Any, rest: Any, kind: str) -> Any:
        """The `allOf` branch for one `oneOf`/`anyOf`/`if`/`dependentSchemas` (module doc); None
        where its branches' own evaluation is not fixed."""
        keyword, owner = found
        if keyword == "dependentSchemas":  # ("if the member is there, then S" per entry)
            deps = owner["dependentSchemas"]
            if not isinstance(deps, dict) or len(deps) > MAX_ANY_OF:
                return None
            evals = [self._branch(sub, kind) for sub in deps.values()]
            if None in evals:
                return None
            names = list(deps)
            return {"anyOf": [{"required": [names[i] for i in pick],
                               **self._as_branch(self._closed(self._union([base, *(evals[i] for i in pick)]), rest, kind))}
                              for k in range(len(names) + 1) for pick in combinations(range(len(names)), k)]}
        if keyword == "if":
            evals = [self._branch(owner.get(k, True), kind) for k in ("if", "then", "else")]
            if None in evals:
                return None
            return {"if": owner["if"], "then": self._closed(self._union([base, evals[0], evals[1]]), rest, kind),
                    "else": self._closed(self._union([base, evals[2]]), rest, kind)}
        subs = owner[keyword]
        if not isinstance(subs, list) or not subs or (keyword == "anyOf" and len(subs) > MAX_ANY_OF):
            return None
        evals = [self._branch(s, kind) for s in subs]
        if None in evals:
            return None
        picks = [(i,) for i in range(len(subs))] if keyword == "oneOf" else \
            [s for k in range(1, len(subs) + 1) for s in combinations(range(len(subs)), k)]
        return {"anyOf": [{"allOf": [*(subs[i] for i in pick),
                                     self._closed(self._union([base, *(evals[i] for i in pick)]), rest, kind)]}
                          for pick in picks]}
