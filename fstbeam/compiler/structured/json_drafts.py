"""The draft a schema declares (`$schema`), and the keywords that draft does not have (not yet,
or no longer).

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

__all__ = ["declared_draft", "for_draft", "read_as_declared", "INTRODUCED", "REMOVED", "DATA_KEYWORDS", "NAMED_KEYWORDS", "escape_pointer"]

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
