"""Where a schema's schemas sit: the one walk every reading of a schema takes (`entries`), as a
generator of its schema objects (`schema_nodes`) and as a copy (`rebuilt`); and the draft the
schema declares (`declared_draft`), which decides how the other readings take some keywords."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote

__all__ = ["DATA_KEYWORDS", "IN_PLACE_KEYWORDS", "NAMED_KEYWORDS", "declared_draft", "entries", "escape_pointer",
           "follow_pointer", "rebuilt", "schema_nodes"]

#: keywords whose value is JSON data, not schemas (a `pattern` or `$ref` member inside is no keyword)
DATA_KEYWORDS = frozenset({"enum", "const", "examples", "default"})
#: keywords whose schemas apply at the node's own location (`location.expand`)
IN_PLACE_KEYWORDS = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else")
#: keywords whose value maps names (not keywords) to schemas
NAMED_KEYWORDS = frozenset({"properties", "patternProperties", "definitions", "$defs", "dependencies", "dependentSchemas"})

_DRAFTS = (("draft-03", 3), ("draft-04", 4), ("draft-06", 6), ("draft-07", 7),
           ("2019-09", 2019), ("2020-12", 2020))


def declared_draft(schema: Any) -> int | None:
    """The draft the root's `$schema` names (3, 4, 6, 7, 2019, 2020); None where it names none
    (then every keyword applies, as in the latest draft, which is also what `jsonschema` does
    with a `$schema` it does not know, draft-05 among them)."""
    meta = schema.get("$schema") if isinstance(schema, dict) else None
    if not isinstance(meta, str):
        return None
    return next((n for tag, n in _DRAFTS if tag in meta), None)


def escape_pointer(name: str) -> str:
    """``name`` as one JSON-pointer token (RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return str(name).replace("~", "~0").replace("/", "~1")


def follow_pointer(node: Any, pointer: str) -> tuple[Any, str, str | None]:
    """(the place the JSON pointer ``pointer`` (``/a/b``, %-escapes read) names under
    ``node``, its pointer re-escaped, None) or (where it stopped, its pointer, the token that
    is missing there)."""
    target = ""
    for part in pointer.split("/")[1:] if pointer else []:
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return node, target, part
        target += "/" + escape_pointer(part)
    return node, target, None


def entries(node: dict[str, Any], path: str) -> Iterator[tuple[str, str, Any, bool]]:
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
    (`entries`), in document order. The flag is ``joins(parent, keyword)`` of the keyword the
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
        for k, here, v, is_map in entries(node, path):
            joined = bool(joins and joins(node, k))
            below += [(s, f"{here}/{escape_pointer(n)}", joined) for n, s in v.items()] if is_map else [(v, here, joined)]
        todo.extend(reversed(below))


def rebuilt(node: Any, path: str = "", flag: bool = False, *, joins: Joins | None = None,
            skip: Callable[[dict[str, Any], str, str], bool] | None = None,
            finish: Callable[[dict[str, Any], dict[str, Any], str, bool], None] | None = None) -> Any:
    """``node`` copied place by place (`entries`; data as it is): a member with ``skip(node,
    keyword, pointer)`` left out, not entered, and ``finish(node, copy, pointer, flag)`` called
    on each object node's copy once its members are copied (the flag as in `schema_nodes`)."""
    if isinstance(node, list):
        return [rebuilt(v, f"{path}/{i}", flag, joins=joins, skip=skip, finish=finish) for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if skip is None or not skip(node, k, f"{path}/{escape_pointer(k)}")}
    for k, here, v, is_map in entries(node, path):
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
