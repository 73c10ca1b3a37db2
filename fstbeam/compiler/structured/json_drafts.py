"""How a schema is read before it is compiled: the draft it declares (`$schema`) and the keywords
that draft does not have (not yet, or no longer); and the strict reading (`closed_declared`).

A keyword a draft does not define is an unknown keyword there, and the specification says a
validator ignores it: under `"$schema": "http://json-schema.org/draft-04/schema#"`, `if`/`then`
and `const` are annotations, and Draft4Validator (the `jsonschema` package, which the decoder's
check uses and which labels JSONSchemaBench's test instances) accepts instances they would
reject. `for_draft` gives the schema as its draft reads it, once, for both the compiler and
`order_instance`, and says which keywords it left out so that the compiler can warn.
"""
from __future__ import annotations

import logging
from typing import Any

__all__ = ["declared_draft", "for_draft", "read_as_declared", "closed_declared", "INTRODUCED", "REMOVED",
           "DATA_KEYWORDS", "NAMED_KEYWORDS", "IN_PLACE_KEYWORDS", "escape_pointer"]

log = logging.getLogger("fstbeam")

#: keyword -> the first draft that defines it (2019 = 2019-09, 2020 = 2020-12)
INTRODUCED = {
    "const": 6, "contains": 6, "propertyNames": 6,
    "if": 7, "then": 7, "else": 7,
    "dependentSchemas": 2019, "dependentRequired": 2019, "unevaluatedProperties": 2019,
    "unevaluatedItems": 2019, "minContains": 2019, "maxContains": 2019,
    "prefixItems": 2020,
}
#: keyword -> the first draft without it (split into `dependentSchemas`/`dependentRequired`;
#: replaced by `items` beside `prefixItems`)
REMOVED = {"dependencies": 2019, "additionalItems": 2020}
_DRAFTS = (("draft-03", 3), ("draft-04", 4), ("draft-06", 6), ("draft-07", 7),
           ("2019-09", 2019), ("2020-12", 2020))
#: keywords whose value is JSON data, not schemas (a `pattern` or `$ref` member inside is no keyword)
DATA_KEYWORDS = frozenset({"enum", "const", "examples", "default"})
#: keywords whose schemas apply at the node's own location (`json_location.expand`)
IN_PLACE_KEYWORDS = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else")
#: keywords whose value maps names (not keywords) to schemas
NAMED_KEYWORDS = frozenset({"properties", "patternProperties", "definitions", "$defs", "dependencies", "dependentSchemas"})


def declared_draft(schema: Any) -> int | None:
    """The draft the root's `$schema` names (3, 4, 6, 7, 2019, 2020); None where it names none
    (then every keyword applies, as in the latest draft, which is also what `jsonschema` does
    with a `$schema` it does not know, draft-05 among them)."""
    meta = schema.get("$schema") if isinstance(schema, dict) else None
    if not isinstance(meta, str):
        return None
    return next((n for tag, n in _DRAFTS if tag in meta), None)


def for_draft(schema: Any) -> tuple[Any, list[tuple[str, str]]]:
    """(``schema`` without the keywords its declared draft does not define, [(keyword, path)]
    of those left out). The schema itself where nothing is left out. A keyword that a `$ref`
    points into or through (``#/properties/a/if/...``) is kept: the reference must still
    resolve, and the node is compiled as before."""
    draft = declared_draft(schema)
    if draft is None:
        return schema, []

    def unknown(keyword: str) -> bool:
        return INTRODUCED.get(keyword, 0) > draft or REMOVED.get(keyword, 9999) <= draft

    refs: list[str] = []
    _collect_refs(schema, refs)
    dropped: list[tuple[str, str]] = []

    def kept(node: Any, path: str) -> Any:
        if isinstance(node, list):
            return [kept(v, f"{path}/{i}") for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        out = {}
        for k, v in node.items():
            here = f"{path}/{escape_pointer(k)}"
            if unknown(k) and not any(r == "#" + here or r.startswith(f"#{here}/") for r in refs):
                dropped.append((k, path or "/"))
            elif k in DATA_KEYWORDS:
                out[k] = v
            elif k in NAMED_KEYWORDS and isinstance(v, dict):
                out[k] = {name: kept(s, f"{here}/{escape_pointer(name)}") for name, s in v.items()}
            else:
                out[k] = kept(v, here)
        return out

    out = kept(schema, "")
    return (out, dropped) if dropped else (schema, [])


def read_as_declared(schema: Any, where: str) -> Any:
    """`for_draft`'s schema, with a WARNING per keyword left out (its paths, up to four)."""
    out, dropped = for_draft(schema)
    for kw in dict.fromkeys(k for k, _ in dropped):
        paths = [p for k, p in dropped if k == kw]
        more = f" and {len(paths) - 4} more" if len(paths) > 4 else ""
        log.warning("%s: %s at %s%s is not a keyword of the schema's draft (%s): ignored, as that draft's "
                    "validators do; declare a later draft in $schema to apply it",
                    where, kw, ", ".join(paths[:4]), more, schema["$schema"])
    return out


def _collect_refs(node: Any, refs: list[str]) -> None:
    if isinstance(node, list):
        for v in node:
            _collect_refs(v, refs)
    elif isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                refs.append(v)
            elif k not in DATA_KEYWORDS:
                _collect_refs(v, refs)


def escape_pointer(name: str) -> str:
    """``name`` as one JSON-pointer token (RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return str(name).replace("~", "~0").replace("/", "~1")


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
    joined_refs: list[str] = []
    _joined(schema, False, joined_refs)
    targets, unresolved = _ref_targets(schema, joined_refs)
    closed: list[str] = []

    def read(node: Any, path: str, joined: bool) -> Any:
        if isinstance(node, list):
            return [read(v, f"{path}/{i}", joined) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        joined = joined or path in targets or (unresolved and _under_definitions(path))
        out: dict[str, Any] = {}
        for k, v in node.items():
            here = f"{path}/{escape_pointer(k)}"
            if k in DATA_KEYWORDS:
                out[k] = v
            elif k in NAMED_KEYWORDS and isinstance(v, dict):
                out[k] = {name: read(s, f"{here}/{escape_pointer(name)}", _joins(node, k))
                          for name, s in v.items()}
            else:
                out[k] = read(v, here, _joins(node, k))
        if not (joined or _meets_others(node)):
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
        return out

    out = read(schema, "", False)
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


def _joined(node: Any, joined: bool, refs: list[str]) -> None:
    """The ``$ref``s (into ``refs``) whose targets meet other schemas at their location: held
    by a node in a joined place (`_joins`) or beside other keywords than annotations."""
    if isinstance(node, list):
        for v in node:
            _joined(v, joined, refs)
        return
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str) and (joined or set(node) - _ANNOTATIONS - {"$ref"}):
        refs.append(ref)
    for k, v in node.items():
        if k in DATA_KEYWORDS:
            continue
        if k in NAMED_KEYWORDS and isinstance(v, dict):
            for s in v.values():
                _joined(s, _joins(node, k), refs)
        else:
            _joined(v, _joins(node, k), refs)


def _ref_targets(schema: dict[str, Any], refs: list[str]) -> tuple[set[str], bool]:
    """(JSON-pointer paths of the targets of ``refs``, followed through targets that are
    ``$ref``s themselves; whether a reference is not a local pointer, whose target is then
    unknown). (Walked here, not by `json_location.Resolver`: that module reads this one.)"""
    from urllib.parse import unquote

    paths: set[str] = set()
    unresolved = False
    todo = list(refs)
    while todo:
        ref = todo.pop()
        if not ref.startswith("#") or (len(ref) > 1 and not ref.startswith("#/")):
            unresolved = True
            continue
        path = unquote(ref[1:])
        if path in paths:
            continue
        paths.add(path)
        node: Any = schema
        for token in path.split("/")[1:]:
            key = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            elif isinstance(node, dict) and key in node:
                node = node[key]
            else:
                node = None
                break
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            todo.append(node["$ref"])
    return paths, unresolved


def _under_definitions(path: str) -> bool:
    return path.startswith(("/definitions/", "/$defs/"))
