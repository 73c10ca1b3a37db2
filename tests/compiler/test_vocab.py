"""Token id -> bytes for the three tokenizer families, and the fingerprint."""
from __future__ import annotations

import json

import pytest

from fstbeam.contract.vocab import Vocab, _gpt2_unicode_to_byte, load_vocab
from fstbeam.errors import TokenizerError


def spiece_json():
    # Gemma-like: BPE with byte fallback, "▁" for spaces, specials as added tokens.
    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<0x20>": 3, "<0xE2>": 4, "▁": 5, "▁the": 6, "cat": 7, "a": 8, "<0x61>": 9}
    return {
        "model": {"type": "BPE", "vocab": vocab, "merges": [], "byte_fallback": True},
        "added_tokens": [
            {"id": 0, "content": "<pad>", "special": True},
            {"id": 1, "content": "<eos>", "special": True},
            {"id": 2, "content": "<bos>", "special": True},
            {"id": 10, "content": "<start_of_turn>", "special": True},
            {"id": 11, "content": "\n\n", "special": False},
        ],
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]},
    }


def test_sentencepiece_byte_fallback(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps(spiece_json()), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<eos>"}))
    v = Vocab.from_tokenizer_json(tmp_path, width=16)
    tb = v.token_bytes
    assert v.kind == "sentencepiece" and v.eos_ids == (1,)
    assert tb[3] == b" " and tb[5] == b" "  # two single-space tokens
    assert tb[4] == b"\xe2"  # a lone byte, not the text "<0xE2>"
    assert tb[6] == b" the" and tb[7] == b"cat"
    assert tb[8] == tb[9] == b"a"  # printable ASCII twice
    assert tb[0] is None and tb[1] is None and tb[2] is None and tb[10] is None  # specials excluded
    assert tb[11] == b"\n\n"  # non-special added token is text
    assert v.width == 16 and tb[12] is None and tb[15] is None  # model output wider than tokenizer


def test_byte_level_bpe(tmp_path):
    u = {b: c for c, b in _gpt2_unicode_to_byte().items()}
    pieces = [u[32] + "the", "cat", u[10], "é".encode().decode("latin-1")]
    pieces[3] = "".join(u[b] for b in "é".encode())
    data = {
        "model": {"type": "BPE", "vocab": {p: i for i, p in enumerate(pieces)}, "merges": []},
        "added_tokens": [{"id": 4, "content": "<|endoftext|>", "special": True}],
        "decoder": {"type": "ByteLevel"}, "pre_tokenizer": {"type": "ByteLevel"},
    }
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    v = Vocab.from_tokenizer_json(tmp_path / "tokenizer.json", eos_ids=[4])
    assert v.kind == "byte-level"
    assert v.token_bytes[:4] == (b" the", b"cat", b"\n", "é".encode())
    assert v.token_bytes[4] is None and v.eos_ids == (4,)


def test_fingerprint_changes_with_any_token_width_or_eos():
    base = Vocab.from_dict({0: b"a", 1: b"b"}, eos_ids=[2])
    assert base.fingerprint == Vocab.from_dict({0: b"a", 1: b"b"}, eos_ids=[2]).fingerprint
    assert base.fingerprint != Vocab.from_dict({0: b"a", 1: b"c"}, eos_ids=[2]).fingerprint
    assert base.fingerprint != Vocab.from_dict({0: b"a", 1: b"b"}, eos_ids=[2], width=8).fingerprint
    assert base.fingerprint != Vocab.from_dict({0: b"a", 1: b"b", 2: b"x"}, eos_ids=[3]).fingerprint


def test_bad_tokenizer_inputs(tmp_path):
    with pytest.raises(TokenizerError, match="does not exist"):
        load_vocab(tmp_path / "nope")
    (tmp_path / "tokenizer.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(TokenizerError, match="not a valid tokenizer.json"):
        load_vocab(tmp_path)
    with pytest.raises(TokenizerError, match="smaller"):
        Vocab.from_dict({0: b"a", 5: b"b"}, width=3)


@pytest.mark.integration
def test_gemma_vocabulary_facts():
    v = load_vocab("default")
    assert v.width == 262144 and v.kind == "sentencepiece"
    tb = v.token_bytes
    assert 1 in v.eos_ids and tb[1] is None
    assert sum(1 for b in tb if b == b" ") == 2
    singles = {b for b in tb if b is not None and len(b) == 1}
    assert len(singles) == 256  # byte fallback: every byte value has a token
    assert b" about" in tb
    assert all(tb[i] is None for i in range(0, 5))
