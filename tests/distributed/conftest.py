"""Fixtures for batch decoding: a tiny random-weight model and tokenizer saved to disk (so Ray
actors can load them by path), a word-list artifact for it, and one local Ray cluster."""
from __future__ import annotations

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))  # batch_helpers.py
from batch_helpers import WORDS  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """One thread, as in each 1-CPU Ray actor: on a busy 2-core machine two threads of a tiny
    model are an order of magnitude slower than one."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


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
        model.lm_head.weight.mul_(4.0)  # peaked distributions: fewer near-ties between beams
    model.save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def words_artifact(model_dir, tmp_path_factory):
    import fstbeam
    from transformers import AutoTokenizer

    cc = fstbeam.compile_constraints(tokenizer=AutoTokenizer.from_pretrained(model_dir), words=WORDS, leading_space=True)
    path = tmp_path_factory.mktemp("artifact") / "words.fstbeam"
    cc.save(path)
    return path


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster of 2 CPUs for the whole session (starting one takes seconds)."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()
