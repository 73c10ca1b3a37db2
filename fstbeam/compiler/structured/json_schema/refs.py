"""Which subschemas a JSON Schema compile meets more than once: `$ref` targets (how many
`$ref`s point at each, and which recurse) and the values of keywords that an object or array
applies once per member (`additionalProperties`, `items`, ...). `SchemaCompiler` caches the
automata of those nodes only, and unrolls the recursive ones (`Unrolling`) as deep as the
depth rule says (`DepthRule`, docs/structured.md, Depth: a given ``max_depth`` everywhere, or
the default rule, 3 with a 4th level where it is cheap), with the growth guard that stops a
level of recursion before it outgrows ``max_states``.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pynini

from ....errors import SpecError
from .location import Location, Resolver
from .reading import schema_nodes

__all__ = ["recursive_targets", "repeated_nodes", "Unrolling", "RecursionReach", "PossibleTypes",
           "DepthRule", "TooDeep", "unrolled_body"]


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
    (`DepthRule.free`; 0 once below them, and always 0 at a given max_depth)."""

    left: int
    here: frozenset[int] = frozenset()
    fresh: bool = True  # descended since the last counted entry (or none yet)
    top: int = 0
    # Where another `allOf` branch leaves a member free (nesting at most its free depth), the
    # product keeps only that much of this branch's value: ``cut`` is the most this value may
    # nest and still matter (None: no bound), ``member_cuts`` the bounds of the members of the
    # object at this level (`cut_members`). Built with them, a value is the same on every text
    # nesting within the bound, so the product is too (travis's `matrix` and `jobs` hold whole
    # jobs that the root `job` branch cut at depth 3: 12 M arcs built, then dropped).
    cut: int | None = None
    member_cuts: tuple[tuple[str, int], ...] = ()

    def enter(self, target: int) -> Unrolling | None:
        """The budget inside recursive ``target``; None past the limit."""
        if self.fresh or target in self.here:
            return replace(self, left=self.left - 1, here=frozenset({target}), fresh=False) \
                if self.left > 0 else None
        return replace(self, here=self.here | {target}, fresh=False)

    def below_top(self) -> Unrolling:
        """The same budget without the top levels' deeper free values (a combinator's branches:
        their automata are multiplied, so deeper free values cost more than their own size)."""
        return self if not self.top else replace(self, top=0)

    def inside(self, member: str | None = None) -> Unrolling:
        """The budget of a member's (named ``member``) or item's value (one instance level down)."""
        top = max(self.top - 1, 0)
        cut = None if self.cut is None else self.cut - 1
        for name, bound in self.member_cuts if member is not None else ():
            if name == member:
                cut = bound if cut is None else min(cut, bound)
        return Unrolling(self.left, top=top, cut=cut)  # (a fresh level, no member bounds)

    def cut_members(self, bounds: dict[str, int]) -> Unrolling:
        """The budget of a value whose object members named in ``bounds`` matter only to that
        nesting (their values are met with free values of that depth)."""
        return replace(self, member_cuts=tuple(sorted(bounds.items()))) if bounds else self

    def free_depth(self, depth: int) -> int:
        """A free value's ``depth`` within the cut."""
        return depth if self.cut is None else max(min(depth, self.cut), 0)

    @property
    def scalars_only(self) -> bool:
        """No object or array nests within the cut."""
        return self.cut is not None and self.cut <= 0


def repeated_nodes(root: Any) -> set[int]:
    """The ids of subschemas that one object or array may compile several times (the value of
    `additionalProperties`, `patternProperties`, `items`, ...: once per member or slot)."""
    out: set[int] = set()
    for node, _, _ in schema_nodes(root):
        out.update(id(node[k]) for k in ("additionalProperties", "items", "additionalItems", "contains", "propertyNames")
                   if k in node)
        if isinstance(node.get("patternProperties"), dict):
            out.update(id(x) for x in node["patternProperties"].values())
    return out


def recursive_targets(root: Any, resolver: Resolver) -> tuple[set[int], dict[int, int]]:
    """The ids of $ref targets that can reach a $ref to themselves (recursion to unroll), and
    the number of $refs to each target."""
    edges: dict[int, set[int]] = {}
    targets: dict[int, Any] = {}
    count: dict[int, int] = {}

    def refs_in(node: Any, acc: set[int]) -> None:
        for x, _, _ in schema_nodes(node):
            ref = x.get("$ref")
            if not isinstance(ref, str):
                continue
            try:
                t = resolver.resolve(ref, "")[0]
            except SpecError:
                continue
            acc.add(id(t))
            targets[id(t)] = t
            if counting:  # the walk of the whole document counts each $ref once
                count[id(t)] = count.get(id(t), 0) + 1

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


log = logging.getLogger("fstbeam")


class TooDeep(Exception):
    """One more level of recursion at ``path`` would pass `max_states`: unroll ``turns``."""

    def __init__(self, turns: int, path: str, states: int):
        super().__init__(path)
        self.turns, self.path, self.states = turns, path, states


#: the most a level of recursion is taken to grow by out of the innermost level (a level is at
#: most its own body plus a copy of the level inside at each place the definition recurs)
INNERMOST_GROWTH = 16


class DepthRule:
    """The depths of one compile. ``defaults``: `JSON_SCHEMA_DEFAULTS` (read once, here)."""

    def __init__(self, schema: Any, max_depth: int | None, *, beside_words: bool,
                 defaults: Mapping[str, Any]):
        self.default = max_depth is None  # the default rule
        self.max_depth = defaults["max_depth"] if max_depth is None else max_depth
        deeper = self.default and not beside_words  # a word list's free text doubles per level too
        self.top_depth = max(self.max_depth, defaults["top_free_depth"]) if deeper else self.max_depth
        self.top_levels = defaults["top_levels"] if deeper else 0
        # every free value of the top levels, not only those the schema writes: a large schema's
        # (the extra level adds ~670 states per place, up to 1.6x a small schema's compile)
        self.top_all = deeper and declared_properties(schema) >= defaults["top_free_properties"]
        self.deeper_recursion = defaults["deeper_recursion"]
        self.deeper_recursion_states = defaults["deeper_recursion_states"]
        # levels of recursion unrolled (max_depth, fewer where `check_growth` says so), and the
        # automaton size of each recursive target per level
        self.turns = self.max_depth
        self._sizes: dict[tuple[Any, ...], dict[int, int]] = {}

    def free(self, rdepth: Unrolling, written: bool) -> int:
        """How deep a free value that starts here nests: `top_depth` in the top levels where
        the schema writes it (``written``) or where every free value there takes it."""
        return self.top_depth if rdepth.top and (written or self.top_all) else self.max_depth

    def check_growth(self, key: tuple[Any, ...], path: str, rdepth: Unrolling, states: int,
                     max_states: int) -> None:
        """Stop before a level of recursion that would outgrow ``max_states``: each level copies
        the one inside it into every place the definition recurs; the next level's size is
        predicted from the growth of the last (hayson's `dict`: 32,000 states at the second
        level, 420,000 at the third, a fourth predicted at 5.5 million: three are kept).
        ``key``: the recursive target's node, location view and level entries."""
        sizes = self._sizes.setdefault(key, {})
        sizes[rdepth.left] = n = states
        inner = sizes.get(rdepth.left - 1)
        if not inner or rdepth.left + 1 >= self.turns:
            return
        growth = n / inner
        if rdepth.left == 1:
            # The innermost level (left 0) holds no recursion, so the growth out of it overstates
            # the next (hayson's `dict`: 57x from level 0 to 1, 13x from 1 to 2): held against 4x
            # the limit. Where that level is nearly empty the growth says nothing (o55244's
            # `testGroup`, flexible whitespace: 4 -> 7,648 states, 1,912x, then 2.2x): a level
            # that `INNERMOST_GROWTH` copies of itself keep under the limit is unrolled too.
            bounded = n * min(growth, INNERMOST_GROWTH)
            if n * growth > 4 * max_states and bounded > max_states:
                raise TooDeep(2, path, int(bounded))
        elif n * growth > max_states:
            raise TooDeep(rdepth.left + 1, path, int(n * growth))


def unrolled_body(c: Any, loc: Location) -> pynini.Fst:
    """``c``'s (a `SchemaCompiler`'s) document parts (the root value at ``loc``): recursion unrolled `turns` levels,
    fewer where a level would outgrow `max_states`; under the default rule one level more
    where the document at `max_depth` levels is small."""
    d = c.depth
    body = _body(c, loc)
    if d.default and c.recursive and d.turns == d.max_depth:
        if body.num_states() <= d.deeper_recursion_states:
            return _deeper(c, loc, body)
        # (INFO: the default's extra level is a bonus; max_depth levels are what it promises)
        log.info("%s: recursion unrolled %d levels, not %d (the default's extra level is for "
                    "documents under %s states at %d levels; this one has %s)", c.where, d.turns,
                    d.deeper_recursion, f"{d.deeper_recursion_states:,}", d.turns,
                    f"{body.num_states():,}")
    return body


def _body(c: Any, loc: Location) -> pynini.Fst:
    d = c.depth
    while True:
        try:
            body: pynini.Fst = c.value(c.root, "", loc, Unrolling(d.turns, top=d.top_levels))
            return body
        except TooDeep as err:  # the cache keeps the inner turns: they are not rebuilt
            log.warning("%s: recursion at %s unrolled %d levels, not %d (one more level would "
                        "take about %s states)", c.where, err.path or "/", err.turns, d.turns,
                        f"{err.states:,}")
            d.turns = err.turns


def _deeper(c: Any, loc: Location, body: pynini.Fst) -> pynini.Fst:
    """The default rule's extra recursion level for a small document (``body``: its parts at
    `max_depth` levels); ``body`` itself where that level would outgrow `max_states`."""
    d = c.depth
    d.turns = max(d.max_depth, d.deeper_recursion)
    try:
        out: pynini.Fst = c.value(c.root, "", loc, Unrolling(d.turns, top=d.top_levels))
        log.info("%s: recursion unrolled %d levels (the document had %d states at %d)", c.where,
                 d.turns, body.num_states(), d.max_depth)
        return out
    except TooDeep as err:
        log.info("%s: recursion at %s unrolled %d levels, not %d (one more level would take "
                    "about %s states)", c.where, err.path or "/", d.max_depth, d.turns,
                    f"{err.states:,}")
        d.turns = d.max_depth
        return body


def declared_properties(root: Any) -> int:
    """The members that ``root``'s `properties` keywords declare, each subschema counted once."""
    seen: set[int] = set()
    n = 0
    for node, _, _ in schema_nodes(root):
        if id(node) not in seen:
            seen.add(id(node))
            props = node.get("properties")
            n += len(props) if isinstance(props, dict) else 0
    return n
