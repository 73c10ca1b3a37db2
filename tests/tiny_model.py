"""The tiny random-weight causal model that the command-line, batch, reliability and server tests
load from disk: a byte-level BPE tokenizer trained on a few sentences and a one-layer Llama."""
from __future__ import annotations

from pathlib import Path

#: The sentences the tokenizer is trained on (the words of the tests' word lists).
TEXT = "a cat and a dog. the cat sat on a mat. the dog ran."


def save_tiny_model(folder: Path, *, max_positions: int = 64) -> Path:
    """Write the tokenizer and model to ``folder`` (seeded: the same weights every time)."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([TEXT] * 20, vocab_size=300, min_frequency=1, special_tokens=["<eos>"], show_progress=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<eos>")
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=max_positions,
                      eos_token_id=tok.eos_token_id, bos_token_id=None, pad_token_id=None)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)  # peaked distributions: fewer near-ties between beams
    model.save_pretrained(folder)
    return folder
