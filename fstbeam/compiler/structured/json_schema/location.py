"""Where a schema applies in an instance, and the property order that follows from it.

Every object is written with its *location's* keys first, in order, then any other keys.
A location is the set of schema nodes that apply to one place of an instance: the node itself
and everything it reaches without moving in the instance (`$ref`, `allOf`, `anyOf`, `oneOf`,
`not`, `if`/`then`/`else`, `dependentSchemas`). Its keys are the `properties` of those nodes in
document order, then `required` and `dependentRequired` names not among them. Since every
branch of an `anyOf` or `not` at one location orders keys the same way, intersections and
complements of their automata are exact. `order_instance` writes an instance in that order: the
serialization that the compiled automaton accepts (and that the benchmark feeds every engine).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ....errors import SpecError
from .reading import IN_PLACE_KEYWORDS, Resolver, for_draft

if TYPE_CHECKING:
    import pynini

__all__ = ["Resolver", "Location", "order_instance", "IN_PLACE_KEYWORDS"]


def expand(nodes: list[Any], resolver: Resolver) -> list[Any]:
    """The nodes and everything they apply in place, in document order, once each."""
    out: list[Any] = []
    seen: set[int] = set()

    def visit(node: Any) -> None:
        if not isinstance(node, dict) or id(node) in seen:
            return
        seen.add(id(node))
        out.append(node)
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                visit(resolver.resolve(ref, "")[0])
            except SpecError:
                pass  # reported where the node is compiled
        for key in IN_PLACE_KEYWORDS:
            v = node.get(key)
            for sub in v if isinstance(v, list) else [v]:
                visit(sub)
        for key in ("dependentSchemas", "dependencies"):
            v = node.get(key)
            if isinstance(v, dict):
                for sub in v.values():
                    visit(sub)

    for n in nodes:
        visit(n)
    return out


class Location:
    """The schema nodes that apply to one place of an instance, and its key order."""

    def __init__(self, nodes: list[Any], resolver: Resolver):
        self.resolver = resolver
        self.group = expand(nodes, resolver)
        # only the nodes that give keys or children tell locations apart: a definition met
        # through many `{"$ref": ...}` wrappers is one location (compiled once)
        self.key = tuple(id(n) for n in self.group if _SHAPING & n.keys())
        keys: dict[str, None] = {}
        later: dict[str, None] = {}
        # object and array values of const/enum here: their keys order objects too
        self.consts: list[Any] = []
        for n in self.group:
            self.consts += [n["const"]] if "const" in n else []
            self.consts += n["enum"] if isinstance(n.get("enum"), list) else []
        self.consts = [v for v in self.consts if isinstance(v, (dict, list))]
        for n in self.group:
            props = n.get("properties")
            if isinstance(props, dict):
                keys.update(dict.fromkeys(props))
            req = n.get("required")
            if isinstance(req, list):
                later.update(dict.fromkeys(r for r in req if isinstance(r, str)))
            for dep in ("dependentRequired", "dependentSchemas", "dependencies"):
                v = n.get(dep)
                if isinstance(v, dict):
                    for k, names in v.items():
                        later[k] = None
                        if isinstance(names, list):
                            later.update(dict.fromkeys(names))
        for v in self.consts:
            if isinstance(v, dict):
                keys.update(dict.fromkeys(v))
        keys.update(later)
        self.keys: tuple[str, ...] = tuple(keys)
        self._children: dict[Any, Location] = {}

    def view(self, objects: bool, arrays: bool) -> tuple[Any, ...]:
        """What a node's automaton here reads of this location when its values can only be
        objects where ``objects`` and arrays where ``arrays``: an object reads the keys and
        the members' locations, an array its items' location (travis's `deployment`, met as
        `deploy` and as an item of it, is one automaton, not two)."""
        if objects and arrays:
            return self.key
        out: tuple[Any, ...] = ()
        if objects:
            out = (self.keys, tuple(self.prop(k).key for k in self.keys), self.extra().key)
        if arrays:
            out += (self.items().key,)
        return out

    def shape(self, depth: int) -> tuple[Any, ...]:
        """What the free value of this location depends on, ``depth`` levels down: two
        locations of one shape share one automaton."""
        if depth <= 0:
            return ()
        return (self.keys, self.items().shape(depth - 1), self.extra().shape(depth - 1),
                tuple(self.prop(k).shape(depth - 1) for k in self.keys))

    def _child(self, tag: Any, nodes: Iterator[Any]) -> Location:
        if tag not in self._children:
            self._children[tag] = Location(list(nodes), self.resolver)
        return self._children[tag]

    def prop(self, name: str) -> Location:
        """Where the value of property ``name`` sits."""
        def nodes() -> Iterator[Any]:
            for n in self.group:
                props = n.get("properties")
                if isinstance(props, dict) and name in props:
                    yield props[name]
                elif isinstance(n.get("additionalProperties"), dict):
                    yield n["additionalProperties"]
                yield from _dict_values(n.get("patternProperties"))
            inner = [v[name] for v in self.consts if isinstance(v, dict) and name in v]
            if inner:
                yield {"enum": inner}
        return self._child(("p", name), nodes())

    def extra(self) -> Location:
        """Where the value of an undeclared property sits."""
        def nodes() -> Iterator[Any]:
            for n in self.group:
                yield from _dict_values(n.get("patternProperties"))
                if isinstance(n.get("additionalProperties"), dict):
                    yield n["additionalProperties"]
        return self._child("x", nodes())

    def items(self) -> Location:
        """Where every array item sits (all positions share one location)."""
        def nodes() -> Iterator[Any]:
            for n in self.group:
                for key in ("prefixItems", "items", "additionalItems", "contains"):
                    v = n.get(key)
                    yield from v if isinstance(v, list) else [v]
            inner = [x for v in self.consts if isinstance(v, list) for x in v]
            if inner:
                yield {"enum": inner}
        return self._child("i", nodes())


# the keywords that `Location` reads: keys, their order and the child locations
_SHAPING = {"const", "enum", "properties", "required", "dependentRequired", "dependentSchemas",
            "dependencies", "additionalProperties", "patternProperties", "prefixItems", "items",
            "additionalItems", "contains"}


def _dict_values(v: Any) -> list[Any]:
    return list(v.values()) if isinstance(v, dict) else []


def order_instance(schema: Mapping[str, Any] | bool, instance: Any) -> Any:
    """``instance`` with every object's keys in the order `json_schema_fst` writes them: the
    location's keys first, in order, then the others as they were. Serialize the result with
    ``json.dumps(..., separators=(",", ":"), ensure_ascii=False)``."""
    schema = for_draft(schema)[0]  # (as the compiler reads it: keywords of later drafts left out)
    resolver = Resolver(schema, "json_schema")
    return _order(Location([schema], resolver), instance)


def _order(loc: Location, value: Any) -> Any:
    if isinstance(value, dict):
        first = [k for k in loc.keys if k in value]
        rest = [k for k in value if k not in set(first)]
        return {k: _order(loc.prop(k) if k in loc.keys else loc.extra(), value[k])
                for k in first + rest}
    if isinstance(value, list):
        inner = loc.items()
        return [_order(inner, v) for v in value]
    return value


class SchemaContext(Protocol):
    """What the value builders (`scalars`, `containers`) use of the schema compiler
    (`json_schema.SchemaCompiler`): declared here so they need not import it (one-way imports)."""

    where: str
    max_depth: int
    draft4: bool
    string_words: pynini.Fst | None
    ws: pynini.Fst
    resolver: Resolver

    def fail(self, keyword: str, path: str, why: str) -> SpecError: ...
    def opt(self, fst: pynini.Fst, path: str) -> pynini.Fst: ...
    def det(self, fst: pynini.Fst, path: str) -> pynini.Fst: ...
    def meet(self, a: pynini.Fst, b: pynini.Fst) -> pynini.Fst: ...
    def synth(self, node: dict[str, Any]) -> dict[str, Any]: ...
    # rdepth: a refs.Unrolling (not imported here: refs imports this module)
    def value(self, node: Any, path: str, loc: Location, rdepth: Any) -> pynini.Fst: ...
    def any_value(self, loc: Location, depth: int, only: str | None = None) -> pynini.Fst: ...
