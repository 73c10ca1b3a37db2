"""Which subschemas a JSON Schema compile meets more than once: `$ref` targets (how many
`$ref`s point at each, and which recurse) and the values of keywords that an object or array
applies once per member (`additionalProperties`, `items`, ...). `SchemaCompiler` caches the
automata of those nodes only, and unrolls the recursive ones (`Unrolling`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import SpecError
from .json_location import Resolver

__all__ = ["recursive_targets", "repeated_nodes", "Unrolling", "RecursionReach", "PossibleTypes"]


@dataclass(frozen=True)
class Unrolling:
    """How much `$ref` recursion a compile path may still unroll: ``left`` more instance levels
    that enter a recursive definition. An entry is counted once per level of the instance (an
    object member or array item deeper than the last counted entry): `$ref`s that stay at one
    place (`testGroup -> item -> group`, a `oneOf` of `$ref`s, an `allOf` alias) are free, so a
    cycle through several definitions is not cut before its first nested value (counting every
    `$ref` hop cut hayson's `hval -> grid -> gridMeta -> dict` at once). ``here``: the recursive
    targets entered at this level since the last counted entry; entering one of them again
    without descending (an in-place cycle) is counted too, so every path ends. ``top``: the
    instance levels, from here down, whose free values take the default's deeper nesting
    (`SchemaCompiler.free_depth`; 0 once below them, and always 0 at a given max_depth)."""

    left: int
    here: frozenset[int] = frozenset()
    fresh: bool = True  # descended since the last counted entry (or none yet)
    top: int = 0

    def enter(self, target: int) -> Unrolling | None:
        """The budget inside recursive ``target``; None past the limit."""
        if self.fresh or target in self.here:
            return Unrolling(self.left - 1, frozenset({target}), False, self.top) \
                if self.left > 0 else None
        return Unrolling(self.left, self.here | {target}, False, self.top)

    def below_top(self) -> Unrolling:
        """The same budget without the top levels' deeper free values (a combinator's branches:
        their automata are multiplied, so deeper free values cost more than their own size)."""
        return self if not self.top else Unrolling(self.left, self.here, self.fresh)

    def inside(self) -> Unrolling:
        """The budget of a member's or item's value (one instance level down)."""
        top = max(self.top - 1, 0)
        if self.fresh and not self.here:
            return self if top == self.top else Unrolling(self.left, top=top)
        return Unrolling(self.left, top=top)


def repeated_nodes(root: Any) -> set[int]:
    """The ids of subschemas that one object or array may compile several times (the value of
    `additionalProperties`, `patternProperties`, `items`, ...: once per member or slot)."""
    out: set[int] = set()

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for v in node:
                walk(v)
            return
        if not isinstance(node, dict):
            return
        for k, v in node.items():
            if k in ("enum", "const", "default", "examples"):
                continue
            if k in ("additionalProperties", "items", "additionalItems", "contains",
                     "propertyNames"):
                out.add(id(v))
            elif k == "patternProperties" and isinstance(v, dict):
                out.update(id(x) for x in v.values())
            walk(v)

    walk(root)
    return out


def recursive_targets(root: Any, resolver: Resolver) -> tuple[set[int], dict[int, int]]:
    """The ids of $ref targets that can reach a $ref to themselves (recursion to unroll), and
    the number of $refs to each target."""
    edges: dict[int, set[int]] = {}
    targets: dict[int, Any] = {}
    count: dict[int, int] = {}

    def refs_in(node: Any, acc: set[int]) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                try:
                    t = resolver.resolve(ref, "")[0]
                except SpecError:
                    t = None
                if t is not None:
                    acc.add(id(t))
                    targets[id(t)] = t
                    if counting:  # the walk of the whole document counts each $ref once
                        count[id(t)] = count.get(id(t), 0) + 1
            for k, v in node.items():
                if k not in ("enum", "const", "default", "examples"):
                    refs_in(v, acc)
        elif isinstance(node, list):
            for v in node:
                refs_in(v, acc)

    counting = True
    refs_in(root, set())
    counting = False
    todo = list(targets)
    while todo:
        t = todo.pop()
        if t in edges:
            continue
        edges[t] = set()
        refs_in(targets[t], edges[t])
        todo.extend(x for x in edges[t] if x not in edges)
    reach: dict[int, set[int]] = {}
    for start in edges:
        seen: set[int] = set()
        stack = list(edges[start])
        while stack:
            x = stack.pop()
            if x not in seen:
                seen.add(x)
                stack.extend(edges.get(x, ()))
        reach[start] = seen
    return {t for t in edges if t in reach[t]}, count


class RecursionReach:
    """Whether a subschema can reach a recursive `$ref` target (through its own subschemas and
    the `$ref`s in them). Only such a node's automaton depends on its `Unrolling`: the others
    are compiled once whatever the recursion budget left where they are met (circleci's
    executor `oneOf` was built once per level of its recursive `jobs`: 5 copies, 20 CPU-s)."""

    def __init__(self, resolver: Resolver, recursive: set[int]):
        self.resolver = resolver
        self.recursive = recursive
        self._memo: dict[int, bool] = {}

    def __call__(self, node: Any) -> bool:
        if not isinstance(node, (dict, list)):
            return False
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = True  # while in progress: a cycle says "maybe" (the exact, slower way)
        self._memo[key] = out = self._walk(node)
        return out

    def _walk(self, node: Any) -> bool:
        if isinstance(node, list):
            return any(self(v) for v in node)
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                target = self.resolver.resolve(ref, "")[0]
            except SpecError:
                target = None  # refused where it is compiled
            if target is not None and (id(target) in self.recursive or self(target)):
                return True
        # every member, `enum` and `default` values too: a property may be named "default"
        # (circleci's step parameters), and a false "maybe" only costs a rebuild
        return any(self(v) for v in node.values())


_KINDS = frozenset({"object", "array", "other"})


def _kind(name: Any) -> str:
    return name if name in ("object", "array") else "other"


class PossibleTypes:
    """Which kinds of value (object, array, other) a subschema's automaton can hold, from its
    `type`, `enum`/`const`, `$ref` and combinators (a superset: `not` and `if` say nothing).
    `SchemaCompiler` keys a cached automaton on only the parts of its location that those
    kinds read (`Location.view`)."""

    def __init__(self, resolver: Resolver):
        self.resolver = resolver
        self._memo: dict[int, frozenset[str]] = {}

    def of(self, node: Any) -> frozenset[str]:
        if node is False:
            return frozenset()
        if not isinstance(node, dict):
            return _KINDS
        key = id(node)
        if key not in self._memo:
            self._memo[key] = _KINDS  # while in progress: a cycle says "any"
            self._memo[key] = self._walk(node)
        return self._memo[key]

    def _target(self, node: dict[str, Any]) -> frozenset[str]:
        try:
            return self.of(self.resolver.resolve(node["$ref"], "")[0])
        except SpecError:
            return _KINDS  # refused where it is compiled

    def _walk(self, node: dict[str, Any]) -> frozenset[str]:
        has_ref = isinstance(node.get("$ref"), str)
        if has_ref and self.resolver.ref_alone:
            return self._target(node)  # drafts 3-7: the keywords beside it are ignored
        out = _KINDS
        t = node.get("type")
        if isinstance(t, (str, list)):
            out = frozenset(_kind(n) for n in (t if isinstance(t, list) else [t]))
            if node.get("nullable") is True:
                out |= {"other"}
        values = [node["const"]] if "const" in node else node.get("enum")
        if isinstance(values, list):
            out &= frozenset("object" if isinstance(v, dict) else "array"
                             if isinstance(v, list) else "other" for v in values)
        if has_ref:
            out &= self._target(node)
        subs = node.get("allOf")
        for sub in subs if isinstance(subs, list) else []:
            out &= self.of(sub)
        for kw in ("anyOf", "oneOf"):
            subs = node.get(kw)
            if isinstance(subs, list) and subs:
                out &= frozenset().union(*(self.of(sub) for sub in subs))
        return out
