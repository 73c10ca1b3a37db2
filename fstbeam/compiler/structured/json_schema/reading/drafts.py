"""The draft a schema declares (`$schema`) and the keywords that draft does not define.

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

from .unevaluated import read_unevaluated
from .uris import local_refs
from .walk import declared_draft, rebuilt, schema_nodes

__all__ = ["INTRODUCED", "REMOVED", "for_draft", "read_as_declared"]

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


def for_draft(schema: Any) -> tuple[Any, list[tuple[str, str]]]:
    """(``schema`` without the keywords its declared draft does not define, [(keyword, path)]
    of those left out), its references made local pointers first (`local_refs`) and its fixed
    `unevaluated*` read as what they mean last (`read_unevaluated`). The schema itself where
    nothing changes. A keyword that a `$ref` points into or through
    (``#/properties/a/if/...``) is kept: the reference must still resolve, and the node is
    compiled as before."""
    out, dropped = _known_keywords(local_refs(schema))
    return read_unevaluated(out), dropped


def _known_keywords(schema: Any) -> tuple[Any, list[tuple[str, str]]]:
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
