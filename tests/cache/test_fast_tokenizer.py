"""The faster-loading copy of a tokenizer (merges as "a b" strings) is the same tokenizer: equal
ids for every text, the oracle being the original file loaded by the same Rust library."""
from __future__ import annotations

import json
import random

import pytest

tokenizers = pytest.importorskip("tokenizers")

from fstbeam.files.default_model import _write_fast_tokenizer  # noqa: E402

CORPUS = ["the cat sat on the mat", "a dog ran and the cat sat", "Überall ist es schön", "tea, green tea; tee",
          "<start_of_turn>user hello", "  spaces   and\nnewlines\n\n"]


def _tiny_bpe(folder, special=("<eos>", "<start_of_turn>")):
    """A byte-level BPE trained on CORPUS, saved as tokenizer.json (+ a tokenizer_config.json)."""
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS * 20, vocab_size=400, min_frequency=1, special_tokens=list(special))
    folder.mkdir(parents=True, exist_ok=True)
    bpe._tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<eos>"}), encoding="utf-8")
    return folder


def _texts(n=300, seed=0):
    rng = random.Random(seed)
    words = " ".join(CORPUS).split() + ["<eos>", "<start_of_turn>", "ß", "🙂", "\n", "xyz"]
    return CORPUS + ["".join(rng.choice([" ", ""]) + rng.choice(words) for _ in range(rng.randint(1, 12)))
                     for _ in range(n)]


def test_the_copy_encodes_every_text_as_the_original(tmp_path):
    src = _tiny_bpe(tmp_path / "src")
    data = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    assert isinstance(data["model"]["merges"][0], list)  # the pair form the converter rewrites
    (tmp_path / "fast").mkdir()
    _write_fast_tokenizer(src, tmp_path / "fast")
    fast = json.loads((tmp_path / "fast/tokenizer.json").read_text(encoding="utf-8"))
    assert all(isinstance(m, str) for m in fast["model"]["merges"])
    assert len(fast["model"]["merges"]) == len(data["model"]["merges"])
    a = tokenizers.Tokenizer.from_file(str(src / "tokenizer.json"))
    b = tokenizers.Tokenizer.from_file(str(tmp_path / "fast/tokenizer.json"))
    assert a.get_vocab() == b.get_vocab()
    for t in _texts():
        ea, eb = a.encode(t), b.encode(t)
        assert ea.ids == eb.ids, t
        assert a.decode(ea.ids, skip_special_tokens=False) == b.decode(eb.ids, skip_special_tokens=False)
    assert (tmp_path / "fast/tokenizer_config.json").read_text() == (src / "tokenizer_config.json").read_text()


def test_merges_holding_a_space_are_copied_unchanged(tmp_path):
    """A merge part with a space cannot be written as one "a b" string: the file stays as it was."""
    src = _tiny_bpe(tmp_path / "src")
    data = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    data["model"]["merges"].append(["a b", "c"])  # (never applied: no such token; only its form matters)
    (src / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "fast").mkdir()
    _write_fast_tokenizer(src, tmp_path / "fast")
    fast = json.loads((tmp_path / "fast/tokenizer.json").read_text(encoding="utf-8"))
    assert fast["model"]["merges"] == data["model"]["merges"]
