"""A real ``fstbeam serve`` process on a free 127.0.0.1 port, over a tiny random-weight model and a
tiny byte-level BPE tokenizer saved to disk; and the same model loaded here as the offline oracle."""
from __future__ import annotations

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))  # serve_helpers.py
from serve_helpers import Server  # noqa: E402

WORDS = ["a", "cat", "dog", "the", "sat", "on", "mat", "ran", "and"]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("tiny-serve-model")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["a cat and a dog. the cat sat on a mat. the dog ran."] * 20, vocab_size=300,
                            min_frequency=1, special_tokens=["<eos>"], show_progress=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<eos>")
    tok.save_pretrained(d)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                      eos_token_id=tok.eos_token_id, bos_token_id=None, pad_token_id=None)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)  # peaked distributions: fewer near-ties between beams
    model.save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def offline(model_dir):
    from fstbeam.runtime.decoder import Decoder

    return Decoder(str(model_dir), device="cpu")


@pytest.fixture(scope="session")
def words_artifact(offline, tmp_path_factory):
    import fstbeam

    cc = fstbeam.compile_constraints(tokenizer=offline.vocab, words=WORDS, leading_space=True)
    path = tmp_path_factory.mktemp("artifact") / "animals.fstbeam"
    cc.save(path)
    return path


@pytest.fixture(scope="module")
def server(model_dir, words_artifact):
    s = Server(["--model", model_dir, "--device", "cpu", "--batch-size", "4", "--model-name", "tiny",
                "--constraints", f"animals={words_artifact}", "--max-body", "20000", "--timeout", "60"])
    yield s
    assert s.stop() == 0
