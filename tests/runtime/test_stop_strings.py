"""Stop strings inside the search (``SearchConfig.stop``) against a brute force over every output.

The oracle enumerates every token sequence of at most ``L`` tokens: a sequence whose text first
contains a stop string finishes there (its log-probability includes that token; its output is
the text before the stop string; a constrained one only where the stop begins at the token in
an accepting state), every other one ends by EOS where it may, or at the limit. With a beam as
wide as the search space, the search's n best distinct outputs are the oracle's.
"""
from __future__ import annotations

import dataclasses
import warnings

import pytest

from fstbeam.errors import DecodeError
from fstbeam.runtime.config import SearchConfig
from fstbeam.runtime.search.engine import Request, SearchEngine
from fstbeam.runtime.search.stops import StopRule, kept_output
from fstbeam.runtime.search.tables import InputConstraints
from fstbeam.runtime.stop_rules import hypotheses

from rt_helpers import StubLM, advanced_copy, tiny_vocab

# TINY_TOKENS: "<eos>", "a", "b", " ", "ab", " a", " b", "c", ".", " c", "ba", "a ", "<x>"
STOPS = {
    "one token": ["."],
    "overrun": ["b"],  # "ab", "ba", " b" run past it
    "spans": ["a b"],  # "a" + " b", "a " + "b", "a" + " " + "b", "a " + "ba"
    "two": [" c", "ba"],
}


def _text(tb, toks) -> bytes:
    return b"".join(tb[t] or b"" for t in toks)


def brute_force_stop(lm, prompt, *, V, L, tb, stops, matcher_factory=None):
    """Every output as ``(logprob, output text, reason)``, best per distinct text, best first."""
    pats = [s.encode() for s in stops]
    found: dict[bytes, tuple[float, bytes, str]] = {}

    def add(lp, text, why):
        if text not in found or lp > found[text][0]:
            found[text] = (lp, text, why)

    def first_stop(text):
        at = [i for i in (text.find(p) for p in pats) if i >= 0]
        return min(at) if at else None

    def rec(seq, lp_sum, m):
        lp = lm.logprobs(prompt + seq)
        before = _text(tb, seq)
        if m is None or m.is_final():
            add(lp_sum + lp[0].item(), before, "eos")
        allowed = range(V) if m is None else m.allowed_token_ids().tolist()
        for v in allowed:
            if v == 0:
                continue
            total = lp_sum + lp[v].item()
            text = _text(tb, seq + [v])
            cut = first_stop(text)
            if cut is not None:  # finishes here, or (constrained, not at an accepting token boundary) is dropped
                if m is None or (cut == len(before) and m.is_final()):
                    add(total, text[:cut], "stop")
                continue
            m2 = advanced_copy(m, v, matcher_factory)
            if len(seq) + 1 == L:
                if m2 is None or m2.is_final():
                    add(total, text, "length")
            else:
                rec(seq + [v], total, m2)

    rec([], 0.0, matcher_factory() if matcher_factory else None)
    return sorted(found.values(), key=lambda x: -x[0])


@pytest.fixture(scope="module")
def vocab():
    return tiny_vocab()


def search(lm, vocab, prompts, stop, cc=None, *, L=3, nbest=3, batch_size=2):
    V = vocab.width
    cfg = SearchConfig(beam_size=V ** L, max_new_tokens=L, nbest=nbest, batch_size=batch_size, stop=tuple(stop))
    eng = SearchEngine(lm, dataclasses.replace(cfg, nbest=cfg.beam_size), eos_ids=[0], device="cpu")
    inp = InputConstraints.from_compiled(cc)
    reqs = [Request(i, p, inp, stop=StopRule(stop, vocab.token_bytes)) for i, p in enumerate(prompts)]
    raws = sorted(eng.run(reqs), key=lambda r: r.index)
    return raws, [hypotheses(r.hypotheses, vocab.token_bytes, cfg) for r in raws]


PROMPTS = [[1], [2, 3], [4], [7, 7]]


@pytest.mark.parametrize("case", list(STOPS))
@pytest.mark.parametrize("eos_bias", [-2.0, 0.5])
def test_wide_beam_finds_the_brute_force_stop_outputs(vocab, case, eos_bias):
    stops, tb = STOPS[case], vocab.token_bytes
    lm = StubLM(vocab.width, eos=[0], eos_bias=eos_bias)
    raws, results = search(lm, vocab, PROMPTS, stops)
    for raw, hyps in zip(raws, results):
        want = brute_force_stop(lm, PROMPTS[raw.index], V=vocab.width, L=3, tb=tb, stops=stops)[:3]
        assert [h.text.encode() for h in hyps] == [w[1] for w in want], case
        assert [h.logprob for h in hyps] == pytest.approx([w[0] for w in want], abs=1e-4)
        assert [h.finish_reason for h in hyps] == [w[2] for w in want]
        for h in hyps:
            assert not any(s in h.text for s in stops)  # cut right before the first stop string
            assert _text(tb, h.token_ids).startswith(h.text.encode())
            if h.finish_reason == "stop" and h.token_ids:  # every kept token holds some of the kept text
                assert len(_text(tb, h.token_ids[:-1])) < len(h.text.encode())


def test_stop_hits_occur_in_every_form(vocab):
    """The cases above meet what they are named for: a stop string inside a token, across tokens."""
    lm = StubLM(vocab.width, eos=[0], eos_bias=-2.0)
    seen = set()
    for case in ("overrun", "spans"):
        raws, _ = search(lm, vocab, PROMPTS, STOPS[case])
        for raw in raws:
            for h in raw.hypotheses:
                if h.finish_reason == "stop":
                    last = vocab.token_bytes[h.tokens[-1]]
                    seen.add("inside" if h.cut < len(last) else "at" if h.cut == len(last) else "across")
    assert {"inside", "across"} <= seen


def test_constrained_stop_ends_only_where_the_constraints_accept(vocab):
    from fstbeam.compiler.api import compile_constraints

    cc = compile_constraints(tokenizer=vocab, words=["a", "b", "ab", "c"])
    lm = StubLM(vocab.width, eos=[0], eos_bias=-2.0)
    for stops in ([" b"], ["b"], [" c"]):
        raws, results = search(lm, vocab, PROMPTS[:2], stops, cc)
        for raw, hyps in zip(raws, results):
            want = brute_force_stop(lm, PROMPTS[raw.index], V=vocab.width, L=3, tb=vocab.token_bytes, stops=stops,
                                    matcher_factory=cc.matcher)[:3]
            assert [(h.text.encode(), h.finish_reason) for h in hyps] == [(w[1], w[2]) for w in want], stops
            assert [h.logprob for h in hyps] == pytest.approx([w[0] for w in want], abs=1e-4)
            assert all(h.satisfied for h in hyps)


def test_kept_output():
    tb = [b"ab", b".", b"c.d", b"\n"]
    assert kept_output([0, 1], 1, tb) == ([0], b"ab")
    assert kept_output([0, 2], 2, tb) == ([0, 2], b"abc")  # "c.d" overruns the stop "."
    assert kept_output([0, 3, 3], 2, tb) == ([0], b"ab")  # "\n\n" across two tokens


def test_stop_is_checked_in_one_place():
    assert SearchConfig(stop=".").stop == (".",)
    assert SearchConfig(stop=[".", "\n", "."]).stop == (".", "\n")
    for bad, what in (([""], "non-empty"), ([1], "non-empty strings"), (b".", "list of strings"), (["\ud800"], "UTF-8")):
        with pytest.raises(DecodeError, match=what):
            SearchConfig(stop=bad)


def _check_outputs(dec, prompt, r, stop, n):
    tb = dec.vocab.token_bytes
    texts = [h.text for h in r.hypotheses]
    assert len(set(texts)) == len(texts) and 1 <= len(texts) <= n  # distinct
    assert any(h.finish_reason == "stop" for h in r.hypotheses), (stop, texts)
    for h in r.hypotheses:
        assert not any(s in h.text for s in stop), (stop, h.text)
        if h.finish_reason != "stop":
            continue
        kept, full = list(h.token_ids), _text(tb, h.token_ids)
        shown = full.decode("utf-8", "replace")  # (a random model writes broken UTF-8 too)
        assert shown.startswith(h.text)
        rest = shown[len(h.text):]  # what the last kept token holds past the cut: a stop's start
        assert any(s.startswith(rest) for s in stop)
        kept_lp = dec.score(prompt, kept, eos=False)
        if not rest:  # the stop string begins right after the kept tokens: in the next token, or across two
            pats = [x.encode() for x in stop]
            seqs = [[t] for t in range(len(tb)) if tb[t] and any(p in full + tb[t] for p in pats)]
            seqs += [[t, u] for t in range(len(tb)) if tb[t] and any(p.startswith(tb[t]) and p != tb[t] for p in pats)
                     for u in range(len(tb)) if tb[u] and any(p in full + tb[t] + tb[u] for p in pats)]
            assert any(dec.score(prompt, kept + q, eos=False) == pytest.approx(h.logprob, abs=1e-3) for q in seqs)
        else:  # the last kept token holds the stop string's start (and its end, for a stop string of one token)
            assert h.logprob <= kept_lp + 1e-3


def test_decoder_stop_with_the_tiny_model(tmp_path):
    """The public API on a real (tiny) model: every output ends right before its first stop
    string, the outputs are distinct, and the log-probability counts the stop token (rescored)."""
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tiny_model import save_tiny_model

    from fstbeam import compile_constraints
    from fstbeam.runtime.decoder import Decoder

    dec = Decoder(str(save_tiny_model(tmp_path)), device="cpu")
    prompt, kw = "the cat sat on", dict(beam_size=6, nbest=4, max_new_tokens=10, preset="plain")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [free] = dec.generate([prompt], min_new_tokens=6, **kw)
        best = free.hypotheses[0].text
        stop = [best[3:5]]  # text the model writes: the search ends there now
        [r] = dec.generate([prompt], min_new_tokens=2, stop=stop, **kw)
        _check_outputs(dec, prompt, r, stop, 4)
        cc = compile_constraints(tokenizer=dec.vocab, words=["a", "cat", "dog", "the", "sat", "on", "mat"],
                                 leading_space=True)
        [w] = dec.generate([prompt], cc, min_new_tokens=1, **kw)
        tb = dec.vocab.token_bytes  # a word it ends an output with (a constrained output ends at a token boundary)
        last = next(h.token_ids[-1] for h in w.hypotheses if len(h.token_ids) >= 2 and tb[h.token_ids[-1]][:1] == b" ")
        stop = [tb[last].decode()]
        [r] = dec.generate([prompt], cc, min_new_tokens=1, stop=stop, **kw)
    _check_outputs(dec, prompt, r, stop, 4)
    assert all(h.satisfied for h in r.hypotheses)


def test_an_inputs_stop_strings_leave_the_others_in_its_batch_alone(vocab):
    """Inputs with and without stop strings (and with other ones) in one batch decode as alone."""
    lm = StubLM(vocab.width, eos=[0], eos_bias=-1.0)
    cfg = SearchConfig(beam_size=4, max_new_tokens=5, nbest=4, batch_size=4)
    stops = [["b"], None, ["a b", "."], None]

    def run(items):
        eng = SearchEngine(lm, cfg, eos_ids=[0], device="cpu")
        reqs = [Request(i, PROMPTS[i], InputConstraints.from_compiled(None),
                        stop=StopRule(s, vocab.token_bytes) if s else None) for i, s in items]
        return {r.index: [(h.tokens, h.cut, round(h.logprob, 5), h.finish_reason) for h in r.hypotheses]
                for r in eng.run(reqs)}

    together = run(list(enumerate(stops)))
    alone = {i: run([(i, s)])[i] for i, s in enumerate(stops)}
    assert together == alone
    assert any(h[3] == "stop" for i in (0, 2) for h in together[i])
