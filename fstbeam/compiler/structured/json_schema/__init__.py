"""JSON Schema as a byte automaton (docs/structured.md, "JSON Schema").

`schema` walks the schema node by node and holds the combinators (`allOf`, `anyOf`, `oneOf`,
`not`, `if`); the rest is one job per module:

- reading the schema: the `reading` package (where its schemas sit, `$ref`s by URI and their
  targets, the declared draft, fixed `unevaluated*`, the strict reading), `location` (the
  schema nodes that apply at one place, and the property order that follows), `refs` (nodes
  met more than once, and how deep recursion and free values unroll);
- values: `lexical` (JSON strings, numbers, numeric bounds), `formats`, `scalars` (a node's
  strings, numbers and `enum`/`const` literals), `containers` (objects and arrays),
  `free_values` (any JSON value of a location, shared between compiles), `unique`
  (`uniqueItems` over finite item sets);
- object combinators taken inside the object: `branches`, `required_choices` (rules over
  member markers), `disjoint` (proving `oneOf` branches disjoint).
"""
from __future__ import annotations

from .schema import JSON_SCHEMA_DEFAULTS, UnsupportedSchema, json_schema_fst

__all__ = ["json_schema_fst", "JSON_SCHEMA_DEFAULTS", "UnsupportedSchema"]
