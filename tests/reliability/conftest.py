"""Fixtures for the reliability tests (issue 23): a tiny random-weight causal model with a real
byte-level BPE tokenizer, in memory and saved to disk (for the command-line doors)."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: tiny_model.py
from tiny_model import save_tiny_model  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))  # rt_helpers


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def decoder(model_dir):
    from fstbeam.runtime import Decoder

    return Decoder(str(model_dir), device="cpu", prompt_format="raw", packed_weights="off")
