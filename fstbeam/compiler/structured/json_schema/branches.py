"""Combinators of an object node taken inside the node's own declared object.

``{"type": "object", "properties": {...}, "if": C, "then": T}`` met as combinators builds C, T
and the complement of C each as a whole object automaton whose members that the branch does not
name are free values, nesting at most `max_depth`; the complement is taken among the JSON values
of that depth. Met with the node's object, that cut every member's nesting at `max_depth`
(semgrep's rules: `join.refs[].renames[]` nests 5 deep, and its valid rules were rejected).

Here a branch is first *merged* into the node's own object keywords (`merged`): a member the
branch does not name keeps the node's declaration, a member both name is both schemas met. So
M(C) is exactly the node's objects that satisfy C, at any depth, and ``not C`` is a difference
from the node's own object rather than from the free values:

    if/then/else  ->  M(C and T)  |  (M(E) or the node's own object) - M(C)
    not X         ->  the node's own object - M(X)

Used where the node holds objects only (its `type` is `object`) and each branch is made of
object keywords and combinators (`mergeable`); elsewhere the combinators are built as before.

An `allOf` of two or more object schemas (the node's own object keywords counting as one, a
`$ref` branch read as its target) is one merged object the same way (`merged_all_of`): met as
separate objects, each one's free members cut the others' declared nesting at `max_depth`
(`allOf: [{"$ref": "#/definitions/container"}, {"properties": {"contents": ...}}]`). Where the
members so exposed are large (`MAX_EXPOSED_NODES`), the cut stays: the whole automaton grows
by what it used to cut.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ....errors import SpecError
from . import containers
from .location import IN_PLACE_KEYWORDS, Location, SchemaContext
from .reading import NAMED_KEYWORDS
from .refs import Unrolling
from .required_choices import NOTES, OBJECT_KEYS

# A schema's keywords, by what they constrain (`json_schema`).
OBJECT_KEYWORDS = {*OBJECT_KEYS, "dependentRequired", "dependencies"}
ARRAY_KEYWORDS = {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains"}
TYPE_KEYWORDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
                 "maxLength", "pattern", "format", *OBJECT_KEYWORDS, *ARRAY_KEYWORDS}
COMBINATORS = {"allOf", "anyOf", "oneOf", "not", "if", "dependentRequired", "dependentSchemas", "dependencies"}
REFUSED = {
    # (what a fixed `allOf`/`$ref` evaluates is read before: `reading.unevaluated`)
    "unevaluatedProperties": "unevaluatedProperties is not supported beside a dynamic reference, two of "
                             "anyOf/oneOf/if/dependentSchemas, more than 4 anyOf branches or dependent schemas, "
                             "or a branch with one of those (the members they evaluate depend on the instance)",
    "unevaluatedItems": "unevaluatedItems is not supported beside contains, a dynamic reference, two of "
                        "anyOf/oneOf/if, an anyOf of more than 4 branches or a branch with one of those (the "
                        "items they evaluate depend on the instance)",
    # (one that nothing extends is read as its `$ref`: `reading.uris`)
    "$dynamicRef": "$dynamicRef is not supported where two resources of the document declare its "
                   "$dynamicAnchor (the target depends on the path taken; use $ref)",
    "$recursiveRef": "$recursiveRef is not supported where two resources of the document set "
                     "$recursiveAnchor (the target depends on the path taken; use $ref)",
}
IN_PLACE = {"$ref", "type", "enum", "const", "nullable", *COMBINATORS, *REFUSED}

# the node's keywords a branch is merged with (its combinators are met beside, as before)
_CARRIED = OBJECT_KEYS
# what a mergeable branch may hold besides annotations
_BRANCH = {"type", "properties", "required", "additionalProperties", "minProperties", "maxProperties",
           "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentRequired"}
# An `allOf` is merged where the members it declares that another of its objects left free
# hold at most this many schema objects: those members were cut at `max_depth` by the free side,
# and a large one embeds whole definitions (travis's root `allOf` of `job` and the root's own
# members, 3,150: 128,516 -> 909,030 states, as its `jobs.include` items now hold a whole job).
MAX_EXPOSED_NODES = 500
# an object schema whose undeclared members are free values (`free_elsewhere`)
_PLAIN = {*_CARRIED, "type"} - {"patternProperties"}
_COMBINED = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentRequired")


def is_free(node: Any) -> bool:
    """No keyword that constrains a value (only annotations): any JSON value."""
    return node is True or (isinstance(node, dict) and not any(k in node for k in TYPE_KEYWORDS | IN_PLACE))


def has_type_keywords(node: dict[str, Any]) -> bool:
    return any(k in node for k in TYPE_KEYWORDS)


def conditional(node: Any) -> bool:
    """Is ``node`` an `if` (with its `then`/`else`) and nothing else but annotations? (An
    `allOf` branch of that kind is taken as the node's own `if`.)"""
    return isinstance(node, dict) and "if" in node and not any(k in node for k in TYPE_KEYWORDS | IN_PLACE - {"if"})


def merged_all_of(node: dict[str, Any], resolve: Callable[[str, str], Any], path: str, depth: int) -> dict[str, Any] | None:
    """``node``'s `allOf` as one object node (its own object keywords merged in), where two or
    more of them are object schemas, one of them holds objects only, and all are `mergeable`
    into the one with `patternProperties` (at most one has them; else into the node). A `$ref`
    branch is read as its target, through ``resolve``, which says None for a recursive one, and
    a one-branch `anyOf`/`oneOf`/`allOf` as its branch. Not where the merge would expose more
    than `MAX_EXPOSED_NODES` below ``depth`` (how deep the members' free values nest). None
    where it is not merged: the branches are met as before."""
    branches = _read_branches(node, resolve, path)
    every = [node, *branches]
    objects = [x for x in every if isinstance(x, dict) and OBJECT_KEYWORDS & x.keys()]
    if len(objects) < 2 or not any(isinstance(x, dict) and x.get("type") in ("object", ["object"]) for x in every):
        return None
    holders = [x for x in every if isinstance(x, dict) and x.get("patternProperties")]
    if len(holders) > 1:
        return None
    base = holders[0] if holders else node
    # the node's own combinators are its own parts; a branch's go with it
    rest = [{k: node[k] for k in _CARRIED if k in node} if x is node else x for x in every if x is not base]
    if base is not node:
        rest.append({k: base[k] for k in (*_COMBINED, "type") if k in base})
    if not mergeable(base, rest):
        return None
    out = merged(base, rest)
    if not isinstance(out, dict) or _exposed(out, objects, resolve, path, depth) > MAX_EXPOSED_NODES:
        return None
    return out


def _read_branches(node: dict[str, Any], resolve: Callable[[str, str], Any], path: str) -> list[Any]:
    """``node``'s `allOf` branches, a `$ref` read as its target (None for a recursive one) and a
    one-branch `anyOf`/`oneOf`/`allOf` as its branch."""
    branches = []
    for i, b in enumerate(node["allOf"]):
        while isinstance(b, dict) and len(set(b) - NOTES) == 1:
            (kw,) = set(b) - NOTES
            if kw == "$ref" and isinstance(b[kw], str):
                b = resolve(b[kw], f"{path}/allOf/{i}/$ref")
            elif kw in ("anyOf", "oneOf", "allOf") and isinstance(b[kw], list) and len(b[kw]) == 1:
                b = b[kw][0]
            else:
                break
        branches.append(b)
    return branches


def free_elsewhere(node: dict[str, Any], resolve: Callable[[str, str], Any], path: str) -> list[set[str]]:
    """For ``node``'s own object and each of its `allOf` branches (met apart, not `merged_all_of`):
    the members it declares that another of them, a plain object (`_frees_others`), leaves free.
    Met with that one's free value, such a member's value matters only as deep as free values
    nest (`Unrolling.cut_members`)."""
    every = [node, *_read_branches(node, resolve, path)]
    names = [set(x["properties"]) if isinstance(x, dict) and isinstance(x.get("properties"), dict) else set()
             for x in every]
    plain = [i for i, x in enumerate(every) if _frees_others(x, own=i == 0)]
    return [{m for m in names[i] if any(j != i and m not in names[j] for j in plain)} for i in range(len(every))]


def branch_budgets(node: dict[str, Any], resolve: Callable[[str, str], Any], path: str, rdepth: Unrolling,
                   depth: int) -> list[Unrolling]:
    """The budgets of ``node``'s own object and its `allOf` branches (met apart): each one's
    members that another leaves free (`free_elsewhere`) bounded at ``depth``, the most a free
    member value there nests."""
    if not node.get("allOf"):
        return [rdepth]
    return [rdepth.cut_members(dict.fromkeys(names, depth)) for names in free_elsewhere(node, resolve, path)]


def _frees_others(x: Any, own: bool) -> bool:
    """Is ``x`` an object schema whose undeclared members are free values (its value holds
    nothing else that could constrain them)? ``own``: the node itself, whose combinators are
    met beside its object, not in it."""
    if not isinstance(x, dict) or not OBJECT_KEYWORDS & x.keys() or not _allows_objects(x.get("type")):
        return False
    # (the node's own combinators, `$ref` and `nullable` are met beside its object: not in it)
    keywords = TYPE_KEYWORDS | ({"type", "enum", "const"} if own else IN_PLACE)
    keys = set(x) & keywords
    return keys <= _PLAIN and is_free(x.get("additionalProperties", True)) \
        and isinstance(x.get("properties", {}), dict)


def _exposed(out: dict[str, Any], objects: list[dict[str, Any]], resolve: Callable[[str, str], Any], path: str,
             depth: int) -> int:
    """How many schema nodes the merged members hold that one of ``objects`` (the merged object
    schemas) left free (counted to just past `MAX_EXPOSED_NODES`). A member with none ``depth``
    or more levels down, where the free side's values stop, counts none: met apart, nothing of
    it was cut (eslintrc's `rules`, an `allOf` of 8 groups of ~30 rules, each a shallow `$ref`)."""
    total = 0
    for name, schema in (out.get("properties") or {}).items():
        if total <= MAX_EXPOSED_NODES and any(
                name not in (x.get("properties") or {}) and is_free(x.get("additionalProperties", True)) for x in objects):
            total += _cut_nodes(schema, resolve, path, MAX_EXPOSED_NODES + 1 - total, depth)
    return total


# keywords whose subschemas hold the values one level down (the others stay in place)
_DOWN = {"properties", "patternProperties", "additionalProperties", "items", "prefixItems", "additionalItems", "contains"}
_IN_PLACE_SUBS = {*IN_PLACE_KEYWORDS, "dependentSchemas", "dependencies"}


def _cut_nodes(schema: Any, resolve: Callable[[str, str], Any], path: str, cap: int, depth: int) -> int:
    """Schema objects in ``schema``, each `$ref` followed once, counted to ``cap``; 0 where none
    of them holds values ``depth`` or more levels down (one walk: counted until both are known)."""
    seen: set[str] = set()
    stack, n, deep = [(schema, 0)], 0, False
    while stack and not (n >= cap and deep):
        x, level = stack.pop()
        if isinstance(x, list):
            stack.extend((v, level) for v in x)
            continue
        if not isinstance(x, dict):
            continue
        n += 1
        deep = deep or level >= depth
        ref = x.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            seen.add(ref)
            try:
                stack.append((resolve(ref, path), level))
            except SpecError:  # (said where the reference itself is compiled)
                pass
        for k, v in x.items():
            if k in _DOWN or k in _IN_PLACE_SUBS:
                subs = v.values() if k in NAMED_KEYWORDS and isinstance(v, dict) else [v]
                stack.extend((sub, level + (k in _DOWN)) for sub in subs)
    return min(n, cap) if deep else 0


def mergeable(node: dict[str, Any], branches: list[Any]) -> bool:
    """Can ``branches`` be merged into ``node``'s object (`merged`)? Each is a boolean or holds
    only object keywords, combinators and annotations. Beside the node's `patternProperties`, a
    branch may not have `additionalProperties`, nor add a member where the node's own
    `additionalProperties` constrains (it holds only for names no pattern matches: not worked
    out here; the patterns themselves are applied to declared members by `object_value`)."""
    for b in branches:
        if isinstance(b, bool):
            continue
        if not isinstance(b, dict) or any(k in b for k in TYPE_KEYWORDS | IN_PLACE if k not in _BRANCH):
            return False
        if node.get("patternProperties") and ("additionalProperties" in b or (
                set(b.get("properties") or {}) - set(node.get("properties") or {})
                and not is_free(node.get("additionalProperties", True)))):
            return False
        if not isinstance(b.get("properties", {}), dict) or not isinstance(b.get("required", []), list):
            return False
    return True


def merged(node: dict[str, Any], branches: list[Any]) -> dict[str, Any] | bool | None:
    """The schema of the objects that meet ``node``'s object keywords and every one of
    ``branches`` (`mergeable` ones): one object node, so that members a branch leaves free keep
    the node's schema. `False` where a branch holds no object; None where two branches have the
    same combinator (their merge is met instead)."""
    out: dict[str, Any] = {k: node[k] for k in _CARRIED if k in node}
    out["type"] = "object"
    for b in branches:
        if b is True:
            continue
        if b is False or not _allows_objects(b.get("type")):
            return False
        for kw in _COMBINED:
            if kw in b:
                if kw in out and kw != "allOf":
                    return None
                out[kw] = [*out.get(kw, []), *b[kw]] if kw == "allOf" else b[kw]
        _merge_members(out, b)
    return out


def _merge_members(out: dict[str, Any], b: dict[str, Any]) -> None:
    """``b``'s member keywords into ``out`` (both must hold)."""
    props = dict(out.get("properties") or {})
    extra = out.get("additionalProperties", True)
    b_props = b.get("properties") or {}
    b_extra = b.get("additionalProperties", True)
    for name in props:  # members ``b`` does not name meet its additionalProperties
        props[name] = both(props[name], b_props[name] if name in b_props else b_extra)
    for name, schema in b_props.items():
        if name not in props:  # a member ``out`` does not name is one of its additional ones
            props[name] = both(schema, extra)  # (met with the node's object anyway: a smaller automaton)
    if props:
        out["properties"] = props
    extra = both(extra, b_extra)
    if extra is not True:
        out["additionalProperties"] = extra
    required = [*(out.get("required") or []), *(b.get("required") or [])]
    if required:
        out["required"] = list(dict.fromkeys(required))
    for kw, pick in (("minProperties", max), ("maxProperties", min)):
        if kw in b:
            out[kw] = pick(out[kw], b[kw]) if kw in out else b[kw]


def both(a: Any, b: Any) -> Any:
    """The schema of the values that meet ``a`` and ``b`` (`allOf`, without its trivial cases)."""
    if a is False or b is False:
        return False
    if is_free(b) or a is b:
        return a
    if is_free(a):
        return b
    return {"allOf": [a, b]}


def _allows_objects(t: Any) -> bool:
    return t is None or t == "object" or (isinstance(t, list) and "object" in t)


def dependencies(c: SchemaContext, node: dict[str, Any], path: str, loc: Location) -> list[tuple[dict[str, Any], str]]:
    """`dependentSchemas`/`dependencies` (schema form): when property a is present, the
    object must match the schema, as ``(if a is present then the schema, path)``."""
    out = []
    # "a excludes b" between declared members: a rule in the object's own members
    excl = containers.member_exclusions(
        node, containers.object_slots(node, loc)) if "dependencies" in node else {}
    for kw in ("dependentRequired", "dependentSchemas", "dependencies"):
        deps = node.get(kw)
        if not isinstance(deps, dict):
            continue
        for name, need in deps.items():
            if isinstance(need, list) or (kw == "dependencies" and name in excl):
                continue  # in the object's own members (containers)
            has = c.synth({"type": "object", "required": [name]})
            out.append((c.synth({"if": has, "then": need}), f"{path}/{kw}/{name}"))
    return out
