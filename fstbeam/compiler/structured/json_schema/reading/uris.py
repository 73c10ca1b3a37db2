"""Where a schema's `$ref`s lead: references by URI made local pointers once (`local_refs`), and
pointers and plain names followed (`Resolver`)."""
from __future__ import annotations

from typing import Any
from urllib.parse import urldefrag, urljoin

from .....errors import SpecError
from .walk import declared_draft, entries, escape_pointer, follow_pointer, rebuilt, schema_nodes

__all__ = ["Resolver", "local_refs"]

# Keywords whose schemas are schemas (an `$id` met under any other member is data, no identifier)
_APPLICATORS = frozenset({"properties", "patternProperties", "additionalProperties", "items", "prefixItems",
                          "additionalItems", "contains", "propertyNames", "allOf", "anyOf", "oneOf", "not", "if",
                          "then", "else", "dependentSchemas", "dependencies", "$defs", "definitions",
                          "unevaluatedProperties", "unevaluatedItems", "contentSchema"})
# The retrieval URI of a schema whose root has no `$id` (relative ids and references resolve against it)
_BASE = "https://fstbeam.invalid/schema.json"


def local_refs(schema: Any) -> Any:
    """``schema`` with each `$ref` that names a place of the schema by URI written as a JSON
    pointer from the root (``#/$defs/node``): an id relative to the base URI that the `$id`s above
    it set (``"node"`` beside ``"$id": "http://example.com/tree"``), an embedded resource's
    pointers and `$anchor`s (``"child#a"``), a `$dynamicAnchor` named by a `$ref`. A
    `$dynamicRef` or a `$recursiveRef` that the document extends nowhere (one resource at most
    declares its dynamic anchor: no other can take it over) is the `$ref` it then means. What
    does not resolve so is kept as written (`Resolver` reads plain names, and says what it
    cannot follow). The schema itself where nothing changes."""
    if not isinstance(schema, dict):
        return schema
    draft = declared_draft(schema)
    ids = ("id",) if draft in (3, 4) else ("$id",) if draft is not None else ("$id", "id")
    ref_alone = draft is not None and draft <= 7
    resources: dict[str, str] = {}  # absolute URI -> pointer
    anchors: dict[tuple[str, str], str] = {}  # (resource URI, name) -> pointer
    dynamic: dict[str, list[str]] = {}  # dynamic anchor name ("" for $recursiveAnchor) -> resource URIs
    bases: list[tuple[dict[str, Any], str]] = []  # (node with a reference, its base URI)

    def walk(node: Any, path: str, base: str, known: bool) -> None:
        if isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}/{i}", base, known)
            return
        if not isinstance(node, dict):
            return
        ident = next((node[k] for k in ids if isinstance(node.get(k), str)), None)
        if known and ident is not None and not (ref_alone and "$ref" in node):
            uri, frag = urldefrag(_join(base, ident))
            if frag:  # drafts 6-7: `"$id": "#name"` is an anchor
                anchors.setdefault((uri, frag), path)
            else:
                base = uri
                resources.setdefault(uri, path)
        if known:
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(key), str):
                    anchors.setdefault((base, node[key]), path)
            if isinstance(node.get("$dynamicAnchor"), str):
                dynamic.setdefault(node["$dynamicAnchor"], []).append(base)
            if node.get("$recursiveAnchor") is True:
                dynamic.setdefault("", []).append(base)
        if any(isinstance(node.get(k), str) for k in ("$ref", "$dynamicRef", "$recursiveRef")):
            bases.append((node, base))
        for k, here, v, is_map in entries(node, path):
            inner = known and k in _APPLICATORS
            for n, sub in v.items() if is_map else [(None, v)]:
                walk(sub, here if n is None else f"{here}/{escape_pointer(n)}", base, inner)

    def pointer(ref: str, base: str) -> str | None:
        uri, frag = urldefrag(_join(base, ref))
        if uri not in resources:
            return None
        at = resources[uri] if frag.startswith("/") or not frag else anchors.get((uri, frag))
        # (`Resolver` reads %-escapes in a pointer: a `%` of a name is written as one)
        local = None if at is None else "#" + at.replace("%", "%25") + (frag if frag.startswith("/") else "")
        # a pointer that misses inside its resource is kept as written, read from the root as
        # before: a generator's `"$id": "/properties/a"` on every member makes each a resource,
        # and its authors' `#/definitions/x` meant the document's
        return local if local is None or follow_pointer(schema, local[1:])[2] is None else None

    root = urldefrag(_join(_BASE, next((schema[k] for k in ids if isinstance(schema.get(k), str)), "")))[0]
    resources[root] = ""
    walk(schema, "", root, True)
    rewrite: dict[int, tuple[str, str]] = {}  # id(node) -> (keyword to drop, local pointer)
    for node, base in bases:
        for key in ("$ref", "$dynamicRef", "$recursiveRef"):
            ref = node.get(key)
            if not isinstance(ref, str) or (key != "$ref" and "$ref" in node):
                continue
            if key != "$ref" and len(set(dynamic.get(_dynamic_name(key, ref), []))) > 1:
                continue  # extended elsewhere in the document: the target depends on the path
            local = pointer(ref, base)
            if local is not None and (local != ref or key != "$ref"):
                rewrite[id(node)] = (key, local)
    if not rewrite:
        return schema

    def finish(node: dict[str, Any], out: dict[str, Any], path: str, flag: bool) -> None:
        if id(node) in rewrite:
            key, local = rewrite[id(node)]
            out.pop(key)
            out["$ref"] = local

    return rebuilt(schema, finish=finish)


def _join(base: str, ref: str) -> str:
    """``ref`` resolved against ``base`` (RFC 3986; a fragment alone also against a URN, which
    `urljoin` leaves as it is)."""
    return urldefrag(base)[0] + ref if ref.startswith("#") else urljoin(base, ref)


def _dynamic_name(keyword: str, ref: str) -> str:
    """The dynamic anchor a `$dynamicRef` (its fragment) or a `$recursiveRef` ("") looks for."""
    return "" if keyword == "$recursiveRef" else urldefrag(ref)[1]


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
        node, below, missing = follow_pointer(node, frag)
        if missing is not None:
            raise SpecError(f"{self.where}: $ref {ref!r} at {path or '/'} does not resolve "
                            f"(no {missing!r})")
        return node, target + below
