"""Scalar values of a schema node: numbers with their bounds, strings with their constraints,
and `const`/`enum` literals (objects and arrays among them are compiled as exact schemas at the
node's location, so their keys follow the location's order)."""
from __future__ import annotations

import logging
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

import pynini

from ....fst.optimize import optimize
from .disjoint import type_of
from .formats import format_fst
from .lexical import (
    any_char,
    bounds_fst,
    encode_content,
    free_string,
    integer_fst,
    lit,
    multiple_of_fst,
    number_equal_fst,
    number_fst,
    repeat,
    string_of,
)
from .lexical import union as union_of
from .location import Location, SchemaContext
from .refs import Unrolling

log = logging.getLogger("fstbeam")


__all__ = ["number", "string", "literal", "literals", "ws_byte", "MAX_LENGTH"]

MAX_LENGTH = 5_000  # a minLength above this is refused (a chain of that many states)
# A maxLength above this is not enforced (a WARNING names it): each unit of length costs about
# a dozen states and 150 arcs in every copy of the string, and a model's strings are bounded by
# max_new_tokens anyway. Documented in docs/structured.md.
MAX_EXACT_LENGTH = 256
# Beside a pattern, a format or a word list whose strings have no length bound, a maxLength above
# this is not enforced either (a WARNING names it): the count multiplies the pattern's states, each
# of them holding nearly every token (a free string's count is a chain the lift shares; a
# pattern's is not). `^\S+@\S+$` counted to 64: 14M token arcs; format email to 100: 31M, 1.7 GB;
# `[a-zA-Z0-9_.-]+` to 255: past `MAX_TOKEN_ARCS`. Three schemas of the second bench sample were
# refused for it, and two of the first sample's compiles over 1 GB (o77304, o82503) were of it.
MAX_PATTERNED_LENGTH = 64


@lru_cache(maxsize=64)  # bounded: a server compiles schema after schema in one process
def _bounded_string(lo: int, hi: int | None) -> pynini.Fst:
    if lo == 0 and hi is None:
        return free_string()
    unit = encode_content(any_char(), stage="json string unit")
    body = repeat(unit, lo, hi)
    return optimize(lit('"') + body + lit('"'), stage=f"json string {{{lo},{hi}}}")


def bounded_string(lo: int, hi: int | None) -> pynini.Fst:
    """JSON strings of lo..hi code points (an escape is one), built from the escaped unit."""
    return _bounded_string(lo, hi).copy()


def ws_byte() -> pynini.Fst:
    return lit(" ") | lit("\t") | lit("\n") | lit("\r")


def _decimal(c: SchemaContext, v: Any, kw: str, path: str) -> Decimal:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise c.fail(kw, f"{path}/{kw}", f"must be a number, got {v!r}")
    try:
        return Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    except InvalidOperation as err:
        raise c.fail(kw, f"{path}/{kw}", f"{v!r} is not a finite number") from err


def number(c: SchemaContext, node: dict[str, Any], path: str, *, integer: bool) -> pynini.Fst:
    lower = upper = None
    for kw, is_lower in (("minimum", True), ("maximum", False)):
        if kw in node:
            ex = "exclusiveMinimum" if is_lower else "exclusiveMaximum"
            bound = (_decimal(c, node[kw], kw, path), node.get(ex) is True)
            if is_lower:
                lower = bound
            else:
                upper = bound
    for kw, is_lower in (("exclusiveMinimum", True), ("exclusiveMaximum", False)):
        v = node.get(kw)
        if v is None or isinstance(v, bool):
            continue
        d = _decimal(c, v, kw, path)
        cur = lower if is_lower else upper
        # keep the tighter of minimum and exclusiveMinimum (both may be given)
        if cur is None or (d >= cur[0] if is_lower else d <= cur[0]):
            if is_lower:
                lower = (d, True)
            else:
                upper = (d, True)
    out = integer_fst(zero_fraction=not c.draft4) if integer else number_fst()
    if lower is None and upper is None and "multipleOf" not in node:
        return out
    if lower is not None or upper is not None:
        out = pynini.intersect(out, bounds_fst(lower, upper, f"{c.where} {path or '/'}"))
    if "multipleOf" in node:
        m = _decimal(c, node["multipleOf"], "multipleOf", path)
        if m <= 0:
            raise c.fail("multipleOf", f"{path}/multipleOf", "must be greater than 0")
        out = pynini.intersect(c.opt(out, path),
                               multiple_of_fst(m, f"{c.where} {path}/multipleOf"))
    return c.opt(out, path)


def _length(c: SchemaContext, node: dict[str, Any], kw: str, path: str) -> int | None:
    v = node.get(kw)
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise c.fail(kw, f"{path}/{kw}", f"must be a non-negative integer, got {v!r}")
    if v > MAX_LENGTH and kw == "minLength":
        raise c.fail(kw, f"{path}/{kw}", f"{v} is more than {MAX_LENGTH} characters")
    return v


def string(c: SchemaContext, node: dict[str, Any], path: str) -> pynini.Fst:
    """The JSON strings whose decoded text meets pattern, format and length."""
    lo = _length(c, node, "minLength", path) or 0
    hi = _length(c, node, "maxLength", path)
    if hi is not None and hi > MAX_EXACT_LENGTH:
        log.warning("%s: maxLength %d at %s is not enforced (more than %d)", c.where, hi,
                    path or "/", MAX_EXACT_LENGTH)
        hi = None
    if "pattern" not in node and not (isinstance(node.get("format"), str)
                                      and format_fst(node["format"]) is not None) \
            and c.string_words is None:
        return bounded_string(lo, hi)
    decoded: pynini.Fst | None = None
    pattern = node.get("pattern")
    if pattern is not None:
        if not isinstance(pattern, str):
            raise c.fail("pattern", f"{path}/pattern", "must be a string")
        from ..regex import regex_fst

        decoded = regex_fst(pattern, where=f"{c.where} {path}/pattern", search=True)
    fmt = node.get("format")
    if isinstance(fmt, str):
        f = format_fst(fmt)
        if f is not None:
            decoded = f if decoded is None else pynini.intersect(c.opt(decoded, path), f)
    free = decoded is None
    if free and c.string_words is not None:
        decoded = c.string_words
    if decoded is not None and (lo or hi is not None):
        decoded = c.opt(decoded, path)  # (minimal, once: its cycles are real, and the product reads it)
        if hi is not None and hi > MAX_PATTERNED_LENGTH \
                and decoded.properties(pynini.ACYCLIC, True) != pynini.ACYCLIC:  # type: ignore[attr-defined]
            log.warning("%s: maxLength %d at %s is not enforced beside its pattern, format or word "
                        "list (more than %d)", c.where, hi, path or "/", MAX_PATTERNED_LENGTH)
            hi = None
    if lo or hi is not None:
        chars = c.opt(repeat(any_char(), lo, hi), path)
        decoded = chars if decoded is None else pynini.intersect(decoded, chars)
    if decoded is None:
        return free_string()
    return string_of(c.opt(decoded, path), stage=f"{c.where} {path or '/'}")


def listed(c: SchemaContext, node: dict[str, Any], path: str, loc: Location, types: tuple[str, ...]) -> pynini.Fst:
    """The values of the node's `enum` (or `const`) that its ``types`` allow."""
    values = [node["const"]] if "const" in node else node["enum"]
    if not isinstance(values, list):
        raise c.fail("enum", f"{path}/enum", "enum must be an array")
    keep = [v for v in values if type_of(v, c.draft4) in types
            or (type_of(v, c.draft4) == "integer" and "number" in types)
            or ("integer" in types and isinstance(v, float) and v.is_integer())]  # (draft 4: 1 equals 1.0)
    kw = "const" if "const" in node else "enum"
    # (draft 4: an integer has no fraction, so `type: integer` keeps 1 and drops 1.0)
    plain = c.draft4 and "integer" in types and "number" not in types
    return union_of(literals(c, keep, f"{path}/{kw}", loc, keyword=kw, plain_integers=plain))


def literals(c: SchemaContext, values: list[Any], path: str, loc: Location, keyword: str = "enum",
             plain_integers: bool = False) -> list[pynini.Fst]:
    """The JSON spellings of each of ``values`` (an enum, or a const's one value: ``keyword``
    names it in errors), the strings escaped together: one trie and one escaping instead of one
    per string (an enum of 3,500 strings took 16 s). ``plain_integers``: a number is spelled
    without a fraction only (draft 4's `integer`; its values are integral)."""
    texts = [v for v in values if isinstance(v, str)]
    out = [_plain_integer(c, v, path, keyword) if plain_integers and _is_number(v) else literal(c, v, path, loc, keyword)
           for v in values if not isinstance(v, str)]
    if len(texts) < 2:
        return out + [literal(c, v, path, loc, keyword) for v in texts]
    for v in texts:
        if "\x00" in v:
            raise c.fail(keyword, path, "a string with U+0000 cannot be compiled")
    trie = optimize(union_of([lit(v) for v in dict.fromkeys(texts)]), stage=f"{c.where} {path}")
    return [*out, string_of(trie, stage=f"{c.where} {path} literal")]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _plain_integer(c: SchemaContext, value: int | float, path: str, keyword: str) -> pynini.Fst:
    """An integral ``value`` written without a fraction or exponent (0 also as ``-0``)."""
    n = int(_decimal(c, value, keyword, path))
    return lit("-").ques + lit("0") if n == 0 else lit(str(n))


def literal(c: SchemaContext, value: Any, path: str, loc: Location, keyword: str = "enum") -> pynini.Fst:
    """The JSON spellings of ``value`` (numbers equal in value: 1 = 1.0); ``keyword``: the
    schema's keyword that holds it, named in errors."""
    if value is None:
        return lit("null")
    if value is True:
        return lit("true")
    if value is False:
        return lit("false")
    if isinstance(value, (int, float)):
        d = _decimal(c, value, keyword, path)
        return number_equal_fst(d, f"{c.where} {path}")
    if isinstance(value, str):
        if "\x00" in value:
            raise c.fail(keyword, path, "a string with U+0000 cannot be compiled")
        return string_of(lit(value), stage=f"{c.where} {path} literal")
    if isinstance(value, list):
        node = c.synth({"type": "array", "prefixItems": [c.synth({"const": v}) for v in value],
                        "items": False, "minItems": len(value)})
    elif isinstance(value, dict):
        node = c.synth({"type": "object", "additionalProperties": False, "required": list(value),
                        "properties": {k: c.synth({"const": v}) for k, v in value.items()}})
    else:
        raise c.fail(keyword, path, f"{value!r} is not a JSON value")
    return c.value(node, path, loc, Unrolling(c.max_depth))  # holds no $ref
