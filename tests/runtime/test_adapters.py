"""Model adapters: rows reordered, dropped and added (left-padded prompts) give exactly the
logits of an uncached forward pass over each row's own tokens."""
from __future__ import annotations

import pytest
import torch

from fstbeam.runtime.model.adapters import CausalLMAdapter, Seq2SeqAdapter

from rt_helpers import tiny_gemma3, tiny_gpt2, tiny_llama, tiny_t5

V = 40


def _ref(model, seq):
    with torch.no_grad():
        return model(torch.tensor([seq])).logits[0, -1].float()


@pytest.mark.parametrize("factory", [tiny_llama, tiny_gpt2, tiny_gemma3], ids=["llama", "gpt2", "gemma3-sliding"])
def test_causal_rows_reorder_drop_and_join(factory):
    model = factory(V)
    ad = CausalLMAdapter(model)
    g = torch.Generator().manual_seed(0)
    prompts = [[1, 2, 3, 4, 5, 6, 7], [8, 9], [10, 11, 12, 13]]
    logits, st = ad.prefill(prompts)
    for i, p in enumerate(prompts):
        torch.testing.assert_close(logits[i], _ref(model, p), atol=1e-5, rtol=1e-4)
    seqs = [list(p) for p in prompts]
    idx = torch.tensor([2, 0, 0, 1])  # reorder, repeat (beam split)
    st = ad.select(st, idx)
    seqs = [list(seqs[i]) for i in idx.tolist()]
    for step in range(6):
        toks = torch.randint(1, V, (len(seqs),), generator=g)
        logits = ad.step(st, toks)
        for s, t in zip(seqs, toks.tolist()):
            s.append(t)
        for i, s in enumerate(seqs):
            torch.testing.assert_close(logits[i], _ref(model, s), atol=1e-4, rtol=1e-4)
        if step == 2:  # drop a row, then two new inputs join (a long and a one-token prompt)
            st = ad.select(st, torch.tensor([0, 2, 3]))
            seqs = [seqs[0], seqs[2], seqs[3]]
            new = [[5, 4, 3, 2, 1, 9, 9, 9, 9, 9, 9, 9, 9, 9], [7]]
            l2, st2 = ad.prefill(new)
            st = ad.concat([st, st2])
            seqs += [list(p) for p in new]
    # padding columns that no row needs any more are dropped
    st = ad.select(st, torch.tensor([4]))
    assert st.kv_pos.shape[1] == len(seqs[4]) and st.cache.T == len(seqs[4])


def test_seq2seq_rows_reorder_and_join():
    model = tiny_t5(V)
    ad = Seq2SeqAdapter(model)
    assert ad.supports_refill
    g = torch.Generator().manual_seed(1)

    def ref(src, dec):
        with torch.no_grad():
            return model(input_ids=torch.tensor([src]), decoder_input_ids=torch.tensor([[0] + dec])).logits[0, -1]

    srcs = [[1, 2, 3, 4, 5], [6, 7]]
    logits, st = ad.prefill(srcs)
    for i in range(2):
        torch.testing.assert_close(logits[i], ref(srcs[i], []), atol=1e-5, rtol=1e-4)
    st = ad.select(st, torch.tensor([1, 0, 1]))
    srcs, decs = [srcs[1], srcs[0], srcs[1]], [[], [], []]
    for step in range(5):
        toks = torch.randint(1, V, (len(srcs),), generator=g)
        logits = ad.step(st, toks)
        for d, t in zip(decs, toks.tolist()):
            d.append(t)
        for i in range(len(srcs)):
            torch.testing.assert_close(logits[i], ref(srcs[i], decs[i]), atol=1e-4, rtol=1e-4)
        if step == 1:
            new = [[9, 9, 9, 9, 9, 9, 9, 9]]
            l2, st2 = ad.prefill(new)
            torch.testing.assert_close(l2[0], ref(new[0], []), atol=1e-5, rtol=1e-4)
            st = ad.concat([st, st2])
            srcs, decs = srcs + new, decs + [[]]


def test_cache_is_not_recomputed_for_live_rows():
    """Counted work: after the prefill, each step runs exactly one row per live hypothesis."""
    model = tiny_llama(V)
    ad = CausalLMAdapter(model)
    _, st = ad.prefill([[1, 2, 3], [4, 5]])
    rows0 = ad.forward_rows
    st = ad.select(st, torch.tensor([0, 0, 1]))
    ad.step(st, torch.tensor([1, 2, 3]))
    assert ad.forward_rows - rows0 == 3
