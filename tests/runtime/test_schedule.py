"""Streaming schedules: expand every live input (``expand="all"``) or only the least advanced ones
(``expand="least_advanced"``, Yang et al.'s VAR-STREAM). Both must give the results of decoding
each input alone; the second must never expand an input ahead of another live one."""
from __future__ import annotations

import warnings

import pytest

from fstbeam.errors import DecodeError
from fstbeam.runtime import Decoder
from fstbeam.runtime.search.engine import SearchEngine

from rt_helpers import StubLM, tiny_gemma3, tiny_llama, tiny_t5, tiny_vocab


@pytest.fixture(scope="module")
def vocab():
    return tiny_vocab()


def compile_(v, **kw):
    from fstbeam.compiler.api import compile_constraints

    return compile_constraints(tokenizer=v, **kw)


@pytest.fixture
def expansions(monkeypatch):
    """Record, at every step, the output lengths of the expanded inputs and of the parked ones."""
    seen = []
    original = SearchEngine._expand

    def spy(self, logits):
        parked = self.parked.beam.length.tolist() if self.parked else []
        seen.append((self.beam.length.tolist(), parked))
        return original(self, logits)

    monkeypatch.setattr(SearchEngine, "_expand", spy)
    return seen


def _decode_all_ways(dec, prompts, ccs, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        singles = [dec.generate([p], c, **kw)[0] for p, c in zip(prompts, ccs)]
        every = dec.generate(prompts, ccs, batch_size=3, refill=0.5, expand="all", **kw)
        stats_all = dec.last_stats
        lazy = dec.generate(prompts, ccs, batch_size=3, refill=0.5, expand="least_advanced", **kw)
        stats_lazy = dec.last_stats
    return singles, every, lazy, stats_all, stats_lazy


def _assert_same(reference, variant):
    assert len(reference) == len(variant)
    for a, b in zip(reference, variant):
        assert a.token_ids == b.token_ids
        assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
        assert a.steps == b.steps and a.satisfied == b.satisfied


CASES = {
    "stub": lambda v: StubLM(v.width, eos=[0], eos_bias=1.0),
    "llama": lambda v: tiny_llama(v.width),
    "gemma3": lambda v: tiny_gemma3(v.width),
}


@pytest.mark.parametrize("name", list(CASES))
def test_least_advanced_pauses_inputs_ahead_and_changes_no_result(vocab, name, expansions):
    dec = Decoder(CASES[name](vocab), vocab, eos_ids=[0, 1, 2], device="cpu")
    ccs = [None, compile_(vocab, phrases=["b"]), None, compile_(vocab, words=["a", "b", "ab"]), None,
           compile_(vocab, avoid=["a"]), None, None, compile_(vocab, prefix="c"), None]
    prompts = [[3 + i % 5] * (1 + i % 4) for i in range(len(ccs))]
    singles, every, lazy, st_all, st_lazy = _decode_all_ways(dec, prompts, ccs, beam_size=3, max_new_tokens=7)
    _assert_same(singles, every)
    _assert_same(singles, lazy)
    # The schedule did pause inputs here, and only then; every step expanded inputs of one length,
    # strictly behind every parked input (parked inputs rejoin once the others catch up).
    assert st_all.paused == 0 and st_lazy.paused > 0
    lazy_steps = expansions[-st_lazy.steps:]
    assert sum(len(parked) for _, parked in lazy_steps) == st_lazy.paused
    for live, parked in lazy_steps:
        assert len(set(live)) == 1
        assert all(p > live[0] for p in parked)
    # Pausing costs steps, never model rows: every input-step is computed once either way.
    assert st_lazy.steps >= st_all.steps
    assert st_lazy.model_rows == st_all.model_rows


def test_least_advanced_on_t5(vocab):
    dec = Decoder(tiny_t5(vocab.width), vocab, eos_ids=[0, 1, 2], device="cpu")
    srcs = [[1, 2, 3], [4], [5, 6, 7, 8, 9], [10, 11], [2, 2], [3], [4, 4, 4]]
    ccs = [compile_(vocab, phrases=["b"]) if i % 2 else None for i in range(len(srcs))]
    singles, every, lazy, _, _ = _decode_all_ways(dec, srcs, ccs, beam_size=3, max_new_tokens=6)
    _assert_same(singles, every)
    _assert_same(singles, lazy)


def test_unknown_expand_policy_is_refused(vocab):
    dec = Decoder(StubLM(vocab.width), vocab, eos_ids=[0], device="cpu")
    with pytest.raises(DecodeError, match="expand must be"):
        dec.generate([[1]], expand="fifo")


def test_models_with_absolute_decoder_positions_refill_only_when_empty(vocab):
    """A model whose rows cannot join mid-decode still streams: the batch refills when empty."""

    class NoJoin(StubLM):
        supports_refill = False

        def concat(self, states):
            raise AssertionError("rows joined mid-decode")

    dec = Decoder(NoJoin(vocab.width, eos=[0], eos_bias=1.0), vocab, eos_ids=[0, 1], device="cpu")
    prompts = [[i + 1] for i in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        streamed = dec.generate(prompts, beam_size=2, max_new_tokens=5, batch_size=2, refill=0.5)
        singles = [dec.generate([p], beam_size=2, max_new_tokens=5)[0] for p in prompts]
    _assert_same(singles, streamed)


def test_stream_reads_inputs_lazily_and_yields_as_inputs_finish(vocab):
    """``stream`` pulls inputs only as the batch has room, yields each result when its input
    finishes (so a short output overtakes a long one), and in input order with ``ordered=True``."""
    dec = Decoder(StubLM(vocab.width, eos=[0], eos_bias=1.0), vocab, eos_ids=[0, 1, 2], device="cpu")
    prompts = [[3 + i % 5] * (1 + i % 3) for i in range(9)]
    kw = dict(beam_size=2, max_new_tokens=6, batch_size=3, refill=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = dec.generate(prompts, **kw)
        pulled = []

        def source():
            for p in prompts:
                pulled.append(p)
                yield p

        seen_when_first = None
        finished = []
        for r in dec.stream(source(), **kw):
            if seen_when_first is None:
                seen_when_first = len(pulled)
            finished.append(r)
        ordered = list(dec.stream(iter(prompts), iter([None] * len(prompts)), ordered=True, **kw))
    assert seen_when_first <= kw["batch_size"]  # nothing read beyond the first batch yet
    assert sorted(r.index for r in finished) == list(range(len(prompts)))
    assert [r.index for r in ordered] == list(range(len(prompts)))
    # unordered: a short output overtakes a longer one that started with it (stub outputs here
    # take 1 to 6 steps); inputs that start together are yielded shortest first
    order = [r.index for r in finished]
    assert order != sorted(order)
    first_batch = [r.steps for r in finished if r.index < kw["batch_size"]]
    assert first_batch == sorted(first_batch)
    for a, b, c in zip(reference, sorted(finished, key=lambda r: r.index), ordered):
        assert a.token_ids == b.token_ids == c.token_ids


@pytest.mark.parametrize("beam_size", [2, 3])
def test_refills_among_inputs_with_phrases_change_no_result(vocab, beam_size):
    """Every input has its own must-include phrases, so each refill rebuilds the pooled tables and
    moves the live inputs' automata to new offsets (smaller ones once earlier inputs have left);
    beams that are not full (the plain track's room) must keep valid states through the move."""
    dec = Decoder(StubLM(vocab.width, eos=[0], eos_bias=1.0), vocab, eos_ids=[0, 1, 2], device="cpu")
    # inputs with many automata (a long avoid list) next to small ones: when a large one leaves,
    # the next pool is smaller than the offset shift of the inputs after it
    big = dict(avoid=["bab", "cac", "abc", "bca", "cab", "acb", "bcb", "cbc", "aca", "bac", "cba", "abab"])
    phrases = [["a"], ["b", "c"], ["ab"], ["c"], ["ba", "a"], ["b"], ["a", "c"], ["ab", "b"]]
    ccs = [compile_(vocab, phrases=p, **(big if i % 4 == 0 else {})) for i, p in enumerate(phrases)]
    prompts = [[3 + i % 5] * (1 + i % 3) for i in range(len(ccs))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        singles = [dec.generate([p], c, beam_size=beam_size, max_new_tokens=7)[0] for p, c in zip(prompts, ccs)]
        every = dec.generate(prompts, ccs, beam_size=beam_size, max_new_tokens=7, batch_size=2, refill=0.5)
        st_all = dec.last_stats
    assert st_all.refills > 1
    _assert_same(singles, every)
