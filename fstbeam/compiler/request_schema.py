"""The JSON Schema of a request's JSON form (`ConstraintRequest.from_json`), published as
docs/request.schema.json (a test keeps the file and this function equal)."""
from __future__ import annotations

from typing import Any

from ..validate import CEFR_LEVELS

__all__ = ["json_schema"]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a request's JSON form (published as docs/request.schema.json)."""
    text = {"type": "string", "minLength": 1}
    texts = {"type": "array", "items": text}
    flag = {"type": "boolean"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "fstbeam constraint request",
        "description": "One constraint request (fstbeam.ConstraintRequest.from_json): a JSONL input line, a batch "
                       "row or an HTTP body's constraints. Lines and rows also carry prompt (and id).",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "words": {"description": "word list: the words, or a file path (not over HTTP)",
                      "oneOf": [texts, text]},
            "cefr": {"description": "every English word form at or below a CEFR level", "enum": list(_CEFR)},
            "grammar": dict(text, description="a registered grammar's name"),
            "grammar_params": {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
            "phrases": {"description": "must appear; a nested list is met by any one of its texts (AnyOf)",
                        "oneOf": [text, {"type": "array", "items": {"oneOf": [text, dict(texts, minItems=1)]}}]},
            "avoid": {"description": "must never appear", "oneOf": [text, {"type": "array", "items": {"oneOf": [text, texts]}}]},
            "prefix": dict(text, description="the output starts with this text"),
            "ordered": dict(flag, description="the phrases appear in the given order"),
            "sentence_case": dict(flag, description="phrases also match capitalized where a sentence starts"),
            "case_variants": dict(flag, description="also allow Title and UPPER forms of listed words (default true)"),
            "digits": dict(flag, description="also allow numbers in digits between the words (default true)"),
            "leading_space": {"description": "the output may start with a space before the word list's or grammar's text; "
                              "absent or \"auto\": where the prompt format continues text", "oneOf": [flag, {"const": "auto"}]},
            "canonical": dict(flag, description="only tokens the tokenizer itself uses for the listed words"),
            "regex": dict(text, description="the whole output matches this regular expression (ECMA-262 syntax, "
                                            "docs/structured.md)"),
            "choice": dict(texts, minItems=1, description="the output is exactly one of these texts"),
            "json_schema": {"description": "the output is JSON valid against this JSON Schema: the schema (an object "
                                           "or true/false), its JSON text, or a file path (not over HTTP)",
                            "type": ["object", "boolean", "string"]},
            "json_max_depth": {"type": "integer", "minimum": 0, "maximum": 64,
                               "description": "nesting depth of free JSON and of recursive $ref (default: docs/structured.md)"},
            "json_whitespace": {"enum": ["compact", "flexible"],
                                "description": "compact: no whitespace between JSON tokens (default); flexible: some allowed"},
            "json_strict": {"type": "boolean",
                            "description": "objects and tuples take only the members and items their schema declares "
                                           "(XGrammar's default; the specification allows others: docs/structured.md)"},
        },
    }




_CEFR = CEFR_LEVELS + tuple(level.lower() for level in CEFR_LEVELS)
