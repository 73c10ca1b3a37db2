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
"""
from __future__ import annotations

from typing import Any

# A schema's keywords, by what they constrain (`json_schema`).
OBJECT_KEYWORDS = {"properties", "required", "additionalProperties", "patternProperties", "minProperties",
                   "maxProperties", "propertyNames", "dependentRequired", "dependencies"}
ARRAY_KEYWORDS = {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains"}
TYPE_KEYWORDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
                 "maxLength", "pattern", "format", *OBJECT_KEYWORDS, *ARRAY_KEYWORDS}
COMBINATORS = {"allOf", "anyOf", "oneOf", "not", "if", "dependentRequired", "dependentSchemas", "dependencies"}
REFUSED = {
    "unevaluatedProperties": "unevaluatedProperties is not supported",
    "unevaluatedItems": "unevaluatedItems is not supported",
    "$dynamicRef": "$dynamicRef is not supported (use $ref)",
    "$recursiveRef": "$recursiveRef is not supported (use $ref)",
}
IN_PLACE = {"$ref", "type", "enum", "const", "nullable", *COMBINATORS, *REFUSED}

# the node's keywords a branch is merged with (its combinators are met beside, as before)
_CARRIED = ("properties", "required", "additionalProperties", "patternProperties", "propertyNames",
            "minProperties", "maxProperties")
# what a mergeable branch may hold besides annotations
_BRANCH = {"type", "properties", "required", "additionalProperties", "minProperties", "maxProperties",
           "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentRequired"}
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


def mergeable(node: dict[str, Any], branches: list[Any]) -> bool:
    """Can ``branches`` be merged into ``node``'s object (`merged`)? Each is a boolean or holds
    only object keywords, combinators and annotations; a member a branch adds beside the node's
    `patternProperties` is not (which patterns it matches is not worked out here)."""
    for b in branches:
        if isinstance(b, bool):
            continue
        if not isinstance(b, dict) or any(k in b for k in TYPE_KEYWORDS | IN_PLACE if k not in _BRANCH):
            return False
        if node.get("patternProperties") and (
                "additionalProperties" in b or set(b.get("properties") or {}) - set(node.get("properties") or {})):
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
