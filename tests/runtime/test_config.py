"""SearchConfig: one typed, validated home for the search settings; stop_at; host syncs per step."""
from __future__ import annotations

import dataclasses
import warnings

import pytest
import torch

from fstbeam.errors import DecodeError
from fstbeam.kernels import dispatch as kd
from fstbeam.runtime import Decoder, SearchConfig
from fstbeam.runtime.search.engine import SearchEngine

from rt_helpers import StubLM, tiny_llama, tiny_vocab


@pytest.fixture(scope="module")
def dec():
    v = tiny_vocab()
    return Decoder(StubLM(v.width, eos=[0], eos_bias=-1.0), v, eos_ids=[0], device="cpu")


def run(dec, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [(r.token_ids, r.score, r.steps) for r in dec.generate([[1], [2, 3], [4]], *args, **kw)]


def test_config_and_keywords_are_the_same_search(dec):
    cfg = SearchConfig(beam_size=3, max_new_tokens=5, nbest=2, length_reward=0.5)
    assert run(dec, None, cfg) == run(dec, None, beam_size=3, max_new_tokens=5, nbest=2, length_reward=0.5)
    # an override replaces one setting of the config for this call only
    assert run(dec, None, cfg, beam_size=4) == run(dec, None, dataclasses.replace(cfg, beam_size=4))
    assert run(dec, None, cfg, beam_size=4) != run(dec, None, cfg, beam_size=1, nbest=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.beam_size = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kernel_backend="cuda"), r"kernel_backend must be one of 'auto', 'torch', 'cpu-fast', 'triton' \(got 'cuda'\)"),
        (dict(stop_at="newline"), r"stop_at must be one of 'eos', 'line'"),
        (dict(expand="some"), r"expand must be one of 'all', 'least_advanced'"),
        (dict(beam_size=2.5), "beam_size must be a positive integer"),
        (dict(beam_size=True), "beam_size must be a positive integer"),
        (dict(renormalize="yes"), "renormalize must be True or False"),
        (dict(prune_threshold=-1.0), "prune_threshold must be >= 0"),
        (dict(length_ratio="2"), "length_ratio must be a number"),
        (dict(eos_ids=[]), "eos_ids must name at least one"),
        (dict(eos_ids=["x"]), "eos_ids must be a list of token ids"),
        (dict(length_normalization=-1.0), "length_normalization must be >= 0"),
        (dict(shortlist=True), r"shortlist must be one of 'auto', 'on', 'off' \(got True\)"),
        (dict(shortlist="on"), r"shortlist='on' needs renormalize=True"),  # the full softmax needs every logit
        (dict(min_new_tokens=-1), r"min_new_tokens must be an integer >= 0 \(got -1\)"),
        (dict(no_repeat_ngram=2.0), "no_repeat_ngram must be an integer >= 0"),
        (dict(min_new_tokens=9, max_new_tokens=8), "min_new_tokens=9 exceeds max_new_tokens=8"),
        (dict(allow_control_tokens="no"), "allow_control_tokens must be True or False"),
    ],
)
def test_bad_values_name_the_setting_and_what_it_accepts(dec, kwargs, match):
    with pytest.raises(DecodeError, match=match):
        SearchConfig(**kwargs)
    with pytest.raises(DecodeError, match=match):
        dec.generate([[1]], **kwargs)


def test_unknown_setting_names_the_key_and_the_settings(dec):
    with pytest.raises(DecodeError, match=r"unknown option\(s\): \['beam'\]; the settings are: beam_size, max_new_tokens"):
        dec.generate([[1]], beam=3)
    with pytest.raises(DecodeError, match="config must be a SearchConfig"):
        dec.generate([[1]], None, {"beam_size": 3})


def test_stop_at_line_is_eos_plus_the_newline_tokens():
    from fstbeam.contract.vocab import Vocab

    toks = ["<eos>", "a", "b", "\n", " a", "\n\n", " b", "a\n"]
    v = Vocab.from_dict({i: t for i, t in enumerate(toks) if i}, eos_ids=[0])
    dec = Decoder(StubLM(v.width, eos=[0], eos_bias=-3.0, scale=2.0), v, eos_ids=[0], device="cpu")
    assert dec.newline_ids() == (3, 5)  # only-newline tokens ("a\n" is text)
    kw = dict(beam_size=3, max_new_tokens=6)
    line = run(dec, None, stop_at="line", **kw)
    assert line == run(dec, None, eos_ids=[0, 3, 5], **kw)
    assert run(dec, None, stop_at="eos", **kw) == run(dec, None, **kw)
    assert line != run(dec, None, **kw)  # the newline tokens did end some output
    # explicit eos_ids win over stop_at
    assert run(dec, None, stop_at="line", eos_ids=[0], **kw) == run(dec, None, **kw)


def test_host_syncs_per_step(monkeypatch):
    """The step reads the device only where the host cannot know the answer: unconstrained, four
    reads per step (three guards and the step's outcome) plus two at the length limit."""
    v = tiny_vocab()
    dec = Decoder(tiny_llama(v.width), v, eos_ids=[0], device="cpu")
    count = {"n": 0, "inside": 0, "off": 0}

    def counting(orig):
        def f(*a, **k):
            if count["inside"] and not count["off"]:
                count["n"] += 1
            count["off"] += 1
            try:
                return orig(*a, **k)
            finally:
                count["off"] -= 1
        return f

    for name in ("item", "tolist", "__bool__", "__int__", "__float__", "nonzero", "cpu", "numpy", "unique"):
        monkeypatch.setattr(torch.Tensor, name, counting(getattr(torch.Tensor, name)))
    for name in ("nonzero", "unique", "masked_select"):
        monkeypatch.setattr(torch, name, counting(getattr(torch, name)))
    real_expand = SearchEngine._expand

    def expand(self, logits):
        count["inside"] += 1
        try:
            return real_expand(self, logits)
        finally:
            count["inside"] -= 1

    def quiet(orig):  # the kernels check their inputs on CPU (on CUDA only with debug=True)
        def f(*a, **k):
            count["off"] += 1
            try:
                return orig(*a, **k)
            finally:
                count["off"] -= 1
        return f

    monkeypatch.setattr(SearchEngine, "_expand", expand)
    monkeypatch.setattr(dec.adapter, "select", quiet(dec.adapter.select))
    monkeypatch.setattr(kd, "masked_topk", quiet(kd.masked_topk))
    L = 6
    # the plain search's syncs (the presets' guards and ending rule add their own, counted elsewhere)
    dec.generate([[1, 2], [3]], beam_size=3, max_new_tokens=L, stopping="exhaustive", batch_size=2, preset="plain")
    steps = dec.last_stats.steps
    assert steps == L
    assert count["n"] == 4 * steps + 2, count
