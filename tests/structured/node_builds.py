"""Count how often the JSON Schema compiler builds each subschema: `compile_counting` compiles a
schema with `SchemaCompiler._node` counted per path, under an optional patch (the old cache key
a test compares against), so a test can assert what is built once and that the language stays."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pynini

from fstbeam.compiler.structured.json_schema import schema as js


def compile_counting(monkeypatch, schema: dict, max_depth: int,
                     patch: Callable[[object], None] | None = None) -> tuple[pynini.Fst, Counter]:
    """(the schema's character automaton, builds per subschema path); ``patch(m)`` may set
    attributes on the monkeypatch context ``m`` for this compile only."""
    calls: Counter = Counter()
    node = js.SchemaCompiler._node

    def counting(self, n, path, loc, rdepth):
        calls[path] += 1
        return node(self, n, path, loc, rdepth)

    with monkeypatch.context() as m:
        m.setattr(js.SchemaCompiler, "_node", counting)
        if patch is not None:
            patch(m)
        fst = js.json_schema_fst(schema, max_depth=max_depth)
    return fst, calls
