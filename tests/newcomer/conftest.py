"""Fixtures of the newcomer tests (issue 39): the tiny random-weight model on disk."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: tiny_model.py
from tiny_model import save_tiny_model  # noqa: E402


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny-model"), max_positions=128)


@pytest.fixture(scope="session")
def tiny_decoder(tiny_dir):
    import fstbeam

    return fstbeam.Decoder(str(tiny_dir), device="cpu", prompt_format="raw")
