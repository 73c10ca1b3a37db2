"""The transformers LogitsProcessor adapter (mask-only modes)."""
from __future__ import annotations

import pytest
import torch
from transformers import LogitsProcessorList

from fstbeam.errors import DecodeError
from fstbeam.runtime import FstLogitsProcessor

from rt_helpers import tiny_llama, tiny_vocab


@pytest.fixture(scope="module")
def setup():
    from fstbeam.compiler.compile import compile_constraints

    v = tiny_vocab()
    return v, tiny_llama(v.width), compile_constraints


@pytest.mark.parametrize("spec", [dict(words=["a", "b", "ab"]), dict(words=["a", "b", "c"], prefix="b a"), dict(avoid=["ab", "c"])])
def test_generate_respects_the_constraints(setup, spec):
    v, model, compile_constraints = setup
    cc = compile_constraints(tokenizer=v, **spec)
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    for beams in (1, 3):
        proc = FstLogitsProcessor(cc, eos_ids=[0])
        out = model.generate(ids, attention_mask=torch.ones_like(ids), num_beams=beams, max_new_tokens=6, do_sample=False,
                             logits_processor=LogitsProcessorList([proc]), eos_token_id=0, pad_token_id=0)
        for row in out[:, ids.shape[1]:].tolist():
            m = cc.matcher()
            for t in row:
                if m.finished:
                    assert t == 0  # padding after EOS
                    continue
                m.advance(t)  # raises if the processor let a disallowed token through


def test_scores_are_returned_out_of_place_and_eos_only_where_final(setup):
    v, model, compile_constraints = setup
    cc = compile_constraints(tokenizer=v, words=["ab"])
    proc = FstLogitsProcessor(cc, eos_ids=[0])
    scores = torch.zeros(2, v.width)
    ids = torch.tensor([[1, 2], [1, 2]])
    out = proc(ids, scores)
    assert out is not scores and torch.equal(scores, torch.zeros(2, v.width))
    allowed = set(torch.nonzero(torch.isfinite(out[0])).flatten().tolist())
    assert allowed == set(cc.matcher().allowed_token_ids().tolist())
    assert not torch.isfinite(out[0, 0])  # no EOS at the start: "" is not in the language
    ids2 = torch.tensor([[1, 2, 4], [1, 2, 1]])  # row 0 generated "ab" (final), row 1 "a" (not)
    out2 = proc(ids2, scores)
    assert torch.isfinite(out2[0, 0]) and not torch.isfinite(out2[1, 0])


def test_phrases_are_refused(setup):
    v, _, compile_constraints = setup
    with pytest.raises(DecodeError, match="Decoder"):
        FstLogitsProcessor(compile_constraints(tokenizer=v, phrases=["a"]), eos_ids=[0])
