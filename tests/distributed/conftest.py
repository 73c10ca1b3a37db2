"""Fixtures for batch decoding: a tiny random-weight model and tokenizer saved to disk (so Ray
actors can load them by path), a word-list artifact for it, and one local Ray cluster."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: tiny_model.py
import torch
from tiny_model import save_tiny_model  # noqa: E402

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
    return save_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def words_artifact(model_dir, tmp_path_factory):
    from transformers import AutoTokenizer

    import fstbeam

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
