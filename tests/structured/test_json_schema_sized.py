"""Where no recursion is unrolled (no state count decides a depth), `if` conditions and `not`
operands are determinized without minimization and the root's last product is left to the
document's minimization: the language is the one of the old construction (every such part
minimized as built, `SchemaCompiler.sized`), both differences empty, on schemas shaped like
minecraft-recipe (an allOf of if/then on one member's constant) and npm's package.json (an anyOf
of objects that forbid a member with `not`)."""
from __future__ import annotations

import pynini
import pytest

from fstbeam.compiler.structured.json_schema import schema as js
from fstbeam.fst import optimize as fst_optimize

_RECIPE = {
    "type": "object",
    "properties": {"type": {"enum": ["a", "b", "c"]}, "n": {"type": "integer"}},
    "allOf": [
        {"if": {"properties": {"type": {"const": "a"}}}, "then": {"required": ["n"]}},
        {"if": {"properties": {"type": {"const": "b"}}},
         "then": {"properties": {"n": {"maximum": 3}}}, "else": {"properties": {"x": {"type": "string"}}}},
        {"if": {"properties": {"type": {"const": "c"}}}, "then": {"anyOf": [
            {"properties": {"n": {"minimum": 7}}}, {"required": ["x"]}]}},
    ],
}
_PACKAGE = {
    "allOf": [
        {"properties": {"name": {"type": "string", "maxLength": 3}}},
        {"anyOf": [
            # (`not` with more than `required`: a `not` of `required`s alone is a member rule)
            {"properties": {"b1": {"type": "boolean"}}, "not": {"required": ["b2"], "properties": {"b2": {"type": "string"}}}},
            {"properties": {"b2": {"type": "boolean"}}, "not": {"required": ["b1"], "properties": {"b1": {"type": "string"}}}},
        ]},
    ],
}
_NOT_ROOT = {"type": ["object", "array", "integer"], "not": {"type": "array", "minItems": 2},
             "items": {"not": {"const": 1}}}


def _build(schema, sized: bool, monkeypatch) -> tuple[pynini.Fst, int]:
    """(the document, how many times `determinized` ran)."""
    calls = [0]
    real = fst_optimize.determinized

    def counting(fst, **kw):
        calls[0] += 1
        return real(fst, **kw)

    with monkeypatch.context() as m:
        m.setattr(js, "determinized", counting)
        c = js.SchemaCompiler(schema, where="t", max_depth=2, whitespace="compact", string_words=None)
        c.sized = sized
        return c.document(), calls[0]


@pytest.mark.parametrize("schema", [_RECIPE, _PACKAGE, _NOT_ROOT], ids=["recipe", "package", "not"])
def test_same_language_as_minimized_parts(schema, monkeypatch):
    new, dets = _build(schema, False, monkeypatch)
    old, old_dets = _build(schema, True, monkeypatch)
    assert dets > 0 and old_dets == 0  # (the new path is the one taken)
    assert new.num_states() > 1
    assert pynini.equivalent(new, old)


def test_recursive_schema_stays_sized():
    schema = {"type": "object", "properties": {"sub": {"$ref": "#"}},
              "not": {"required": ["x"]}}
    c = js.SchemaCompiler(schema, where="t", max_depth=None, whitespace="compact", string_words=None)
    assert c.sized


def test_determinized_is_deterministic_and_equivalent():
    nfa = (pynini.accep("ab") | pynini.accep("ac") | pynini.accep("abc")).closure()
    out = fst_optimize.determinized(nfa, stage="t")
    det = pynini.I_DETERMINISTIC  # type: ignore[attr-defined]
    assert out.properties(det, True) == det
    assert pynini.equivalent(out, fst_optimize.optimize(nfa, stage="t"))
    with pytest.raises(fst_optimize.FstSizeError):
        fst_optimize.determinized(nfa, stage="t", max_states=2)
