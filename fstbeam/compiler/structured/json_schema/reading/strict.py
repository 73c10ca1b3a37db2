"""The strict reading of a schema (`json_strict`): objects and arrays closed to what they declare."""
from __future__ import annotations

import logging
from typing import Any

from .....errors import SpecError
from .uris import Resolver
from .walk import IN_PLACE_KEYWORDS, rebuilt, schema_nodes

__all__ = ["JOINING", "closed_declared"]

log = logging.getLogger("fstbeam")

# Keywords that apply other schemas at a node's own location: the node's members meet theirs
# there, so closing either side alone would refuse what the other declares.
JOINING = frozenset({*IN_PLACE_KEYWORDS, "$ref", "dependentSchemas", "dependencies", "unevaluatedProperties",
                     "unevaluatedItems", "$dynamicRef", "$recursiveRef"})
# Keywords that say nothing of the values (a `$ref` beside only these is a plain alias)
_ANNOTATIONS = frozenset({"title", "description", "$comment", "examples", "default", "deprecated", "readOnly",
                          "writeOnly", "$id", "$schema", "$anchor", "definitions", "$defs"})
_OBJECT_KEYWORDS = ("properties", "patternProperties", "additionalProperties")


def closed_declared(schema: Any, where: str) -> Any:
    """``schema`` read strictly (`json_strict`, as XGrammar's default ``strict_mode`` and
    vLLM's ``disable_additional_properties``): an object schema that declares members
    (``properties`` or ``patternProperties``) and says nothing of ``additionalProperties`` takes
    no other member (a name in its ``required`` is declared too, its value free), and an array
    schema with ``prefixItems`` (before 2020-12: a list under ``items``) and nothing after them
    takes no further item. Free values (``{}``, ``{"type": "object"}``) stay free. A schema
    that meets others at its location stays as the specification reads it: a node with a
    combinator or a ``$ref`` beside its members, the
    branches of an ``allOf``, ``if``/``then``/``else``, ``not`` and dependent schemas, the
    branches of an ``anyOf``/``oneOf`` beside the node's own members, and the targets of
    ``$ref``s in those places (closing one side alone would refuse the members the other
    declares)."""
    if not isinstance(schema, dict):
        return schema
    resolver = Resolver(schema, where)
    joined_refs = [n["$ref"] for n, _, joined in schema_nodes(schema, _joins)
                   if isinstance(n.get("$ref"), str) and (joined or set(n) - _ANNOTATIONS - {"$ref"})]
    targets, unresolved = _ref_targets(resolver, joined_refs)
    closed: list[str] = []

    def close(node: dict[str, Any], out: dict[str, Any], path: str, joined: bool) -> None:
        if joined or path in targets or (unresolved and _under_definitions(path)) or _meets_others(node):
            return
        if ("properties" in node or "patternProperties" in node) and "additionalProperties" not in node:
            out["additionalProperties"] = False
            # a required name declares a member too (any value, as before), where `properties` misses it
            props = node.get("properties")
            declared = set(props) if isinstance(props, dict) else set()
            required = node.get("required")  # (a list; draft 3 writes `true` in the member instead)
            named = [r for r in required if isinstance(r, str) and r not in declared] if isinstance(required, list) else []
            if named and (props is None or isinstance(props, dict)):
                out["properties"] = {**out.get("properties", {}), **dict.fromkeys(named, True)}
            closed.append(path or "/")
        if isinstance(node.get("prefixItems"), list) and "items" not in node:
            out["items"] = False
            closed.append(path or "/")
        elif isinstance(node.get("items"), list) and "prefixItems" not in node and "additionalItems" not in node:
            out["additionalItems"] = False
            closed.append(path or "/")

    out = rebuilt(schema, joins=_joins, finish=close)
    log.info("%s: json_strict closed %d object or array schemas to what they declare", where, len(closed))
    return out


def _joins(node: dict[str, Any], keyword: str) -> bool:
    """The schemas under ``node[keyword]`` meet others at their location: the branches of
    ``allOf``, conditions, dependent schemas and ``contains`` (beside ``items``), the branches of
    an ``anyOf``/``oneOf`` beside the node's own members, the items beside a ``contains``, and a
    member that both a property and a pattern may describe."""
    if keyword in ("allOf", "if", "then", "else", "not", "dependencies", "dependentSchemas", "contains",
                   "patternProperties"):
        return True
    if keyword in ("anyOf", "oneOf"):
        return any(k in node for k in _OBJECT_KEYWORDS)
    if keyword in ("items", "prefixItems", "additionalItems"):
        return "contains" in node
    return keyword == "properties" and "patternProperties" in node


def _meets_others(node: dict[str, Any]) -> bool:
    """``node``'s own keywords meet other schemas at its location: it has a `JOINING` keyword
    (an ``anyOf``/``oneOf`` only where a branch may describe members: one of `required` lists
    leaves the members to the node)."""
    for k in JOINING & node.keys():
        branches = node[k]
        if k in ("anyOf", "oneOf") and isinstance(branches, list) and all(
                isinstance(b, dict) and not ({*_OBJECT_KEYWORDS, "$ref", *JOINING} & b.keys()) for b in branches):
            continue
        return True
    return False


def _ref_targets(resolver: Resolver, refs: list[str]) -> tuple[set[str], bool]:
    """(JSON-pointer paths of the targets of ``refs``, followed through targets that are
    ``$ref``s themselves; whether a reference does not resolve here, its target then unknown)."""
    paths: set[str] = set()
    unresolved = False
    todo = list(refs)
    while todo:
        try:
            node, path = resolver.resolve(todo.pop(), "")
        except SpecError:
            unresolved = True
            continue
        if path not in paths:
            paths.add(path)
            if isinstance(node, dict) and isinstance(node.get("$ref"), str):
                todo.append(node["$ref"])
    return paths, unresolved


def _under_definitions(path: str) -> bool:
    return path.startswith(("/definitions/", "/$defs/"))
