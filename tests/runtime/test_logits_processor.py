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
    from fstbeam.compiler.api import compile_constraints

    v = tiny_vocab()
    return v, tiny_llama(v.width), compile_constraints


class _Checked:
    """Wraps the processor: at every call, each unfinished row's finite scores must be exactly the
    ids the oracle (a ``Matcher`` walked over the row's generated tokens) allows next, among those
    the processors before it left finite (transformers' ``min_new_tokens`` hides EOS)."""

    def __init__(self, proc, cc, prompt_len):
        self.proc, self.cc, self.prompt_len, self.checked = proc, cc, prompt_len, 0

    def __call__(self, input_ids, scores):
        out = self.proc(input_ids, scores)
        for row, before, sc in zip(input_ids[:, self.prompt_len:].tolist(), scores, out):
            m = self.cc.matcher()
            for t in row:
                if not m.finished:
                    m.advance(t)
            if m.finished:
                continue
            allowed = set(torch.nonzero(torch.isfinite(sc)).flatten().tolist())
            open_ = set(torch.nonzero(torch.isfinite(before)).flatten().tolist())
            assert allowed == set(m.allowed_token_ids().tolist()) & open_, row
            self.checked += 1
        return out


@pytest.mark.parametrize("spec", [dict(words=["a", "b", "ab"]), dict(words=["a", "b", "c"], prefix="b a"), dict(avoid=["ab", "c"])])
def test_generate_respects_the_constraints(setup, spec):
    v, model, compile_constraints = setup
    cc = compile_constraints(tokenizer=v, **spec)
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    for beams in (1, 3):
        proc = _Checked(FstLogitsProcessor(cc, eos_ids=[0]), cc, ids.shape[1])
        # min_new_tokens: EOS may not come before 3 tokens, so every row is checked over several
        # steps (an output that ended at once would check nothing)
        out = model.generate(ids, attention_mask=torch.ones_like(ids), num_beams=beams, max_new_tokens=6, min_new_tokens=3,
                             do_sample=False, logits_processor=LogitsProcessorList([proc]), eos_token_id=0, pad_token_id=0)
        text_tokens = 0
        for row in out[:, ids.shape[1]:].tolist():
            m = cc.matcher()
            for t in row:
                if m.finished:
                    assert t == 0  # padding after EOS
                    continue
                m.advance(t)  # raises if the processor let a disallowed token through
                text_tokens += t != 0
        assert text_tokens >= 3 * len(ids)
        assert proc.checked >= 3 * len(ids) * beams


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
