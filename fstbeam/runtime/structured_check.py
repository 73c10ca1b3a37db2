"""The decode side's check of a structured output (docs/structured.md).

A regex or a choice is the hard automaton itself: `satisfied` already says whether the text
matches. For a JSON Schema the text is also parsed and validated with `jsonschema` (an
independent validator, not the automaton), so `satisfied` means "parses and validates" and a
failure is explained in the result's warnings. Compiled constraints record the schema in their
spec (``spec["json_schema"]``, compact JSON text).
"""
from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from typing import Any

__all__ = ["describe_structured", "json_problem", "check_result"]


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
def _validator(schema_text: str) -> Any:
    try:
        import jsonschema  # type: ignore[import-untyped, unused-ignore]  # no stubs unless types-jsonschema is installed
    except ImportError:  # pragma: no cover - jsonschema is in the structured/dev extras
        return None
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def json_problem(schema_text: str, text: str) -> str | None:
    """None if ``text`` parses as JSON and validates against the schema; else why not."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return f"the output is not JSON ({err.msg} at character {err.pos})"
    validator = _validator(schema_text)
    if validator is None:
        return "jsonschema is not installed: the output parses as JSON but was not validated (pip install jsonschema)"
    error = next(iter(validator.iter_errors(value)), None)
    if error is None:
        return None
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    return f"the output does not validate against the schema at {where}: {error.message[:200]}"


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
    return replace(result, hypotheses=tuple(hyps), satisfied=hyps[0].satisfied, warnings=warnings)
