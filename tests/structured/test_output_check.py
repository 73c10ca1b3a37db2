"""A JSON Schema's finished outputs are checked during the search (`search.pool.checked_tiers`):
one that does not validate (what the automaton approximates: `uniqueItems` over more values than
it enforces) ranks after every one that does and never stops the search.

Oracles: `jsonschema` on the decoded text, and the same search with the check off (a result
that already validated is unchanged by it).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import fstbeam
import fstbeam.runtime.decoder as decoder_module
from fstbeam.runtime.search.pool import FAILED_CHECK_TIER, checked_tiers
from fstbeam.runtime.search.tables import InputConstraints

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tiny_model import save_tiny_model  # noqa: E402

# 101 integers: more values than `uniqueItems` is enforced over (`json_schema.unique`), so the
# automaton accepts [666,665,666]; the tiny model's beam finds it first for these prompts.
SCHEMA = {"type": "array", "items": {"type": "integer", "minimum": 600, "maximum": 700},
          "uniqueItems": True, "minItems": 3, "maxItems": 3}
PROMPTS = ["a the", "cat sat", "dog on", "the mat", "and ran"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny-model"))


def _decode(model_dir, check: bool, monkeypatch, **kw):
    dec = fstbeam.Decoder(str(model_dir), device="cpu", prompt_format="raw", packed_weights="off")
    cc = fstbeam.compile_constraints(json_schema=SCHEMA, tokenizer=dec.vocab)
    with monkeypatch.context() as m:
        if not check:
            m.setattr(decoder_module, "with_output_check", lambda inp, cc: inp)
        return dec.generate(PROMPTS, cc, beam_size=8, max_new_tokens=40, **kw)


def _valid(text: str) -> bool:
    import jsonschema

    try:
        jsonschema.validate(json.loads(text), SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


def test_an_output_that_fails_the_schema_yields_to_one_that_validates(model_dir, monkeypatch):
    off = _decode(model_dir, False, monkeypatch, nbest=8)
    on = _decode(model_dir, True, monkeypatch, nbest=8)
    assert any(not _valid(r.text) for r in off), "the premise: the automaton alone lets a repeated item through"
    for a, b in zip(off, on):
        assert _valid(b.text) and b.satisfied, (b.text, b.warnings)
        valid = [_valid(h.text) for h in b.hypotheses]
        assert valid == sorted(valid, reverse=True), valid  # every valid output before any other
        assert [h.satisfied for h in b.hypotheses] == valid
        if _valid(a.text):  # a result that validated is the same with the check
            assert b.text == a.text and b.score == pytest.approx(a.score)


def test_with_one_output_the_search_keeps_going_past_one_that_fails(model_dir, monkeypatch):
    """nbest=1: the pool's one place holds a failing output only until a valid one ends (a
    failing one never certifies the stop), so the best valid output is returned."""
    off = _decode(model_dir, False, monkeypatch)
    on = _decode(model_dir, True, monkeypatch)
    assert any(not _valid(r.text) for r in off)
    for a, b in zip(off, on):
        assert _valid(b.text) and b.satisfied, b.text
        if _valid(a.text):
            assert b.text == a.text


def _slots(*checks):
    return [SimpleNamespace(req=SimpleNamespace(constraints=InputConstraints(output_check=c))) for c in checks]


def test_checked_tiers_reads_each_candidate_s_text_tokens_and_cut():
    """Slot 0 has a check, slot 1 none: only slot 0's ended candidates are checked, each with its
    text tokens (EOS left out: ``length`` counts it) and the bytes its stop string cut."""
    seen = []

    def check(tokens, cut):
        seen.append((tokens, cut))
        return tokens[-1] != 9

    ok = torch.tensor([[True, True, False], [True, False, False]])
    hist = torch.tensor([[[4, 9, 0, 0], [4, 5, 6, 0], [7, 7, 7, 7]], [[9, 9, 0, 0], [0] * 4, [0] * 4]])
    length = torch.tensor([[3, 3, 4], [3, 3, 3]])
    eos = torch.tensor([[1, -2, -1], [1, 1, 1]])  # an EOS, a stop string's end, a cut at the limit
    cut = torch.tensor([[0, 2, 0], [0, 0, 0]])
    tiers = checked_tiers(ok, length, eos, hist, 1, cut, _slots(check, None))
    assert seen == [([4, 9], 0), ([4, 5, 6], 2)]
    assert tiers.tolist() == [[1 + FAILED_CHECK_TIER, 1, 1], [1, 1, 1]]
    assert checked_tiers(ok, length, eos, hist, 0, None, _slots(None, None)).tolist() == [[0] * 3] * 2
