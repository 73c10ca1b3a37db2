"""The search against oracles: brute force over every output (with a beam as wide as the search
space), a plain-Python DBA search for narrow beams, and the optimal-stopping guarantees."""
from __future__ import annotations

import math

import pytest
import torch

from fstbeam.runtime.config import SearchConfig
from fstbeam.runtime.search.engine import Request, SearchEngine
from fstbeam.runtime.search.scoring import Scoring
from fstbeam.runtime.search.tables import InputConstraints

from rt_helpers import StubLM, brute_force, hf_logprobs, tiny_gemma3, tiny_llama, tiny_vocab
from rt_reference import reference_search

SPECS = {
    "none": None,
    "words": dict(words=["a", "b", "ab"]),
    "words+phrase": dict(words=["a", "b", "ab"], phrases=["b a"]),
    "phrases+avoid": dict(phrases=["c", "b"], avoid=["ab"]),
    "prefix": dict(words=["a", "b", "c", "ab"], prefix="a b"),
}


@pytest.fixture(scope="module")
def compiled():
    from fstbeam.compiler.api import compile_constraints

    v = tiny_vocab()
    return v, {name: (compile_constraints(tokenizer=v, **s) if s else None) for name, s in SPECS.items()}


def run(adapter, prompts, ccs, **cfg):
    eng = SearchEngine(adapter, SearchConfig(**cfg), eos_ids=[0], device="cpu")
    reqs = [Request(i, p, InputConstraints.from_compiled(c)) for i, (p, c) in enumerate(zip(prompts, ccs))]
    out = sorted(eng.run(reqs), key=lambda r: r.index)
    return out, eng.stats


PROMPTS = [[1], [2, 3], [4], [7, 7], [5], [9, 1]]


@pytest.mark.parametrize("dba", [False, True])
@pytest.mark.parametrize("eos_bias", [-1.0, 1.5])
def test_wide_beam_finds_the_brute_force_optimum(compiled, dba, eos_bias):
    v, ccs = compiled
    V, L = v.width, 3
    lm = StubLM(V, eos=[0], eos_bias=eos_bias)
    names = list(SPECS)
    res, _ = run(lm, PROMPTS[: len(names)], [ccs[n] for n in names], beam_size=V ** L, max_new_tokens=L, batch_size=2, dba=dba)
    for r, name in zip(res, names):
        cc = ccs[name]
        [(rank, lp, toks, eos)] = brute_force(lm.logprobs, PROMPTS[r.index], V=V, L=L, eos=[0],
                                              matcher_factory=cc.matcher if cc else None)
        h = r.hypotheses[0]
        assert h.satisfied, name
        assert h.tokens == toks and h.eos == eos, name
        assert h.logprob == pytest.approx(lp, abs=1e-4), name


@pytest.mark.parametrize("name", list(SPECS))
def test_optimal_stopping_same_result_in_no_more_steps(compiled, name):
    v, ccs = compiled
    V, L = v.width, 4
    lm = StubLM(V, eos=[0], eos_bias=1.0)
    prompts = PROMPTS[:4]
    kw = dict(beam_size=6, max_new_tokens=L, batch_size=4, nbest=2)
    opt, _ = run(lm, prompts, [ccs[name]] * 4, stopping="optimal", **kw)
    full, _ = run(lm, prompts, [ccs[name]] * 4, stopping="exhaustive", **kw)
    for a, b in zip(opt, full):
        assert [h.tokens for h in a.hypotheses] == [h.tokens for h in b.hypotheses]
        assert [h.score for h in a.hypotheses] == pytest.approx([h.score for h in b.hypotheses], abs=1e-5)
        assert a.steps <= b.steps


def test_optimal_stopping_saves_steps_when_eos_is_likely():
    lm = StubLM(13, eos=[0], eos_bias=3.0)
    prompts = PROMPTS
    kw = dict(beam_size=4, max_new_tokens=8, batch_size=3)
    opt, _ = run(lm, prompts, [None] * len(prompts), stopping="optimal", **kw)
    full, _ = run(lm, prompts, [None] * len(prompts), stopping="exhaustive", **kw)
    assert [r.hypotheses[0].tokens for r in opt] == [r.hypotheses[0].tokens for r in full]
    assert sum(r.steps for r in opt) < sum(r.steps for r in full)


@pytest.mark.parametrize("scoring", [Scoring("reward", reward=0.8), Scoring("reward", reward=-0.3), Scoring("normalize", alpha=1.0)])
def test_length_scores_against_brute_force(compiled, scoring):
    """Bounded length reward and length normalization: the wide-beam search with the certificate
    returns the brute-force best under the same ranking, and equals the exhaustive run."""
    v, ccs = compiled
    V, L = v.width, 3
    lm = StubLM(V, eos=[0], eos_bias=0.5)
    target = 2.0
    names = ["none", "words+phrase", "prefix"]
    kw = dict(beam_size=V ** L, max_new_tokens=L, batch_size=3, target_length=2,
              length_reward=scoring.reward if scoring.mode == "reward" else None,
              length_normalization=scoring.alpha if scoring.mode == "normalize" else None)
    res, _ = run(lm, PROMPTS[:3], [ccs[n] for n in names], **kw)
    full, _ = run(lm, PROMPTS[:3], [ccs[n] for n in names], stopping="exhaustive", **kw)
    tt = torch.tensor

    def rank(lp, n):
        return float(scoring.rank(tt(lp), tt(n), tt(target)))

    for r, f, name in zip(res, full, names):
        cc = ccs[name]
        [(best, lp, toks, eos)] = brute_force(lm.logprobs, PROMPTS[r.index], V=V, L=L, eos=[0],
                                              matcher_factory=cc.matcher if cc else None, rank=rank)
        h = r.hypotheses[0]
        assert h.tokens == toks and h.score == pytest.approx(best, abs=1e-4), name
        assert f.hypotheses[0].tokens == toks and r.steps <= f.steps


def test_nbest_is_the_brute_force_top_n(compiled):
    v, ccs = compiled
    V, L = v.width, 3
    lm = StubLM(V, eos=[0], eos_bias=0.0)
    cc = ccs["words+phrase"]
    res, _ = run(lm, [PROMPTS[1]], [cc], beam_size=V ** L, max_new_tokens=L, nbest=4)
    exp = brute_force(lm.logprobs, PROMPTS[1], V=V, L=L, eos=[0], matcher_factory=cc.matcher, nbest=4)
    got = res[0].hypotheses
    assert [h.tokens for h in got] == [e[2] for e in exp]
    assert [h.logprob for h in got] == pytest.approx([e[1] for e in exp], abs=1e-4)


@pytest.mark.parametrize("name", ["words+phrase", "phrases+avoid", "none"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_narrow_beam_equals_the_plain_python_search(compiled, name, k):
    """With a narrow beam, DBA's candidates (global top-k, row best, best advancing token per
    unmet phrase) and bank allocation decide what survives: the vectorized search must make
    exactly the choices of the plain-Python reference."""
    v, ccs = compiled
    V, L = v.width, 5
    cc = ccs[name]
    for bias in (-2.0, 0.0):
        lm = StubLM(V, eos=[0], eos_bias=bias)
        for dba in (True, False):
            res, _ = run(lm, PROMPTS, [cc] * len(PROMPTS), beam_size=k, max_new_tokens=L, batch_size=3, dba=dba)
            for r in res:
                (ref, steps) = reference_search(lm.logprobs, PROMPTS[r.index], cc, V=V, eos=[0], k=k, L=L, dba=dba)
                h = r.hypotheses[0]
                if not ref:
                    assert not h.satisfied
                    continue
                assert h.satisfied and h.tokens == ref[0][1] and h.logprob == pytest.approx(ref[0][0], abs=1e-4), (dba, r.index)
                assert r.steps == steps


def test_dba_places_a_phrase_plain_beam_search_misses(compiled):
    """A phrase the model finds unlikely: plain beam search with a small beam runs out of
    length, DBA's banks keep a hypothesis that started the phrase alive."""
    v, _ = compiled
    from fstbeam.compiler.api import compile_constraints

    cc = compile_constraints(tokenizer=v, phrases=["c . c"])
    V = v.width
    lm = StubLM(V, eos=[0], eos_bias=-1.0, scale=4.0)
    prompts = [[1], [2], [4], [5], [6]]
    dba, _ = run(lm, prompts, [cc] * 5, beam_size=2, max_new_tokens=6, dba=True)
    plain, _ = run(lm, prompts, [cc] * 5, beam_size=2, max_new_tokens=6, dba=False)
    assert sum(r.hypotheses[0].satisfied for r in dba) > sum(r.hypotheses[0].satisfied for r in plain)
    assert all(r.hypotheses[0].satisfied for r in dba)


@pytest.mark.parametrize("factory", [tiny_llama, tiny_gemma3], ids=["llama", "gemma3"])
def test_brute_force_on_tiny_hf_models(compiled, factory):
    from fstbeam.runtime.model.adapters import CausalLMAdapter

    v, ccs = compiled
    V, L = v.width, 2  # every output of up to 2 tokens: 13**2 prefixes through the model
    model = factory(V)
    ad = CausalLMAdapter(model)
    names = ["none", "words+phrase", "phrases+avoid"]
    prompts = [[1, 2, 3, 4], [5], [6, 7]]  # different lengths: left padding in the batch
    res, _ = run(ad, prompts, [ccs[n] for n in names], beam_size=V ** L, max_new_tokens=L, batch_size=3)
    lp = hf_logprobs(model)
    for r, name in zip(res, names):
        cc = ccs[name]
        [(_, best, toks, eos)] = brute_force(lp, prompts[r.index], V=V, L=L, eos=[0], matcher_factory=cc.matcher if cc else None)
        h = r.hypotheses[0]
        assert h.tokens == toks and h.logprob == pytest.approx(best, abs=1e-4), name
        assert math.isfinite(h.score)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_mixed_batch_equals_singles_when_lengths_are_tight(compiled, k):
    """Phrase inputs (DBA) next to word-list/prefix inputs whose length limit binds: each input's
    result is the one it gets alone (candidate sets and feasibility are per input)."""
    v, ccs = compiled
    lm = StubLM(v.width, eos=[0], eos_bias=-0.5)
    mix = [ccs["words+phrase"], ccs["prefix"], ccs["words"], ccs["phrases+avoid"], None, ccs["prefix"]]
    for L in (3, 4):
        batch, _ = run(lm, PROMPTS, mix, beam_size=k, max_new_tokens=L, batch_size=6)
        for r, p, c in zip(batch, PROMPTS, mix):
            [alone], _ = run(lm, [p], [c], beam_size=k, max_new_tokens=L)
            a, b = r.hypotheses[0], alone.hypotheses[0]
            assert (a.tokens, a.satisfied, r.steps) == (b.tokens, b.satisfied, alone.steps)
            assert a.logprob == pytest.approx(b.logprob, abs=1e-5)


@pytest.mark.parametrize("name", ["words+phrase", "prefix", "phrases+avoid"])
def test_renormalized_scores_against_brute_force(compiled, name):
    v, ccs = compiled
    V, L = v.width, 3
    lm = StubLM(V, eos=[0], eos_bias=0.0)
    cc = ccs[name]
    res, _ = run(lm, PROMPTS[:3], [cc] * 3, beam_size=V ** L, max_new_tokens=L, renormalize=True)
    for r in res:
        [(_, lp, toks, eos)] = brute_force(lm.logprobs, PROMPTS[r.index], V=V, L=L, eos=[0], matcher_factory=cc.matcher,
                                           renormalize=True)
        h = r.hypotheses[0]
        assert h.tokens == toks and h.logprob == pytest.approx(lp, abs=1e-4)
        assert h.logprob <= 0


def test_threshold_pruning_and_max_candidates_per_parent(compiled):
    """delta = inf and M = beam change nothing; a tight delta and M = 1 shrink the work
    (fewer model rows) and keep the result constrained."""
    v, ccs = compiled
    lm = StubLM(v.width, eos=[0], eos_bias=-1.0)
    cc = ccs["words+phrase"]
    kw = dict(beam_size=4, max_new_tokens=5, batch_size=3)
    base, st0 = run(lm, PROMPTS, [cc] * len(PROMPTS), **kw)
    same, _ = run(lm, PROMPTS, [cc] * len(PROMPTS), prune_threshold=float("inf"), max_per_parent=4, **kw)
    assert [r.hypotheses[0].tokens for r in base] == [r.hypotheses[0].tokens for r in same]
    _ = lm.forward_rows
    pruned, st1 = run(lm, PROMPTS, [cc] * len(PROMPTS), prune_threshold=1.0, max_per_parent=1, **kw)
    assert st1.model_rows < st0.model_rows
    for r in pruned:
        if r.hypotheses[0].satisfied:
            m = cc.matcher()
            for t in r.hypotheses[0].tokens:
                m.advance(t)
            assert m.is_final()
