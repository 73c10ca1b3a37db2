"""Output guards (min_new_tokens, no_repeat_ngram) and control tokens, against brute force: the
wide-beam search with the optimal-stopping certificate and a bounded length reward returns the
best output among those the guards admit, and stops no later than the exhaustive run."""
from __future__ import annotations

import warnings

import pytest
import torch
from test_search import PROMPTS, SPECS, compiled, run  # noqa: F401, F811 - fixture

from fstbeam.contract.vocab import _from_tokenizer_data, control_token_ids
from fstbeam.runtime import Decoder
from fstbeam.runtime.search.scoring import Scoring

from rt_helpers import StubLM, brute_force


def _repeats(toks, n):
    grams = [tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)]
    return len(grams) != len(set(grams))


@pytest.mark.parametrize("min_new,ngram", [(2, 0), (0, 2), (3, 2), (1, 1)])
def test_guards_with_length_reward_against_brute_force(compiled, min_new, ngram):  # noqa: F811 - the fixture
    v, ccs = compiled
    V, L = v.width, 3
    lm = StubLM(V, eos=[0], eos_bias=1.5)  # EOS likely: the empty output would win unguarded
    scoring, target = Scoring("reward", reward=0.7), 2.0
    names = ["none", "words", "words+phrase"]
    kw = dict(beam_size=V ** L, max_new_tokens=L, batch_size=3, length_reward=scoring.reward, target_length=2,
              min_new_tokens=min_new, no_repeat_ngram=ngram)
    res, _ = run(lm, PROMPTS[:3], [ccs[n] for n in names], **kw)
    full, _ = run(lm, PROMPTS[:3], [ccs[n] for n in names], stopping="exhaustive", **kw)

    def rank(lp, n):
        return float(scoring.rank(torch.tensor(lp), torch.tensor(n), torch.tensor(target)))

    for r, f, name in zip(res, full, names):
        cc = ccs[name]
        every = brute_force(lm.logprobs, PROMPTS[r.index], V=V, L=L, eos=[0], matcher_factory=cc.matcher if cc else None,
                            rank=rank, nbest=10 ** 6)
        ok = [x for x in every if (x[3] is None or len(x[2]) >= min_new) and not (ngram and _repeats(x[2], ngram))]
        best, _lp, toks, eos = ok[0]
        h = r.hypotheses[0]
        assert h.tokens == toks and h.eos == eos and h.score == pytest.approx(best, abs=1e-4), name
        assert f.hypotheses[0].tokens == toks and r.steps <= f.steps, name
        assert len(h.tokens) >= min_new


def _echoes(prompt, toks, n):
    """An n-gram ending in the output equals an earlier n-gram of prompt + output."""
    seq = list(prompt) + list(toks)
    return any(tuple(seq[i : i + n]) in {tuple(seq[j : j + n]) for j in range(i)}
               for i in range(len(seq) - n + 1) if i + n > len(prompt))


@pytest.mark.parametrize("ngram", [1, 2])
def test_prompt_ngrams_count_with_no_repeat_prompt(compiled, ngram):  # noqa: F811 - the fixture
    """``no_repeat_prompt``: the guard also bans the prompt's n-grams; the search returns the best
    output among those with no n-gram of prompt + output repeated into the output. The prompts
    are those whose unguarded best output does echo them (so the guard decides the result)."""
    v, ccs = compiled
    V, L = v.width, 3
    lm = StubLM(V, eos=[0], eos_bias=-1.0)
    cc = ccs["words"]
    candidates = [[a] for a in range(1, V)] + [[a, b] for a in range(1, V) for b in range(1, V)]
    prompts, every = [], []
    for prompt in candidates:
        found = brute_force(lm.logprobs, prompt, V=V, L=L, eos=[0], matcher_factory=cc.matcher, nbest=10 ** 6)
        if found and _echoes(prompt, found[0][2], ngram):
            prompts.append(prompt)
            every.append(found)
        if len(prompts) == 4:
            break
    assert prompts, "no prompt whose best output echoes it: the test would not test the guard"
    kw = dict(beam_size=V ** L, max_new_tokens=L, batch_size=3, no_repeat_ngram=ngram, no_repeat_prompt=True)
    res, _ = run(lm, prompts, [cc] * len(prompts), **kw)
    for r in res:
        prompt = prompts[r.index]
        ok = [x for x in every[r.index] if not _echoes(prompt, x[2], ngram)]
        h = r.hypotheses[0]
        if not ok:
            assert not h.satisfied, prompt
            continue
        assert h.tokens == ok[0][2] and h.logprob == pytest.approx(ok[0][1], abs=1e-4), prompt
        assert not _echoes(prompt, h.tokens, ngram)


def _tokenizer_data():
    pieces = ["<pad>", "<eos>", "a", "b", " ", "<start_of_image>", "[multimodal]", "<b>", "c"]
    added = [{"id": 0, "content": "<pad>", "special": True}, {"id": 1, "content": "<eos>", "special": True},
             {"id": 5, "content": "<start_of_image>", "special": False}, {"id": 6, "content": "[multimodal]", "special": False},
             {"id": 7, "content": "<b>", "special": False}, {"id": 4, "content": " ", "special": False}]
    return {"model": {"type": "WordLevel", "vocab": {p: i for i, p in enumerate(pieces)}}, "added_tokens": added}


def test_unmarked_control_tokens_are_not_text():
    data = _tokenizer_data()
    assert control_token_ids(data["added_tokens"]) == {0, 1, 5, 6}
    v = _from_tokenizer_data(data, width=10, eos_ids=(1,), name="t")
    # " " (added, plain text) and the HTML tag <b> stay text
    assert [i for i, b in enumerate(v.token_bytes) if b] == [2, 3, 4, 7, 8]
    assert v.token_bytes[7] == b"<b>"


@pytest.mark.parametrize("content, control", [
    ("<start_of_image>", True), ("[multimodal]", True), ("<tool_call>", True), ("<bbox>", True),
    ("<unused7>", True), ("<|im_end|>", True), ("<h1>", False), ("</td>", False), ("<TABLE>", False),
    ("</blockquote>", False), ("<s>", False), ("<h1 class=x>", False), ("\n\n", False), ("<<", False)])
def test_html_tags_are_text_and_other_names_control(content, control):
    assert bool(control_token_ids([{"id": 3, "content": content, "special": False}])) is control


@pytest.mark.parametrize("allow", [False, True])
def test_unconstrained_decoding_never_emits_control_tokens(allow):
    v = _from_tokenizer_data(_tokenizer_data(), width=10, eos_ids=(1,), name="t")
    V = v.width
    bias = torch.zeros(V)
    bias[[0, 5, 6, 7, 9]] = 8.0  # control, padding and past-the-tokenizer ids are the most likely
    lm = StubLM(V, eos=[1], eos_bias=-1.0)
    real = lm.logits_for
    lm.logits_for = lambda seq: real(seq) + bias  # noqa: E731
    dec = Decoder(lm, v, eos_ids=[1], device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rs = dec.generate([[2], [3, 2]], beam_size=3, max_new_tokens=5, min_new_tokens=2, allow_control_tokens=allow)
    emitted = {t for r in rs for t in r.token_ids}
    text = {i for i, b in enumerate(v.token_bytes) if b}
    if allow:
        assert emitted - text  # asked for: the likely control tokens come out
    else:
        assert emitted and emitted <= text


def _top_tree(lm, prompt, *, V, L, kk, cc, rank, end_rule):
    """The outputs of the tree a beam expands when each hypothesis takes its ``kk`` best allowed
    tokens (``max_per_parent``), best first: ``y EOS`` where accepting (with ``end_rule``, only
    where EOS scores at least the ``kk``-th best allowed token), ``L`` tokens ending accepting;
    and, apart, the endings ``end_rule`` refuses."""
    found, refused = [], []

    def rec(seq, lp_sum, m):
        lp = lm.logprobs(prompt + seq)
        allowed = [t for t in (range(V) if m is None else m.allowed_token_ids().tolist()) if t != 0]
        top = sorted(allowed, key=lambda t: -lp[t].item())[:kk]
        if m is None or m.is_final():
            low = end_rule and len(top) == kk and lp[0] < lp[top[-1]]
            (refused if low else found).append((rank(lp_sum + lp[0].item(), len(seq) + 1), seq, 0))
        for t in top:
            m2 = None
            if m is not None:
                m2 = cc.matcher()
                for x in seq + [t]:
                    m2.advance(x)
            if len(seq) + 1 == L:
                if m2 is None or m2.is_final():
                    found.append((rank(lp_sum + lp[t].item(), L), seq + [t], None))
            else:
                rec(seq + [t], lp_sum + lp[t].item(), m2)

    rec([], 0.0, cc.matcher() if cc else None)
    return sorted(found, key=lambda x: -x[0]), sorted(refused, key=lambda x: -x[0])


@pytest.mark.parametrize("end_rule", [False, True])
def test_end_in_top_k_against_the_expanded_tree(compiled, end_rule):  # noqa: F811 - the fixture
    """``end_in_top_k``: an output ends only where EOS ranks among the tokens its last hypothesis
    expands; an output that ends so beats the outputs the length limit cuts, and where none does,
    the best refused ending does. A beam as wide as the tree returns that n-best."""
    v, ccs = compiled
    V, L, kk = v.width, 4, 2
    lm = StubLM(V, eos=[0], eos_bias=0.5)
    scoring = Scoring("reward", reward=0.7)

    def rank(lp, n):
        return float(scoring.rank(torch.tensor(lp), torch.tensor(n), torch.tensor(2.0)))

    changed = fallback = 0
    for name in ("none", "words"):
        cc = ccs[name]
        for target_eos in (0.5, -2.5):  # -2.5: EOS rarely in the top 2, so the fallback is seen
            lm = StubLM(V, eos=[0], eos_bias=target_eos)
            res, _ = run(lm, PROMPTS, [cc] * len(PROMPTS), beam_size=kk ** L, max_per_parent=kk, max_new_tokens=L,
                         batch_size=6, length_reward=scoring.reward, target_length=2, end_in_top_k=end_rule, nbest=3)
            for r in res:
                found, refused = _top_tree(lm, PROMPTS[r.index], V=V, L=L, kk=kk, cc=cc, rank=rank, end_rule=end_rule)
                ended = [x for x in found if x[2] is not None]
                if end_rule:  # the n-best in tiers: endings by the rule, refused endings, cut outputs
                    found = ended + refused + [x for x in found if x[2] is None]
                fallback += not ended and bool(refused)
                assert [(h.tokens, h.eos) for h in r.hypotheses] == [(t, e) for _, t, e in found[:3]], name
                assert [h.score for h in r.hypotheses] == pytest.approx([x[0] for x in found[:3]], abs=1e-4)
                best, toks, eos = found[0]
                loose = _top_tree(lm, PROMPTS[r.index], V=V, L=L, kk=kk, cc=cc, rank=rank, end_rule=False)[0][0]
                changed += loose[1] != toks
    # the rule removes a winning ending somewhere, and the fallback is used (else the test could not see them)
    assert bool(changed) == end_rule and bool(fallback) == end_rule
