"""A JSON Schema as one byte automaton (UTF-8) of the JSON texts that validate against it.

`json_schema_fst(schema)` is exact where the schema is regular: combinators are automaton
operations (`allOf` intersection, `anyOf` union, `oneOf` the texts exactly one branch accepts,
`not` difference from the JSON values of the location, `if`/`then`/`else`; inside an object
node, from its own object, `branches`), and `$ref` recursion and free nesting are unrolled
to `max_depth`. A keyword that cannot be honoured is a `SpecError` naming the keyword and its
JSON-pointer path. The rules (property order, whitespace, string escapes, numbers) are in
docs/structured.md, "JSON Schema".
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import pynini

from ....errors import SpecError
from ....fst.optimize import FstSizeError, determinized, optimize, optimize_in_place
from ..exactly_one import exactly_one
from . import branches as jb
from . import complements, containers, free_values, scalars
from .disjoint import context_of, disjoint, join, minimal_once, open_union
from .lexical import empty, lit, union
from .location import Location, Resolver
from .reading import closed_declared, read_as_declared
from .refs import DepthRule, PossibleTypes, RecursionReach, Unrolling, recursive_targets, repeated_nodes, unrolled_body
from .required_choices import bans_other_values, required_choices

__all__ = ["json_schema_fst", "JSON_SCHEMA_DEFAULTS", "UnsupportedSchema"]

log = logging.getLogger("fstbeam")

JSON_SCHEMA_DEFAULTS: dict[str, Any] = {
    # free JSON (`{}`, free properties, untyped items) nests this many arrays/objects deep from
    # where it starts, and recursion this many instance levels (docs/structured.md, Depth)
    "max_depth": 3,
    # where no max_depth is given (None, the doors' default), one level more for the free values
    # that start in the document's top `top_levels` instance levels (the root and its members or
    # items) where the schema writes them (`{}`, `{"type": "object"}`), or all of them there in a
    # schema that declares `top_free_properties` properties or more (not beside a word list, whose
    # free text doubles per level too); and for the recursion of a schema whose document at
    # `max_depth` levels stays under `deeper_recursion_states` (its parts' states)
    "top_free_depth": 4,
    "top_levels": 2,
    "top_free_properties": 20,
    "deeper_recursion": 4,
    "deeper_recursion_states": 20_000,
    "whitespace": "compact",
    # `whitespace="flexible"`: at most this many of space, tab, newline, CR around each token
    "max_whitespace": 8,
    # no automaton along the way may pass this many states
    "max_states": 2_000_000,
}

_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")


class UnsupportedSchema(SpecError):
    """A schema keyword that cannot be compiled to an automaton (names keyword and path)."""

    def __init__(self, message: str, *, keyword: str, path: str):
        super().__init__(message)
        self.keyword, self.path = keyword, path


def json_schema_fst(schema: Mapping[str, Any] | bool | str, *, where: str = "json_schema",
                    max_depth: int | None = None,
                    whitespace: str = "compact", string_words: pynini.Fst | None = None,
                    strict: bool = False) -> pynini.Fst:
    """A minimal deterministic byte acceptor of the JSON texts valid against ``schema``.

    ``schema``: a dict, a bool, or JSON text. Objects are written with their location's
    declared keys first in schema order, then any others (`order_instance`). ``whitespace``:
    ``"compact"`` (none) or ``"flexible"`` (up to ``max_whitespace`` JSON whitespace bytes around
    each token). ``string_words``: a byte acceptor of plain text that free string values (no
    enum, const, pattern or format) must belong to, JSON-escaped. ``max_depth``: free values
    nest that many levels and recursion is unrolled that many (docs/structured.md, Depth); None:
    the default rule (`JSON_SCHEMA_DEFAULTS`: 3, one more at the top and for small recursion).
    ``strict``: only the members and items a schema declares (`reading.closed_declared`)."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as err:
            raise SpecError(f"{where}: the schema is not valid JSON ({err})") from err
    if not isinstance(schema, (dict, bool)):
        raise SpecError(f"{where}: a JSON Schema is an object or a boolean, got "
                        f"{type(schema).__name__}")
    if whitespace not in ("compact", "flexible"):
        raise SpecError(f"{where}: whitespace must be 'compact' or 'flexible', got {whitespace!r}")
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int)
                                  or max_depth < 0):
        raise SpecError(f"{where}: max_depth must be an integer >= 0, got {max_depth!r}")
    schema = read_as_declared(schema, where)  # (keywords its draft lacks left out, with a warning)
    schema = closed_declared(schema, where) if strict else schema
    compiler = SchemaCompiler(schema, where=where, max_depth=max_depth, whitespace=whitespace,
                              string_words=string_words)
    return compiler.document()


class SchemaCompiler:
    """Compiles the nodes of one schema document; sub-automata cached per (node, location,
    recursion budget)."""

    def __init__(self, schema: Any, *, where: str, max_depth: int | None, whitespace: str,
                 string_words: pynini.Fst | None):
        self.root = schema
        self.where = where
        # how deep free values nest and recursion unrolls (max_depth None: the default rule)
        self.depth = DepthRule(schema, max_depth, beside_words=string_words is not None,
                               defaults=JSON_SCHEMA_DEFAULTS)
        self.max_depth = self.depth.max_depth
        self.max_states = JSON_SCHEMA_DEFAULTS["max_states"]
        self.resolver = Resolver(schema, where)
        self.string_words = string_words
        meta = schema.get("$schema", "") if isinstance(schema, dict) else ""
        self.draft4 = isinstance(meta, str) and ("draft-04" in meta or "draft-03" in meta)
        # drafts 3-7: an object with a `$ref` is a reference, its other members no keywords
        self.resolver.ref_alone = isinstance(meta, str) and any(
            f"draft-0{n}" in meta for n in range(3, 8))
        self.whitespace = whitespace
        self.ws = (pynini.closure(scalars.ws_byte(), 0, JSON_SCHEMA_DEFAULTS["max_whitespace"])
                   if whitespace == "flexible" else lit(""))
        self._cache: dict[tuple[Any, ...], pynini.Fst] = {}
        self._opt_memo: dict[int, tuple[pynini.Fst, pynini.Fst]] = {}  # `opt_part`
        self._joined: dict[bytes, pynini.Fst] = {}  # `minimal_once`, by content
        self._keep: list[Any] = []  # synthesized nodes, kept alive so their ids stay unique
        self.recursive, targets = recursive_targets(schema, self.resolver)
        self._reaches = RecursionReach(self.resolver, self.recursive)
        # where recursion is unrolled, its depth follows the parts' state counts (`DepthRule`):
        # every part minimized as built there (`det`, the root's last product), so they stay put
        self.sized = bool(self.recursive)
        self._possible = PossibleTypes(self.resolver)
        # nodes that may be compiled more than once: only their automata are cached (caching
        # every node kept 78 million arcs alive on kb_145, most of them used once and already
        # copied into their parent)
        self._shared = {t for t, n in targets.items() if n > 1} | self.recursive \
            | repeated_nodes(schema)
        # free values accept every key order: the location's order matters only in complements
        self.plain = Location([], self.resolver)

    # -- helpers used by the sibling modules -------------------------------------------------
    def fail(self, keyword: str, path: str, why: str) -> UnsupportedSchema:
        return UnsupportedSchema(f"{self.where}: {keyword} at {path or '/'}: {why}",
                                 keyword=keyword, path=path or "/")

    def opt(self, fst: pynini.Fst, path: str) -> pynini.Fst:
        return self._capped(optimize, fst, path)

    def det(self, fst: pynini.Fst, path: str) -> pynini.Fst:
        """Deterministic, not minimized (but `sized`): what a difference needs of its right operand
        (minecraft-recipe's 8 `if` conditions, ~11k states, nearly minimal: a third of their cost)."""
        return self._capped(optimize if self.sized else determinized, fst, path)

    def _capped(self, step: Callable[..., pynini.Fst], fst: pynini.Fst, path: str) -> pynini.Fst:
        try:
            return step(fst, stage=f"{self.where} {path or '/'}", max_states=self.max_states)
        except FstSizeError as err:
            raise SpecError(f"{self.where}: the automaton at {path or '/'} needs more than {self.max_states:,} "
                            "states; lower json_max_depth or simplify the schema there") from err

    def opt_part(self, fst: pynini.Fst, path: str) -> pynini.Fst:
        """`opt` of a part, once per cached automaton: a shared node's automaton (circleci's
        executor `oneOf`, a branch of `jobs`' `oneOf` at each level of the recursive `orbs`) is
        determinized for each combinator it is an operand of."""
        key = id(fst)
        hit = self._opt_memo.get(key)
        if hit is not None and hit[0] is fst:
            return hit[1]
        out = self.opt(fst, path)
        if any(fst is v for v in self._cache.values()):
            self._opt_memo[key] = (fst, out)  # (the input kept: its id stays its own)
        return out

    def meet(self, a: pynini.Fst, b: pynini.Fst) -> pynini.Fst:
        """The intersection, trimmed (not determinized: structural results stay NFAs until
        an operation needs a DFA, so no subtree is determinized once per level above it)."""
        a = a.copy().arcsort("olabel")
        out = pynini.intersect(a, b.copy().arcsort("ilabel"))
        out.connect()
        return out

    def synth(self, node: dict[str, Any]) -> dict[str, Any]:
        self._keep.append(node)
        return node

    def document(self) -> pynini.Fst:
        loc = Location([self.root], self.resolver)
        t0 = time.process_time()
        body = unrolled_body(self, loc)
        self._opt_memo.clear()
        self._joined.clear()
        self._cache.clear()  # the parts are copied into the body: free them before the largest step
        if self.ws.num_states() > 1:
            body = self.ws + body + self.ws
        t1 = time.process_time()
        parts = body.num_states()
        box = [containers.finish(body)]
        del body  # (the marked body, hundreds of MB on a large schema: not held through `_final`)
        log.info("%s document: parts %.2fs (%d states), commas %.2fs", self.where, t1 - t0,
                 parts, time.process_time() - t1)
        return self._final(box)

    def _final(self, box: list[pynini.Fst]) -> pynini.Fst:
        """The document in ``box`` (taken out of it) as a minimal DFA."""
        try:
            return optimize_in_place(box, stage=f"{self.where} document", max_states=self.max_states)
        except FstSizeError:
            raise SpecError(f"{self.where}: the automaton of the whole document needs more "
                            f"than {self.max_states:,} states at /; lower json_max_depth or simplify "
                            "the schema") from None

    # -- values ------------------------------------------------------------------------------
    def value(self, node: Any, path: str, loc: Location, rdepth: Unrolling) -> pynini.Fst:
        if node is True or (isinstance(node, dict) and jb.is_free(node)):
            # `true` may be an absent keyword's default (additionalProperties): not written
            return self.any_value(self.plain, rdepth.free_depth(self.depth.free(rdepth, written=node is not True)))
        if node is False:
            return empty()
        if not isinstance(node, dict):
            raise SpecError(f"{self.where}: the schema at {path or '/'} is a "
                            f"{type(node).__name__}, not an object or a boolean")
        if id(node) not in self._shared:
            return self._node(node, path, loc, rdepth)
        # the budget tells automata apart only where recursion can be met below (and, under
        # the default rule, where the top levels' free values nest deeper)
        key = (id(node), self._view(node, loc), rdepth if self._reaches(node) else (rdepth.top, rdepth.cut, rdepth.member_cuts))
        if key not in self._cache:
            self._cache[key] = self._node(node, path, loc, rdepth)
            if id(node) in self.recursive:
                self.depth.check_growth((id(node), self._view(node, loc), rdepth.here, rdepth.cut, rdepth.member_cuts), path, rdepth,
                                        self._cache[key].num_states(), self.max_states)
        return self._cache[key]

    def _view(self, node: dict[str, Any], loc: Location) -> tuple[Any, ...]:
        """The part of ``loc`` that ``node``'s automaton depends on (`Location.view`)."""
        types = self._possible.of(node)
        return loc.view("object" in types, "array" in types)

    def any_value(self, loc: Location, depth: int, only: str | None = None) -> pynini.Fst:
        """Every JSON value at ``loc`` to ``depth`` (``only="object"``/``"array"``: those)."""
        key = ("any", loc.shape(depth), depth, only)
        if key not in self._cache:
            self._cache[key] = free_values.free_value(  # shared between compiles
                self, loc, depth, only, key, (self.whitespace, self.ws.num_states(), self.max_states))
        return self._cache[key]

    def _node(self, node: dict[str, Any], path: str, loc: Location,
              rdepth: Unrolling) -> pynini.Fst:
        if self.resolver.ref_alone and isinstance(node.get("$ref"), str) and len(node) > 1:
            node = self.synth({"$ref": node["$ref"]})  # briefcase: `enum` beside `$ref`, draft 7
        for kw, why in jb.REFUSED.items():
            if kw in node:
                raise self.fail(kw, f"{path}/{kw}", why)
        if node.get("nullable") is True and "type" in node:  # OpenAPI 3.0
            t = node["type"]
            node = self.synth({**node, "type": [*(t if isinstance(t, list) else [t]), "null"]})
        types = self._types(node, path, rdepth)
        if jb.COMBINATORS & node.keys():
            # the free values of a node with combinators keep `max_depth` (their automata are
            # met, joined and complemented: GeoJSON o63308's root oneOf of 9 took 23 -> 37 s)
            rdepth = rdepth.below_top()
        parts: list[pynini.Fst] = []
        # a oneOf/anyOf/not that only requires members: a rule inside the node's own object
        rules = required_choices(node, containers.object_slots(node, loc))
        ruled = {kw for kw, _ in rules}
        if any(bans_other_values(kw, sets) for kw, sets in rules):
            types = ("object",)
        ref = node.get("$ref")
        if isinstance(ref, str):
            target, tpath = self.resolver.resolve(ref, f"{path}/$ref")
            inner = rdepth.enter(id(target)) if id(target) in self.recursive else rdepth
            parts.append(self.value(target, tpath, loc, inner) if inner is not None else empty())
        # `not`, `if` and dependent schemas of an object node: inside its own object where the
        # branches merge with it (branches), else against the free values of the location
        inside = types == ("object",) and bool(jb.OBJECT_KEYWORDS & node.keys()) and not {"enum", "const"} & node.keys()
        conds = [(node, path)] if "if" in node and ("then" in node or "else" in node) else []
        reach = self.depth.free(rdepth.inside(), True) if node.get("allOf") else 0  # (a free member's nesting)
        one = jb.merged_all_of(node, self._target, path, reach) if node.get("allOf") else None
        budgets = [rdepth] if one is not None else jb.branch_budgets(node, self._target, path, rdepth, reach)
        for i, sub in enumerate(node.get("allOf") or []) if one is None else ():
            if inside and jb.conditional(sub):  # (an `if` alone: as the node's own)
                conds.append((sub, f"{path}/allOf/{i}"))
            else:
                parts.append(self.value(sub, f"{path}/allOf/{i}", loc, budgets[i + 1]))
        if one is not None:  # objects merged into one (branches)
            parts.append(self.value(self.synth(one), f"{path}/allOf", loc, rdepth))
        if node.get("anyOf") and "anyOf" not in ruled:
            parts.append(join([self.value(s, f"{path}/anyOf/{i}", loc, rdepth)
                               for i, s in enumerate(node["anyOf"])]))
        if node.get("oneOf") and "oneOf" not in ruled:
            parts.append(self._held("oneOf", node, node["oneOf"], loc, rdepth,
                                    lambda: self._one_of(node, f"{path}/oneOf", loc, rdepth)))
        later: list[tuple[Any, Any, Any, str]] = []  # (if, then, else, path), built once `own` is
        if "not" in node and not any(kw.startswith("not ") for kw in ruled):  # (else a rule)
            if inside and jb.mergeable(node, [node["not"]]):
                later.append((node["not"], False, True, f"{path}/not"))  # (not X: if X then false)
            else:
                parts.append(complements.not_value(self, self.value(node["not"], f"{path}/not", loc, rdepth), path, loc, rdepth))
        for cond, where in conds + jb.dependencies(self, node, path, loc):
            subs = [cond["if"], cond.get("then", True), cond.get("else", True)]
            if inside and jb.mergeable(node, subs):
                later.append((*subs, where))
            elif cond is node:
                parts.append(self._held("if", node, subs, loc, rdepth, lambda: complements.if_then_else(self, node, path, loc, rdepth)))
            else:
                parts.append(self.value(cond, where, loc, rdepth))
        # With in-place parts, an unconstrained type is a filter on the first byte (exact at any
        # depth) instead of the depth-limited free value, which would cut the parts' nesting.
        own = self._typed(node, path, loc, budgets[0], types, as_filter=bool(parts or later))
        parts.extend(complements.if_inside(self, node, own, *branches, loc, rdepth) for branches in later)
        out = own if own is not None else parts.pop(0)
        # A product that outgrows its operands is minimized at once: eight if/then branches
        # over one document grew 12k -> 1.7M states as unminimized products, ~35k minimized.
        # (Minimizing every product instead costs a determinization per level above it.) The
        # root's last one is left to the document's (o77304: 107k -> 34k states), unless `sized`.
        last = len(parts) - 1 if node is self.root and not self.sized else -1
        minimal = False  # (``out`` as `opt` left it: not minimized again in `minimal_once`, 2 s of o1184's 54)
        for k, p in enumerate(parts):
            size = out.num_states() + p.num_states()
            out = self.meet(out, p)
            if minimal := out.num_states() > size and k != last:
                out = self.opt(out, path)
        if open_union(node, self._possible.of, self.resolver) and not minimal:
            return minimal_once(out, f"{self.where} {path or '/'}", self.max_states, self._joined)
        return out

    def _held(self, kind: str, node: dict[str, Any], subs: list[Any], loc: Location,
              rdepth: Unrolling, build: Callable[[], pynini.Fst]) -> pynini.Fst:
        """``build()`` (the node's ``kind`` combinator over ``subs``), cached where the node's
        automaton depends on the recursion budget and ``subs`` do not: circleci's `jobs` member
        (whose `steps` recur) was built once per level of the recursive `orbs`, and its executor
        `oneOf` (three branches determinized together) with it, the same each time."""
        # (each sub asked alone: `RecursionReach` memoizes by id, and a list made here is not kept)
        if id(node) not in self._shared or not self._reaches(node) \
                or any(self._reaches(s) for s in subs):
            return build()
        types = frozenset().union(*(self._possible.of(s) for s in subs))
        key = (kind, id(node), loc.view("object" in types, "array" in types), rdepth.top, rdepth.cut, rdepth.member_cuts)
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def _target(self, ref: str, path: str) -> Any:
        """What a `$ref` points to; None where it recurses (unrolled as `$ref`s are)."""
        target = self.resolver.resolve(ref, path)[0]
        return None if id(target) in self.recursive else target

    def _types(self, node: dict[str, Any], path: str, rdepth: Unrolling) -> tuple[str, ...]:
        """The node's types (no object or array where only scalars nest within ``rdepth``'s cut)."""
        t = node.get("type", list(_TYPES))
        names = t if isinstance(t, list) else [t]
        for n in names:
            if n not in _TYPES:
                raise self.fail("type", f"{path}/type", f"unknown type {n!r} (one of "
                                f"{', '.join(_TYPES)})")
        drop = {"integer"} if "number" in names else set()
        return tuple(n for n in names if n not in drop and not (rdepth.scalars_only and n in ("object", "array")))

    def _typed(self, node: dict[str, Any], path: str, loc: Location, rdepth: Unrolling,
               types: tuple[str, ...], as_filter: bool = False) -> pynini.Fst | None:
        """The node's own keywords (type, enum, const and the type-specific ones); None when
        they allow everything and ``as_filter`` (the in-place parts decide alone)."""
        if "const" in node or "enum" in node:
            lang = scalars.listed(self, node, path, loc, types)
            if not jb.has_type_keywords(node):
                return lang
            typed = self._typed({k: v for k, v in node.items() if k not in ("enum", "const")},
                                path, loc, rdepth, types, as_filter=True)
            return lang if typed is None else self.meet(lang, typed)
        if as_filter and len(types) == len(_TYPES) - 1 and not jb.has_type_keywords(node):
            return None
        parts = []
        for t in types:
            if as_filter and t in ("object", "array") and not (
                    jb.OBJECT_KEYWORDS if t == "object" else jb.ARRAY_KEYWORDS) & node.keys():
                parts.append(containers.starts_with("{" if t == "object" else "["))
                continue
            if not as_filter and t in ("object", "array") and not jb.has_type_keywords(node):
                parts.append(self.any_value(self.plain, rdepth.free_depth(self.depth.free(rdepth, "type" in node)),
                                            only=t))
                continue
            if t == "null":
                parts.append(lit("null"))
            elif t == "boolean":
                parts.append(lit("true") | lit("false"))
            elif t in ("number", "integer"):
                parts.append(scalars.number(self, node, path, integer=t == "integer"))
            elif t == "string":
                parts.append(scalars.string(self, node, path))
            elif t == "object":
                parts.append(containers.object_value(self, node, path, loc, rdepth))
            else:
                parts.append(containers.array_value(self, node, path, loc, rdepth))
        return union(parts)

    def _one_of(self, node: dict[str, Any], path: str, loc: Location, rdepth: Unrolling) -> pynini.Fst:
        subs = node["oneOf"]
        free = [i for i, s in enumerate(subs) if jb.is_free(s)]  # (every value matches: none of the others may)
        if free:
            return empty() if len(free) > 1 else complements.none_of(self, subs, free[0], path, loc, rdepth)
        langs = [self.value(s, f"{path}/{i}", loc, rdepth) for i, s in enumerate(subs)]
        # two branches may be told apart within the node's own type and required keys (the result
        # is met with them); branches that hold different kinds of value (travis's `deploy`: an
        # array of deployments or one) cannot overlap: neither is determinized for a product
        parent, kinds = context_of(node), [self._possible.of(s) for s in subs]
        pairs = [(i, j) for i in range(len(subs)) for j in range(i + 1, len(subs))
                 if kinds[i] & kinds[j] and not disjoint(subs[i], subs[j], self.resolver, within=parent)]
        # the branches that may overlap: one determinization of their DFAs' union that counts
        # which accept (`exactly_one`); the others are disjoint from every branch
        paired = sorted({i for p in pairs for i in p})
        if not paired:
            return join(langs)
        # (each branch determinized once per cached automaton, not once per oneOf it is in)
        one = exactly_one([self.opt_part(langs[i], f"{path}/{i}") for i in paired], self.max_states)
        one = complements.plain_numbers(self, one)  # (`1e3`: in `number`, not in `integer` here)
        return union([self.opt(one, path), *(lang for i, lang in enumerate(langs) if i not in paired)])
