"""Other Hugging Face architectures, tiny and random: prompts of different lengths in one batch, a
streaming batch and single decodes agree, and the reported log-probability equals a re-scoring.

Covers sliding windows (Mistral, Gemma 2), parallel attention (GPT-NeoX, Falcon), learned absolute
positions (OPT), ALiBi from a 2-D mask (BLOOM, MPT), and an encoder-decoder with absolute
decoder positions (BART: refills only an empty batch)."""
from __future__ import annotations

import warnings

import pytest
import torch
import transformers as T

from fstbeam.compiler.api import compile_constraints
from fstbeam.runtime import Decoder

from rt_helpers import tiny_vocab

COMMON = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=128,
              eos_token_id=0, pad_token_id=0, bos_token_id=None)
CAUSAL = {
    "qwen2": (T.Qwen2Config, T.Qwen2ForCausalLM, dict(num_key_value_heads=1)),
    "mistral": (T.MistralConfig, T.MistralForCausalLM, dict(num_key_value_heads=1, sliding_window=4)),
    "phi3": (T.Phi3Config, T.Phi3ForCausalLM, dict(num_key_value_heads=1)),
    "gemma2": (T.Gemma2Config, T.Gemma2ForCausalLM, dict(num_key_value_heads=1, head_dim=8, sliding_window=3)),
    "gpt_neox": (T.GPTNeoXConfig, T.GPTNeoXForCausalLM, {}),
    "falcon": (T.FalconConfig, T.FalconForCausalLM, dict(num_kv_heads=1)),
    "opt": (T.OPTConfig, T.OPTForCausalLM, dict(ffn_dim=32, word_embed_proj_dim=16)),
    "bloom": (T.BloomConfig, T.BloomForCausalLM, dict(n_layer=2, n_head=2)),
    "mpt": (T.MptConfig, T.MptForCausalLM, dict(d_model=16, n_heads=2, n_layers=2, expansion_ratio=2)),
}


@pytest.fixture(scope="module")
def vocab():
    return tiny_vocab()


def _model(name, V):
    torch.manual_seed(0)
    if name == "bart":
        cfg = T.BartConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=2, encoder_attention_heads=2,
                           decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
                           pad_token_id=0, eos_token_id=0, bos_token_id=1, decoder_start_token_id=1, forced_eos_token_id=None)
        return T.BartForConditionalGeneration(cfg).eval()
    config, cls, extra = CAUSAL[name]
    return cls(config(vocab_size=V, **{**COMMON, **extra})).eval()


# 10-20 s each on a busy 2-core machine: in the slow set (CI runs it); the default run keeps four.
_SLOW = {"gpt_neox", "falcon", "opt", "bloom", "mpt", "bart"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW else n for n in [*CAUSAL, "bart"]])
def test_architecture_decodes_the_same_in_any_batch(vocab, name):
    dec = Decoder(_model(name, vocab.width), vocab, eos_ids=[0], device="cpu")
    cc = compile_constraints(tokenizer=vocab, phrases=["b"])
    prompts = [[1, 2, 3, 4, 5], [2], [3, 4], [5, 5, 5, 5, 5, 5, 5], [7, 2]]
    ccs = [cc, None, cc, None, None]
    kw = dict(beam_size=3, max_new_tokens=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = dec.generate(prompts, ccs, batch_size=8, **kw)
        stream = dec.generate(prompts, ccs, batch_size=2, refill=0.5, **kw)
        singles = [dec.generate([p], c, **kw)[0] for p, c in zip(prompts, ccs)]
    for variant in (stream, singles):
        for a, b in zip(whole, variant):
            assert a.token_ids == b.token_ids
            assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
    for p, r in zip(prompts, whole):
        assert dec.score(p, r.token_ids, eos=r.finish_reason == "eos") == pytest.approx(r.logprob, abs=1e-3)
    assert any(r.token_ids for r in whole)
