"""Packed linear weights while fstbeam runs a model (:mod:`fstbeam.runtime.model.packed_model`), the
in-place KV-cache reorder and the beam placement that keeps cache rows in place: each against the
unpacked / copying path on tiny models."""
from __future__ import annotations

import pytest
import torch

from fstbeam.errors import DecodeError
from fstbeam.kernels.packed_gemm import mkl_packing_available
from fstbeam.runtime import Decoder
from fstbeam.runtime.model import packed_model
from fstbeam.runtime.model.cache import RowCache, RowKVLayer, fork_cache
from fstbeam.runtime.model.packed_model import ModelPacking
from fstbeam.runtime.search.step import keep_places

from rt_helpers import tiny_gemma3, tiny_llama, tiny_t5, tiny_vocab

needs_mkl = pytest.mark.skipif(not mkl_packing_available(), reason="no MKL packed GEMM in this PyTorch build")


@needs_mkl
def test_routing_packs_inside_and_restores_the_model():
    model = tiny_llama(24)
    packing = ModelPacking(model, "auto")
    assert packing.active and packing.reason is None
    linears = [m for m in model.modules() if type(m) is torch.nn.Linear]
    head = model.get_output_embeddings()
    x = torch.tensor([[1, 2, 3, 4, 5]] * 6)
    with torch.inference_mode():
        want = model(x).logits
        with packing.routing():
            assert all("forward" in m.__dict__ for m in linears if m is not head)
            assert "forward" not in head.__dict__  # the output layer is left alone
            for _ in range(3):  # the same row count repeats: packed from the second call on
                got = model(x).logits
        assert all("forward" not in m.__dict__ for m in linears)
        assert all(p._rows == 30 for _, p in packing._layers)  # 6 rows x 5 tokens, packed
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(model(x).logits, want, rtol=0, atol=0)  # restored: the model's own path


@needs_mkl
def test_a_replaced_or_changed_weight_is_used_at_once():
    model = tiny_llama(24)
    packing = ModelPacking(model, "auto")
    x = torch.tensor([[1, 2, 3]] * 4)
    layer = next(m for m in model.modules() if type(m) is torch.nn.Linear)
    with torch.inference_mode():
        with packing.routing():
            for _ in range(3):
                model(x)
        with torch.no_grad():
            layer.weight = torch.nn.Parameter(torch.randn_like(layer.weight))  # a new tensor
        want = model(x).logits
        with packing.routing():
            torch.testing.assert_close(model(x).logits, want, rtol=1e-5, atol=1e-5)
        with torch.no_grad():
            layer.weight.mul_(3.0)  # the same tensor, changed in place
        want = model(x).logits
        with packing.routing():
            torch.testing.assert_close(model(x).logits, want, rtol=1e-5, atol=1e-5)


def test_modes_and_refusals(monkeypatch):
    model = tiny_llama(24)
    off = ModelPacking(model, "off")
    assert not off.active and "off" in off.reason
    with pytest.raises(DecodeError, match="packed_weights must be one of"):
        ModelPacking(model, "yes")
    with pytest.raises(DecodeError, match="packed_weights must be one of"):
        Decoder(model, tiny_vocab(), eos_ids=[0], device="cpu", packed_weights="fast")
    double = tiny_llama(24).double()
    assert not ModelPacking(double, "auto").active
    with pytest.raises(DecodeError, match="packed_weights='on' is not possible"):
        ModelPacking(double, "on")
    monkeypatch.setattr(packed_model, "AUTO_MAX_BYTES", 16)
    big = ModelPacking(model, "auto")
    assert not big.active and "exceed" in big.reason
    if mkl_packing_available():
        assert ModelPacking(model, "on").active  # "on" packs whatever the size


@needs_mkl
@pytest.mark.parametrize("make", [tiny_llama, tiny_gemma3, tiny_t5], ids=["llama", "gemma3", "t5"])
def test_decoding_with_packed_weights_matches_unpacked(make):
    vocab = tiny_vocab()
    model = make(vocab.width)
    prompts = [[1, 2, 3], [4, 5], [6, 7, 8, 9], [2, 2]]  # token ids (the vocabulary has no tokenizer)
    runs = {}
    for mode in ("off", "auto"):
        dec = Decoder(model, vocab, eos_ids=[0], device="cpu", packed_weights=mode)
        assert dec.adapter.packing.active == (mode == "auto")
        runs[mode] = dec.generate(prompts, beam_size=4, max_new_tokens=6, batch_size=4)
    assert [r.token_ids for r in runs["off"]] == [r.token_ids for r in runs["auto"]]
    for a, b in zip(runs["off"], runs["auto"]):
        assert abs(a.score - b.score) < 1e-4


def _layer(rows=6, T=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    layer = RowKVLayer()
    layer.update(torch.randn(rows, 1, T, 4, generator=g), torch.randn(rows, 1, T, 4, generator=g))
    return layer


@pytest.mark.parametrize("idx", [[0, 1, 2, 3, 4, 5], [1, 1, 2, 0, 4, 4], [5, 4, 3, 2, 1, 0], [2, 2, 2], [3, 0, 1, 1, 5]])
def test_in_place_cache_select_equals_a_gather(idx):
    cache = RowCache()
    cache.layers = [_layer(seed=1), _layer(seed=2)]
    want = [(l.keys.clone()[idx], l.values.clone()[idx]) for l in cache.layers]
    cache.select(torch.tensor(idx))
    for layer, (k, v) in zip(cache.layers, want):
        assert torch.equal(layer.keys, k) and torch.equal(layer.values, v)


def test_in_place_select_leaves_a_fork_untouched():
    cache = RowCache()
    cache.layers = [_layer(seed=3)]
    before = cache.layers[0].keys.clone()
    taken = fork_cache(cache)
    taken.select(torch.tensor([4, 0]))  # the fork gets fresh buffers
    cache.select(torch.tensor([1, 1, 0, 3, 2, 5]))  # shared: not in place either
    assert torch.equal(taken.layers[0].keys, before[[4, 0]])
    assert torch.equal(cache.layers[0].keys, before[[1, 1, 0, 3, 2, 5]])
    cache.select(torch.tensor([5, 4, 3, 2, 1, 0]))  # exclusive again: in place
    assert torch.equal(cache.layers[0].keys, before[[1, 1, 0, 3, 2, 5]][[5, 4, 3, 2, 1, 0]])
    assert torch.equal(taken.layers[0].keys, before[[4, 0]])


def test_keep_places_puts_each_parents_best_child_at_its_position():
    g = torch.Generator().manual_seed(0)
    k, n = 5, 64
    parent = torch.randint(0, k, (n, k), generator=g) + torch.arange(n)[:, None] * k
    ok = torch.rand(n, k, generator=g) > 0.2
    places = keep_places(parent, ok, k)
    for i in range(n):
        assert sorted(places[i].tolist()) == list(range(k))
        claimed = set()
        for c in range(k):
            q = int(parent[i, c]) % k
            if ok[i, c] and q not in claimed:
                claimed.add(q)
                assert int(places[i, q]) == c
