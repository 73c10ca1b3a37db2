"""A structured constraint reaches the hard pipeline as a `LazyLanguage`: built on a disk-cache
miss, optimized again only where its source does not say it arrives optimized (a JSON Schema
alone: its document is minimized where it is built), and with its own hint for an empty
language (a JSON Schema's: json_max_depth) -- no guessing from the language's name."""
from __future__ import annotations

import pytest

import fstbeam
from fstbeam.compiler.hard import automaton as H
from fstbeam.compiler.structured.language import StructuredSpec
from fstbeam.contract.vocab import Vocab
from fstbeam.errors import UnsatisfiableConstraintError

PIECES = ['{', '}', '"', ':', ',', 'a', 'b', 'x', '1', '2', '{"a":', '"a"', 'true', 'false', 'null', '[', ']']


def _vocab() -> Vocab:
    return Vocab.from_dict({i: p.encode() for i, p in enumerate(PIECES)}, eos_ids=[len(PIECES)])


@pytest.fixture
def optimize_calls(monkeypatch):
    """The stages the hard pipeline optimizes a language at (its own `optimize` calls)."""
    monkeypatch.setenv("FSTBEAM_NO_DISK_CACHE", "1")
    calls: list[str] = []
    real = H.optimize

    def spy(fst, *, stage, **kw):
        calls.append(stage)
        return real(fst, stage=stage, **kw)

    monkeypatch.setattr(H, "optimize", spy)
    return calls


def _accepts(cc, ids) -> bool:
    q = cc.hard.start
    for t in ids:
        q = cc.hard.next_state(q, t)
        if q < 0:
            return False
    return bool(cc.hard.final[q])


def test_a_json_schema_alone_is_not_optimized_again(optimize_calls):
    schema = {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"],
              "additionalProperties": False}
    cc = fstbeam.compile_constraints(json_schema=schema, tokenizer=_vocab())
    assert optimize_calls == []  # the document arrived minimal: no second minimize
    ids = {p: i for i, p in enumerate(PIECES)}
    assert _accepts(cc, [ids['{"a":'], ids["true"], ids["}"]])
    assert _accepts(cc, [ids["{"], ids['"a"'], ids[":"], ids["false"], ids["}"]])
    assert not _accepts(cc, [ids['{"a":'], ids["null"], ids["}"]])
    assert not _accepts(cc, [ids["{"], ids["}"]])


def test_a_regex_or_a_schema_with_another_key_is_optimized_by_the_pipeline(optimize_calls):
    fstbeam.compile_constraints(regex="a+b", tokenizer=_vocab())
    assert len(optimize_calls) == 1 and optimize_calls[0].startswith("regex")
    optimize_calls.clear()
    fstbeam.compile_constraints(json_schema={"type": "string"}, regex='"a*"', tokenizer=_vocab())
    assert len(optimize_calls) == 1


@pytest.mark.parametrize("keys, optimized, hint", [
    (dict(json_schema='{"type":"string"}'), True, True),
    (dict(json_schema='{"type":"string"}', regex='".*"'), False, True),
    (dict(regex="a+"), False, False),
    (dict(choice=("a", "b")), False, False),
])
def test_the_spec_says_what_it_knows_of_its_language(keys, optimized, hint):
    spec = StructuredSpec(**keys)
    _, lazy, _, _ = spec.join(None, None, None, None, case_variants=False, digits=False)
    assert isinstance(lazy, H.LazyLanguage)
    assert lazy.optimized is optimized and bool(lazy.empty_hint) is hint
    _, with_grammar, desc, _ = spec.join(None, H.optimize(fstbeam_grammar(), stage="g"), "g()", "h",
                                         case_variants=False, digits=False)
    assert not with_grammar.optimized and with_grammar.empty_hint == lazy.empty_hint and desc.startswith("g() and ")


def fstbeam_grammar():
    import pynini

    return pynini.closure(pynini.accep("a") | pynini.accep('"'), 1)


def test_an_empty_language_carries_its_own_hint(optimize_calls):
    node = {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["a"]}
    with pytest.raises(UnsatisfiableConstraintError, match="accepts no text: no document satisfies the schema "
                                                           "within its json_max_depth") as err:
        fstbeam.compile_constraints(json_schema={"$defs": {"n": node}, "$ref": "#/$defs/n"}, json_max_depth=1,
                                    tokenizer=_vocab())
    assert str(err.value).startswith("json_schema {")
    with pytest.raises(UnsatisfiableConstraintError) as err:  # a regex's empty language: no schema hint
        fstbeam.compile_constraints(regex="a[]", tokenizer=_vocab())
    assert str(err.value) == "regex 'a[]' accepts no text"


def test_the_size_hint_names_the_longest_counted_strings_by_their_place():
    """A lift past `MAX_TOKEN_ARCS` names the schema's strings counted to 32 characters or more,
    the longest first, each by its JSON pointer; a `maxLength` inside data (an `enum` value) or a
    member named `maxLength` is no counted string."""
    import json

    schema = {"type": "object", "properties": {
        "a/b": {"type": "string", "maxLength": 40},
        "maxLength": {"type": "string", "maxLength": 100},
        "short": {"type": "string", "maxLength": 31},
        "pick": {"enum": [{"maxLength": 200}]},
        "list": {"type": "array", "items": [{"type": "string", "maxLength": 64}]},
    }}
    hint = StructuredSpec(json_schema=json.dumps(schema)).size_hint
    assert "/properties/maxLength (maxLength 100), /properties/list/items/0 (maxLength 64), " \
           "/properties/a~1b (maxLength 40)" in hint
    assert "200" not in hint and "31" not in hint
