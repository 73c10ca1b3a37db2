"""Continuous batching (fstbeam.runtime.search.continuous) on a tiny random-weight model: requests that
arrive while a batch runs, requests that leave it, and the streamed shared prefix, each checked
against offline decoding of the same prompts with the same settings."""
from __future__ import annotations

import os
import sys
import threading
import warnings

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
from fstbeam.compiler.api import compile_constraints  # noqa: E402
from fstbeam.runtime.config import SearchConfig  # noqa: E402
from fstbeam.runtime.decoder import Decoder  # noqa: E402
from fstbeam.runtime.search.continuous import ContinuousEngine, RequestSource, Ticket, shared_prefix  # noqa: E402

from rt_helpers import tiny_llama, tiny_vocab  # noqa: E402

PROMPTS = [[1, 2, 3, 4, 5, 6, 7], [2], [3, 4], [5, 5, 5, 5, 5], [7, 1], [8, 9, 10, 11], [4, 4], [9]]
KW = dict(beam_size=3, max_new_tokens=7, nbest=2, length_reward=1.0)


@pytest.fixture(scope="module")
def setup():
    v = tiny_vocab()
    dec = Decoder(tiny_llama(v.width, seed=3), v, eos_ids=[0], device="cpu")
    ccs = [None, compile_constraints(tokenizer=v, words=["a", "b", "ab"], phrases=["b a"]),
           compile_constraints(tokenizer=v, phrases=["c"]), None,
           compile_constraints(tokenizer=v, words=["a", "b", "c", "ab"], prefix="a b"),
           compile_constraints(tokenizer=v, avoid=["ab"]), compile_constraints(tokenizer=v, phrases=[" c", "b"]), None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        offline = dec.generate(PROMPTS, ccs, batch_size=8, preset="plain", **KW)  # the engine below gets no preset either
    return dec, ccs, offline


def _ticket(dec, i, cc, on_prefix=None, kw=KW):
    inp = dec.input_constraints(cc)
    return Ticket(dec.request(i, PROMPTS[i], inp, kw["max_new_tokens"]), on_prefix)


def _serve(dec, arrivals: dict[int, list[int]], cancel_at: dict[int, int] | None = None, batch_size=3, watch=(), kw=KW):
    """Run a ContinuousEngine; ``arrivals[step]``: requests put into the source before that step
    (from the engine's own step hook, i.e. while the batch runs); ``cancel_at[i]``: the step at
    which request i is cancelled. Returns (results by index, prefixes seen, steps)."""
    cancel_at = cancel_at or {}
    cfg = SearchConfig(batch_size=batch_size, refill=1 - 1 / batch_size, **kw)
    eng = ContinuousEngine(dec.adapter, cfg, eos_ids=[0], device="cpu")
    src = RequestSource(idle_wait=0.01)
    _, ccs, _ = dec._test_setup
    prefixes: dict[int, list[list[int]]] = {i: [] for i in watch}
    tickets = {}
    step = {"n": 0}

    def put(i):
        cb = (lambda toks, i=i: prefixes[i].append(list(toks))) if i in watch else None
        tickets[i] = _ticket(dec, i, ccs[i], cb, kw)
        src.put(tickets[i])

    def on_step(live):
        step["n"] += 1
        for i in arrivals.get(step["n"], []):
            put(i)
        for i, s in cancel_at.items():
            if s == step["n"]:
                tickets[i].cancelled = True
        if step["n"] >= max(arrivals) and not any(len(v) for v in [src]) and step["n"] > max(cancel_at.values(), default=0):
            src.close()

    eng.on_step = on_step
    for i in arrivals.get(0, []):
        put(i)
    out = {}
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        for raw in eng.serve(src):
            out[raw.index] = raw
    return out, prefixes, eng.stats


def _same(raw, res):
    assert [h.tokens for h in raw.hypotheses] == [list(h.token_ids) for h in res.hypotheses]
    assert [h.logprob for h in raw.hypotheses] == pytest.approx([h.logprob for h in res.hypotheses], abs=1e-4)
    assert raw.steps == res.steps


def test_requests_arriving_mid_batch_decode_as_offline(setup):
    dec, ccs, offline = setup
    dec._test_setup = setup
    # two at the start; the others arrive one or two at a time while the batch runs (batch of 3)
    arrivals = {0: [0, 1], 2: [2], 3: [3, 4], 5: [5], 6: [6], 9: [7]}
    out, _, stats = _serve(dec, arrivals)
    assert sorted(out) == list(range(len(PROMPTS)))
    for i, res in enumerate(offline):
        _same(out[i], res)
    # they joined the running batch: far fewer steps than one request after another
    assert stats.steps < sum(r.steps for r in offline)
    assert stats.refills >= 4


def test_a_cancelled_request_leaves_and_the_others_are_unchanged(setup):
    dec, ccs, offline = setup
    dec._test_setup = setup
    arrivals = {0: [0, 1, 2], 1: [3], 2: [4, 5]}
    out, _, stats = _serve(dec, arrivals, cancel_at={1: 2, 4: 3}, batch_size=4)
    assert 1 not in out and 4 not in out
    assert sorted(out) == [0, 2, 3, 5]
    for i in out:
        _same(out[i], offline[i])


def test_the_streamed_prefix_never_changes(setup):
    dec, ccs, offline = setup
    dec._test_setup = setup
    kw = dict(KW, nbest=1, max_new_tokens=12)
    out, prefixes, _ = _serve(dec, {0: [0, 1, 2, 3], 2: [4, 5, 6, 7]}, batch_size=4, watch=range(8), kw=kw)
    grew = 0
    for i, seen in prefixes.items():
        final = [h.tokens for h in out[i].hypotheses]
        for a, b in zip(seen, seen[1:]):
            assert len(b) > len(a) and b[: len(a)] == a  # only grows
        for p in seen:
            for toks in final:  # every returned hypothesis (the n-best) begins with it
                assert toks[: len(p)] == p
        grew += bool(seen)
    assert grew >= 2  # some requests did stream a prefix before they finished


def test_shared_prefix_takes_the_pool_and_the_partial_into_account():
    inf = float("-inf")
    hist = [[5, 6, 7, 0], [5, 6, 8, 0]]
    base = dict(alive=[True, True], hist=hist, length=3, fin_rank=[inf], fin_len=[0], fin_eos=[-1], fin_hist=[[0] * 4],
                part_logp=inf, part_len=0, part_hist=[0] * 4)
    assert shared_prefix(**base) == [5, 6]
    # a finished hypothesis "5 EOS" may still be returned: only [5] is certain
    assert shared_prefix(**{**base, "fin_rank": [-1.0], "fin_len": [2], "fin_eos": [0], "fin_hist": [[5, 0, 0, 0]]}) == [5]
    assert shared_prefix(**{**base, "part_logp": -3.0, "part_len": 1, "part_hist": [9, 0, 0, 0]}) == []
    assert shared_prefix(**{**base, "alive": [True, False]}) == [5, 6, 7]


def test_an_idle_engine_waits_and_stops_when_closed(setup):
    dec, ccs, offline = setup
    cfg = SearchConfig(batch_size=2, refill=0.5, **KW)
    eng = ContinuousEngine(dec.adapter, cfg, eos_ids=[0], device="cpu")
    src = RequestSource(idle_wait=0.01)
    got = []
    def run():
        with torch.inference_mode():
            got.extend(eng.serve(src))

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(0.3)
    assert th.is_alive() and not got  # waiting for work, not finished
    src.put(_ticket(dec, 2, ccs[2]))
    src.close()
    th.join(20)
    assert not th.is_alive()
    _same(got[0], offline[2])
