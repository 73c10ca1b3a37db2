"""How a schema is read before it is compiled: where its schemas sit (`schema_nodes`, `rebuilt`:
the one walk every reading here takes), where its `$ref`s lead (`Resolver`), the draft it
declares (`$schema`) and the keywords that draft does not have (not yet, or no longer), and the
strict reading (`closed_declared`).

A keyword a draft does not define is an unknown keyword there, and the specification says a
validator ignores it: under `"$schema": "http://json-schema.org/draft-04/schema#"`, `if`/`then`
and `const` are annotations, and Draft4Validator (the `jsonschema` package, which the decoder's
check uses and which labels JSONSchemaBench's test instances) accepts instances they would
reject. `for_draft` gives the schema as its draft reads it, once, for both the compiler and
`order_instance`, and says which keywords it left out so that the compiler can warn.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote

from ....errors import SpecError

__all__ = ["declared_draft", "for_draft", "read_as_declared", "closed_declared", "INTRODUCED", "REMOVED",
           "DATA_KEYWORDS", "NAMED_KEYWORDS", "IN_PLACE_KEYWORDS", "escape_pointer", "Resolver", "schema_nodes", "rebuilt"]

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
#: keywords whose schemas apply at the node's own location (`location.expand`)
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

    refs = [n["$ref"] for n, _, _ in schema_nodes(schema) if isinstance(n.get("$ref"), str)]
    dropped: list[tuple[str, str]] = []

    def skip(node: dict[str, Any], k: str, here: str) -> bool:
        if unknown(k) and not any(r == "#" + here or r.startswith(f"#{here}/") for r in refs):
            dropped.append((k, here.rsplit("/", 1)[0] or "/"))
            return True
        return False

    out = rebuilt(schema, skip=skip)
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


def escape_pointer(name: str) -> str:
    """``name`` as one JSON-pointer token (RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return str(name).replace("~", "~0").replace("/", "~1")


class Resolver:
    """Local `$ref`s: `#`, JSON pointers (`#/$defs/a`, `#/definitions/b~1c`), `$anchor`s and
    `$id`s (plain names, or ids that end in `#name`). Anything else is a SpecError."""

    def __init__(self, root: Any, where: str):
        self.root = root
        self.where = where
        self.anchors: dict[str, tuple[Any, str]] = {}
        self.ref_alone = False  # drafts 3-7: keywords beside a `$ref` are ignored (set by the compiler)
        self._index(root)

    def _index(self, root: Any) -> None:
        for node, path, _ in schema_nodes(root):
            for key in ("$anchor", "$id", "id"):
                v = node.get(key)
                if isinstance(v, str) and path:
                    self.anchors.setdefault(v, (node, path))
                    if "#" in v:
                        self.anchors.setdefault("#" + v.split("#", 1)[1], (node, path))
                    else:
                        self.anchors.setdefault("#" + v, (node, path))

    def resolve(self, ref: str, path: str) -> tuple[Any, str]:
        if ref in self.anchors:
            return self.anchors[ref]
        base, _, frag = ref.partition("#")
        root_id = (self.root.get("$id") or self.root.get("id")) if isinstance(self.root, dict) \
            else None
        root_id = root_id.rstrip("#") if isinstance(root_id, str) else None
        if base and base != root_id and base not in self.anchors:
            raise SpecError(f"{self.where}: $ref {ref!r} at {path or '/'} points outside the "
                            "schema (only local references are supported)")
        node: Any = self.root if not base or base == root_id else self.anchors[base][0]
        target = "" if not base or base == root_id else self.anchors[base][1]
        if frag and not frag.startswith("/"):
            if "#" + frag in self.anchors:
                return self.anchors["#" + frag]
            raise SpecError(f"{self.where}: $ref {ref!r} at {path or '/'}: no $anchor or $id "
                            f"named {frag!r}")
        for part in frag.split("/")[1:] if frag else []:
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise SpecError(f"{self.where}: $ref {ref!r} at {path or '/'} does not resolve "
                                f"(no {part!r})")
            target += "/" + escape_pointer(part)
        return node, target


def _entries(node: dict[str, Any], path: str) -> Iterator[tuple[str, str, Any, bool]]:
    """(keyword, its pointer, value, whether the value is a name map) of each member of ``node``
    where schemas may sit: the one rule every walk here follows. A data keyword's value is data
    (a ``$ref`` member there is none) and is not given; a name map (`NAMED_KEYWORDS`) holds a
    schema per name (the names are no keywords)."""
    for k, v in node.items():
        if k not in DATA_KEYWORDS:
            yield k, f"{path}/{escape_pointer(k)}", v, k in NAMED_KEYWORDS and isinstance(v, dict)


Joins = Callable[[dict[str, Any], str], bool]


def schema_nodes(schema: Any, joins: Joins | None = None) -> Iterator[tuple[dict[str, Any], str, bool]]:
    """(node, JSON pointer, flag) of every object node of ``schema`` where a schema may sit
    (`_entries`), in document order. The flag is ``joins(parent, keyword)`` of the keyword the
    node sits under (False without ``joins``, and at the root)."""
    todo: list[tuple[Any, str, bool]] = [(schema, "", False)]
    while todo:
        node, path, flag = todo.pop()
        if isinstance(node, list):
            todo.extend((v, f"{path}/{i}", flag) for i, v in reversed(list(enumerate(node))))
            continue
        if not isinstance(node, dict):
            continue
        yield node, path, flag
        below: list[tuple[Any, str, bool]] = []
        for k, here, v, is_map in _entries(node, path):
            joined = bool(joins and joins(node, k))
            below += [(s, f"{here}/{escape_pointer(n)}", joined) for n, s in v.items()] if is_map else [(v, here, joined)]
        todo.extend(reversed(below))


def rebuilt(node: Any, path: str = "", flag: bool = False, *, joins: Joins | None = None,
            skip: Callable[[dict[str, Any], str, str], bool] | None = None,
            finish: Callable[[dict[str, Any], dict[str, Any], str, bool], None] | None = None) -> Any:
    """``node`` copied place by place (`_entries`; data as it is): a member with ``skip(node,
    keyword, pointer)`` left out, not entered, and ``finish(node, copy, pointer, flag)`` called
    on each object node's copy once its members are copied (the flag as in `schema_nodes`)."""
    if isinstance(node, list):
        return [rebuilt(v, f"{path}/{i}", flag, joins=joins, skip=skip, finish=finish) for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if skip is None or not skip(node, k, f"{path}/{escape_pointer(k)}")}
    for k, here, v, is_map in _entries(node, path):
        if k not in out:
            continue
        joined = bool(joins and joins(node, k))
        if is_map:
            out[k] = {n: rebuilt(s, f"{here}/{escape_pointer(n)}", joined, joins=joins, skip=skip, finish=finish)
                      for n, s in v.items()}
        else:
            out[k] = rebuilt(v, here, joined, joins=joins, skip=skip, finish=finish)
    if finish is not None:
        finish(node, out, path, flag)
    return out


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
