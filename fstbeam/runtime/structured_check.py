"""The decode side's check of a structured output (docs/structured.md).

A regex or a choice is the hard automaton itself: `satisfied` already says whether the text
matches. For a JSON Schema the text is also parsed and validated with `jsonschema` (an
independent validator, not the automaton), so `satisfied` means "parses and validates" and a
failure is explained in the result's warnings. Compiled constraints record the schema in their
spec (``spec["json_schema"]``, compact JSON text).

`jsonschema` matches `pattern` and `patternProperties` with Python's `re`, which reads some
ECMA-262 patterns otherwise (`$` also matches before a final newline, `\\d` takes any Unicode
digit) or not at all (`(?<name>...)`, `\\p{L}`: an exception). So the schema is checked with each
pattern written for `re` with ECMA's meaning (`python_pattern`); a pattern that cannot be written
so is left to the automaton, and the result's warnings say so.
"""
from __future__ import annotations

import decimal
import json
import re
from dataclasses import replace
from decimal import Decimal
from functools import lru_cache
from typing import Any

__all__ = ["describe_structured", "json_problem", "check_result", "python_pattern", "with_output_check", "ECMA_SPACE_CLASS"]

# ECMA-262's \s (WhiteSpace and LineTerminator) and the code points `.` does not match
ECMA_SPACE_CLASS = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_NOT_LINE_TERMINATOR = "[^\\n\\r\\u2028\\u2029]"
# digits of the decimal arithmetic numbers are validated with (`multipleOf`'s quotient must fit)
EXACT_DIGITS = 1000
_PAST_EXACT = "the output parses as JSON but could not be validated: a number's exponent is too large for exact arithmetic"
_DECIMAL_REPR = re.compile(r"Decimal\('([^']*)'\)")


def python_pattern(pattern: str) -> str | None:
    """An ECMA-262 pattern (JSON Schema's dialect) written for Python's `re` with the same
    matches under `re.search`, or None where it cannot be written so (`\\p{..}`, `\\cX`,
    `\\u{..}`, backreferences, `[]`, `[^]`, `\\S` inside a class). Token by token: `$` is `\\Z`,
    `.` leaves out every line terminator, `\\s`/`\\S` are ECMA's set, named groups are Python's,
    a `{` that starts no quantifier is a literal, and the whole is ASCII (`\\d \\w` as ECMA's).
    Flag groups (`(?i)`, `(?i:...)`, `(?s:...)`) give None: Python's ASCII case folding is not
    ECMA's Unicode one (`é` and `É`)."""
    if re.search(r"\(\?[A-Za-z]*-?[A-Za-z]*[:)]", pattern.replace("(?:", "")):
        return None
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1:i + 2]
            if nxt in ("p", "P", "c", "k", "0") or nxt.isdigit() or pattern[i:i + 3] == "\\u{":
                return None
            if nxt == "s":
                out.append(ECMA_SPACE_CLASS if in_class else f"[{ECMA_SPACE_CLASS}]")
            elif nxt == "S":
                if in_class:
                    return None
                out.append(f"[^{ECMA_SPACE_CLASS}]")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif c == "[":
                out.append("\\[")  # (Python warns about nested sets)
                i += 1
                continue
            out.append(c)
        elif c == "[":
            if pattern[i + 1:i + 2] == "]" or pattern[i + 1:i + 3] == "^]":
                return None
            in_class = True
            out.append(c)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
        elif c == "$":
            out.append("\\Z")
        elif c == ".":
            out.append(_NOT_LINE_TERMINATOR)
        elif c == "(" and pattern[i + 1:i + 3] == "?<" and pattern[i + 3:i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
            continue
        elif c == "{" and re.match(r"\{,\d*\}", pattern[i:]):
            out.append("\\{")  # ECMA: a literal; Python: {0,n}
        else:
            out.append(c)
        i += 1
    text = "(?a:" + "".join(out) + ")"  # (scoped: jsonschema joins patternProperties' keys with |)
    try:
        re.compile(text)
    except re.error:
        return None
    return text


# keywords whose value is data, not schema: a "pattern" member inside is no keyword
_DATA = ("enum", "const", "default", "examples")
# keywords whose value maps names to schemas
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")


def _for_python(node: Any, unchecked: list[str]) -> Any:
    """``node`` (a schema) with its patterns as `python_pattern` writes them; a `pattern` that
    cannot be written is dropped (the automaton held the text to it) and named in ``unchecked``,
    a `patternProperties` key is kept as it is."""
    if isinstance(node, list):
        return [_for_python(x, unchecked) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in _DATA:
            out[k] = v
        elif k == "pattern" and isinstance(v, str):
            written = python_pattern(v)
            if written is None:
                unchecked.append(v)
            else:
                out[k] = written
        elif k in _SCHEMA_MAPS and isinstance(v, dict):
            keys = {name: (python_pattern(name) or name) if k == "patternProperties" else name for name in v}
            unchecked += [name for name, w in keys.items() if k == "patternProperties" and w == name]
            out[k] = {keys[name]: _for_python(sub, unchecked) for name, sub in v.items()}
        else:
            out[k] = _for_python(v, unchecked)
    return out


def describe_structured(spec: dict[str, Any]) -> list[str]:
    """The structured constraints of a spec, in words (for --explain and the text output)."""
    out = []
    if spec.get("regex") is not None:
        out.append(f"matches the regex {spec['regex']!r}")
    if spec.get("choice") is not None:
        choices = spec["choice"]
        shown = ", ".join(repr(c) for c in choices[:5]) + (", ..." if len(choices) > 5 else "")
        out.append(f"one of {len(choices)} choices ({shown})")
    if spec.get("json_schema") is not None:
        words = " (string values from the word list)" if spec.get("string_words") else ""
        out.append(f"JSON valid against the schema{words}")
    return out


@lru_cache(maxsize=64)
def _validator(schema_text: str) -> tuple[Any, tuple[str, ...]]:
    """(the validator of the schema with its patterns written for Python, or None without
    `jsonschema`; the patterns left to the automaton)."""
    try:
        import jsonschema  # type: ignore[import-untyped, unused-ignore]  # no stubs unless types-jsonschema is installed
    except ImportError:  # pragma: no cover - jsonschema is in the structured/dev extras
        return None, ()
    schema = json.loads(schema_text, parse_float=Decimal)
    unchecked: list[str] = []
    written = _for_python(schema, unchecked)
    cls = _exact_numbers(jsonschema, jsonschema.validators.validator_for(schema))
    return cls(written, format_checker=cls.FORMAT_CHECKER), tuple(dict.fromkeys(unchecked))


def _exact_numbers(jsonschema: Any, cls: Any) -> Any:
    """``cls`` for numbers read as the decimals they are written as (`_parse`), as JSON Schema
    compares them: with floats, 19.99 is no multiple of 0.01 and 1e400 is infinite, and such an
    output, which the automaton rightly let through, was called invalid and ranked last. Draft 4's
    integer has no fraction or exponent; later drafts' is any number with a zero fraction."""
    draft4 = cls in (jsonschema.Draft3Validator, jsonschema.Draft4Validator)

    def is_number(_: Any, v: Any) -> bool:
        return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)

    def is_integer(_: Any, v: Any) -> bool:
        if isinstance(v, bool) or not is_number(_, v):
            return False
        if isinstance(v, int):
            return True
        return not draft4 and (v.is_integer() if isinstance(v, float) else v.is_finite() and v == v.to_integral_value())

    checker = cls.TYPE_CHECKER.redefine_many({"number": is_number, "integer": is_integer})
    return jsonschema.validators.extend(cls, type_checker=checker)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _parse(text: str) -> Any:
    """The JSON value of ``text``, its numbers with a fraction or exponent as `Decimal`s."""
    return json.loads(text, parse_float=Decimal, parse_constant=_not_json)


def json_problem(schema_text: str, text: str) -> str | None:
    """None if ``text`` parses as JSON and validates against the schema; else why not."""
    return _problem(schema_text, text)[0]


def _problem(schema_text: str, text: str) -> tuple[str | None, bool]:
    """(`json_problem`'s answer, whether ``text`` is known not to parse or validate: not where
    `jsonschema` is missing or cannot read one of the schema's patterns)."""
    try:
        value = _parse(text)
    except json.JSONDecodeError as err:
        return f"the output is not JSON ({err.msg} at character {err.pos})", True
    except decimal.DecimalException:  # (an exponent past Decimal's own range: 1e10000000000000000000)
        return _PAST_EXACT, False
    except ValueError as err:  # (NaN, Infinity: Python reads them, JSON has no such values)
        return f"the output is not JSON ({err})", True
    validator, _ = _validator(schema_text)
    if validator is None:
        return "jsonschema is not installed: the output parses as JSON but was not validated (pip install jsonschema)", False
    try:
        with decimal.localcontext() as exact:
            exact.prec = EXACT_DIGITS
            error = next(iter(validator.iter_errors(value)), None)
    except re.error as err:  # (a patternProperties key Python cannot read: `unchecked_patterns` names it)
        return f"the output parses as JSON but could not be validated: Python's re cannot read a pattern ({err})", False
    except decimal.DecimalException:  # (1e999999999 against a multipleOf: a quotient of a billion digits)
        return _PAST_EXACT, False
    if error is None:
        return None, False
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    message = _DECIMAL_REPR.sub(r"\1", error.message)  # (Decimal('19.999') written as the output wrote it)
    return f"the output does not validate against the schema at {where}: {message[:200]}", True


def with_output_check(inp: Any, cc: Any) -> Any:
    """``inp`` (the search's `InputConstraints` of ``cc``) with the check of a finished output
    where ``cc`` holds a JSON Schema: an output known not to parse and validate ranks after every
    one that does and never stops the search (`search.pool.checked_tiers`), so what the automaton
    approximates (`uniqueItems` over free values, a very long `maxLength`: docs/structured.md)
    never costs a valid output the search found. ``inp`` itself without a schema or `jsonschema`."""
    schema = cc.spec.get("json_schema")
    if schema is None or _validator(schema)[0] is None:
        return inp
    from .search.stops import kept_output

    token_bytes = cc.vocab.token_bytes

    def passes(tokens: list[int], cut: int) -> bool:
        return not _problem(schema, kept_output(tokens, cut, token_bytes)[1].decode("utf-8", "replace"))[1]

    return replace(inp, output_check=passes)


def unchecked_patterns(schema_text: str) -> tuple[str, ...]:
    """The schema's patterns that the validator leaves to the automaton (`python_pattern`)."""
    return _validator(schema_text)[1]


def check_result(result: Any, constraints: Any) -> Any:
    """``result`` (a GenerationResult) with each hypothesis's ``satisfied`` also requiring a
    JSON output to parse and validate; the best one's problem is added to the warnings."""
    spec = constraints.spec if constraints is not None else {}  # CompiledConstraints (checked by the decoder)
    schema = spec.get("json_schema")
    if schema is None or result.error is not None or not result.hypotheses:
        return result
    hyps = []
    problems = []
    for h in result.hypotheses:
        problem = json_problem(schema, h.text)
        problems.append(problem)
        hyps.append(replace(h, satisfied=h.satisfied and problem is None))
    warnings = tuple(result.warnings)
    if problems[0] is not None:
        warnings += (f"input {result.index}: {problems[0]}",)
    unchecked = unchecked_patterns(schema)
    if unchecked:
        shown = ", ".join(repr(p) for p in unchecked[:3]) + (", ..." if len(unchecked) > 3 else "")
        warnings += (f"input {result.index}: the schema's pattern {shown} was enforced by the automaton but not "
                     "checked again by jsonschema (Python's re does not read it as ECMA-262 does)",)
    return replace(result, hypotheses=tuple(hyps), satisfied=hyps[0].satisfied, warnings=warnings)
