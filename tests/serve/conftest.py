"""A real ``fstbeam serve`` process on a free 127.0.0.1 port, over a tiny random-weight model and a
tiny byte-level BPE tokenizer saved to disk; and the same model loaded here as the offline oracle."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: tiny_model.py
from tiny_model import save_tiny_model  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))  # serve_helpers.py
from serve_helpers import Server  # noqa: E402

WORDS = ["a", "cat", "dog", "the", "sat", "on", "mat", "ran", "and"]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny-serve-model"), max_positions=128)


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
