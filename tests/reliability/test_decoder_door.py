"""The Python API door of decoding: `Decoder` arguments and prompts (issue 23, items 1-2, 5).

Every bad argument is a fstbeam error raised before a model loads; a bad prompt flags that input
alone, and the other inputs decode exactly as in a call without it.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import fstbeam.files.default_model as default_model
from fstbeam.errors import DecodeError, Error, InputError, TokenizerError
from fstbeam.runtime import Decoder

GOOD = ["the cat", "a dog", [5, 6, 7], "the mat"]
BAD = ["the \ud800 cat", ["5"], [1.0], [float("nan")], [float("inf")], [True], b"the cat", [10**30], [-1], "",
       [np.float32(3)], "x\udcff"]


@pytest.fixture()
def no_model_load(monkeypatch):
    """Fail the test if a model would be loaded: the checks must come first."""
    def boom(*a, **k):
        raise AssertionError("a model was loaded before the arguments were checked")

    monkeypatch.setattr(default_model, "load_default_model", boom)
    import transformers

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", boom)


@pytest.mark.parametrize("device", ["bogus", "cuda:7", "gpu", 3, "cuda:-1"])
def test_bad_device_before_the_model_loads(no_model_load, device):
    if device == "cuda:7" and torch.cuda.device_count() > 7:
        pytest.skip("this machine has 8 GPUs")
    with pytest.raises(InputError, match="device"):
        Decoder(device=device)


def test_cuda_without_cuda(no_model_load):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(InputError, match="no usable CUDA"):
        Decoder(device="cuda")


def test_model_paths(no_model_load, tmp_path, model_dir):
    with pytest.raises(InputError, match="no such folder") as e:
        Decoder("missing/path", device="cpu")
    assert "Repo id" not in str(e.value)
    tok_only = tmp_path / "tok"
    tok_only.mkdir()
    (tok_only / "tokenizer.json").write_text((model_dir / "tokenizer.json").read_text())
    with pytest.raises(InputError, match="tokenizer but no model"):
        Decoder(str(tok_only), device="cpu")
    with pytest.raises(InputError, match="NUL"):
        Decoder("mod\x00el", device="cpu")
    with pytest.raises(InputError, match="is a file"):
        Decoder(str(model_dir / "config.json"), device="cpu")
    with pytest.raises(TokenizerError, match="no such folder"):
        Decoder(str(model_dir), "missing-tokenizer/x", device="cpu")


@pytest.mark.parametrize("kw, match", [(dict(prompt_format="nope"), "prompt_format"), (dict(prompt_format=3), "prompt_format"),
                                       (dict(dtype="float32"), "dtype"), (dict(packed_weights="yes"), "packed")])
def test_bad_settings_before_the_model_loads(no_model_load, kw, match):
    with pytest.raises(Error, match=match):
        Decoder(device="cpu", **kw)


@pytest.mark.parametrize("prompts", [123, None, b"the cat", {"prompt": "x"}])
def test_bad_prompt_list_is_an_error_for_the_call(decoder, prompts):
    with pytest.raises(DecodeError, match="list of prompts"):
        decoder.generate(prompts, max_new_tokens=2)


@pytest.mark.parametrize("constraints", [123, "a1.fstbeam", b"x"])
def test_bad_constraints_argument(decoder, constraints):
    with pytest.raises(DecodeError, match="constraints"):
        decoder.generate(["the cat"], constraints, max_new_tokens=2)


def _same(a, b):
    assert a.error is None and b.error is None
    assert a.token_ids == b.token_ids and a.text == b.text
    assert a.score == b.score and a.logprob == b.logprob  # bit for bit: same batches, same kernels
    assert [h.token_ids for h in a.hypotheses] == [h.token_ids for h in b.hypotheses]


@pytest.mark.parametrize("stream", [False, True])
def test_one_bad_prompt_never_costs_the_others(decoder, stream):
    """Bad prompts interleaved with good ones: each bad one is an error result (empty text,
    ``error`` naming it); the good ones equal a call without the bad ones."""
    mixed, where = [], []
    for i, bad in enumerate(BAD):
        mixed.append(GOOD[i % len(GOOD)])
        mixed.append(bad)
        where.append(len(mixed) - 1)
    opts = dict(beam_size=3, max_new_tokens=5, batch_size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if stream:
            res = sorted(decoder.stream(mixed, **opts), key=lambda r: r.index)
        else:
            res = decoder.generate(mixed, **opts)
        alone = decoder.generate([p for i, p in enumerate(mixed) if i not in where], **opts)
    assert [r.index for r in res] == list(range(len(mixed)))
    for i in where:
        r = res[i]
        assert r.error and r.text == "" and r.token_ids == () and not r.satisfied and r.finish_reason == "error"
        assert math.isinf(r.score)
    assert "surrogate" in res[where[0]].error and f"prompt {where[0]}" in res[where[0]].error
    assert "float" in res[where[2]].error and "NaN" in res[where[3]].error and "bytes" in res[where[6]].error
    good = [r for i, r in enumerate(res) if i not in where]
    for a, b in zip(good, alone):
        _same(a, b)


def test_ids_are_never_truncated_or_read_from_bytes(decoder):
    for bad in ([2.0], [2.5], b"\x02\x03", bytearray(b"\x02")):
        with pytest.raises(DecodeError):
            decoder.encode(bad)
    assert decoder.encode([np.int64(2), 3]) == [2, 3]
    assert decoder.encode(np.array([2, 3])) == [2, 3]
