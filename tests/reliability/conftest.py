"""Fixtures for the reliability tests (issue 23): a tiny random-weight causal model with a real
byte-level BPE tokenizer, in memory and saved to disk (for the command-line doors)."""
from __future__ import annotations

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))  # rt_helpers


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("tiny-model")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["a cat and a dog. the cat sat on a mat. the dog ran."] * 20, vocab_size=300,
                            min_frequency=1, special_tokens=["<eos>"], show_progress=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<eos>")
    tok.save_pretrained(d)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                      eos_token_id=tok.eos_token_id, bos_token_id=None, pad_token_id=None)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)
    model.save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def decoder(model_dir):
    from fstbeam.runtime import Decoder

    return Decoder(str(model_dir), device="cpu", prompt_format="raw", packed_weights="off")
