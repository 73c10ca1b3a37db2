"""OpenAI conformance of ``fstbeam serve``, tested with the ``openai`` client itself against a real
server on 127.0.0.1 (tiny random model): ``models.retrieve``, ``finish_reason`` ``length``,
``logprobs``/``top_logprobs`` (the search's own scores), ``stream_options.include_usage``, ``stop``
with ``n`` (distinct choices, usage of the kept tokens only), every SearchConfig field per request
(the same checks and messages as ``SearchConfig``), and the fields beam search refuses."""
from __future__ import annotations

import os
import sys
import warnings

import httpx
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from serve_helpers import offline_result  # noqa: E402


def _client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def test_models_retrieve(server):
    import openai

    c = _client(server)
    assert c.models.retrieve("tiny").id == "tiny"
    with pytest.raises(openai.NotFoundError):
        c.models.retrieve("gpt-4")


@pytest.mark.parametrize("tokens,constraints", [(1, None), (2, {"phrases": ["dog", "mat"]}), (3, {"prefix": "the"}),
                                                (30, None)])
def test_a_cut_answer_says_length(server, offline, tokens, constraints):
    """``length`` where the limit ended the output (the search's finish reason is ``length`` or
    ``incomplete``, or the output holds every token it may); ``stop`` where it ended itself."""
    c = _client(server)
    want = offline_result(offline, "the cat", constraints, beam_size=5, max_tokens=tokens)
    out = c.completions.create(model="tiny", prompt="the cat", max_tokens=tokens, extra_body={"constraints": constraints})
    cut = want.finish_reason in ("length", "incomplete") or len(want.token_ids) >= tokens
    assert out.choices[0].text == want.text and out.choices[0].finish_reason == ("length" if cut else "stop")
    if tokens == 2:  # two tokens cannot hold both phrases
        assert out.choices[0].finish_reason == "length" and want.finish_reason in ("length", "incomplete")


def test_logprobs_are_the_searchs_token_scores(server, offline):
    c = _client(server)
    cons = {"phrases": ["cat sat"]}  # a must-include phrase: the random model's output is not empty
    out = c.completions.create(model="tiny", prompt="a dog", max_tokens=6, logprobs=3, extra_body={"constraints": cons})
    ch = out.choices[0]
    lp = ch.logprobs
    assert "".join(lp.tokens) == ch.text and len(lp.tokens) == out.usage.completion_tokens
    # the oracle: the same output decoded offline, each token's log-probability from Decoder.score
    want = offline_result(offline, "a dog", cons, beam_size=5, max_tokens=6)
    ids = list(want.token_ids)
    assert ch.text == want.text and ids
    cum = [offline.score("a dog", ids[:k], eos=False) if k else 0.0 for k in range(len(ids) + 1)]
    assert lp.token_logprobs == pytest.approx([b - a for a, b in zip(cum, cum[1:])], abs=1e-3)
    ending = 0.0 if want.finish_reason != "eos" else want.logprob - cum[-1]  # the search's score of the ending
    assert sum(lp.token_logprobs) + ending == pytest.approx(ch.model_extra["logprob"], abs=1e-3)
    for v, alts in zip(lp.token_logprobs, lp.top_logprobs):
        assert len(alts) == 3 and max(alts.values()) >= v - 1e-5 and v <= 0
    chat = c.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "a dog"}], max_tokens=6,
                                     logprobs=True, top_logprobs=2)
    items = chat.choices[0].logprobs.content
    assert "".join(i.token for i in items) == chat.choices[0].message.content
    assert all(len(i.top_logprobs) == 2 and i.top_logprobs[0].logprob >= i.top_logprobs[1].logprob for i in items)


def test_stream_usage_chunk(server):
    c = _client(server)
    plain = c.completions.create(model="tiny", prompt="the mat", max_tokens=6)
    chunks = list(c.completions.create(model="tiny", prompt="the mat", max_tokens=6, stream=True,
                                       stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == plain.usage.completion_tokens
    assert all(ch.usage is None for ch in chunks[:-1])
    assert "".join(ch.choices[0].text for ch in chunks[:-1]) == plain.choices[0].text


def test_stop_gives_n_distinct_choices_and_counts_kept_tokens(server, offline, words_artifact):
    """Chat ``n=2, stop=["."]``: the stop string ends hypotheses inside the search, so the two
    choices are distinct outputs that end right before a ".", as the offline API returns them
    (``Decoder.generate(stop=...)``, tested against a brute force in tests/runtime), and usage
    counts the kept tokens only."""
    c = _client(server)
    cons = {"artifact": "animals"}  # the word list lets the random model write punctuation between words
    prompt = "the dog"
    want = offline_result(offline, prompt, cons, beam_size=4, max_tokens=10, n=2, artifact=words_artifact, stop=["."])
    out = c.chat.completions.create(model="tiny", messages=[{"role": "user", "content": prompt}], max_tokens=10, n=2,
                                    stop=["."], logprobs=True, extra_body={"beam_size": 4, "constraints": cons})
    texts = [ch.message.content for ch in out.choices]
    assert texts == [h.text for h in want.hypotheses] and len(set(texts)) == 2
    assert all("." not in t for t in texts)
    assert [ch.finish_reason for ch in out.choices] == ["stop", "stop"]
    assert [ch.model_extra["fstbeam_finish_reason"] for ch in out.choices] == [h.finish_reason for h in want.hypotheses]
    assert "stop" in [h.finish_reason for h in want.hypotheses]  # (the search ended some at the stop string)
    for ch, h in zip(out.choices, want.hypotheses):  # the tokens that made the kept text, no more
        items = ch.logprobs.content
        assert "".join(i.token for i in items) == ch.message.content and len(items) == len(h.token_ids)
    assert out.usage.completion_tokens == sum(len(h.token_ids) for h in want.hypotheses)
    # without the stop string the search runs on past the "."
    full = offline_result(offline, prompt, cons, beam_size=4, max_tokens=10, n=2, artifact=words_artifact)
    assert any("." in h.text for h in full.hypotheses) or [h.text for h in full.hypotheses] != texts


def test_every_search_setting_per_request_equals_offline(server, offline):
    c = _client(server)
    opts = dict(beam_size=3, max_new_tokens=8, length_reward=0, no_repeat_ngram=2, stopping="exhaustive")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [want] = offline.generate(["the dog"], None, preset="auto", **opts)
    out = c.completions.create(model="tiny", prompt="the dog", extra_body=opts)
    assert out.choices[0].text == want.text and out.choices[0].model_extra["score"] == pytest.approx(want.score, abs=1e-4)
    # the server's flags are the defaults; preset per request
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [plain] = offline.generate(["the dog"], None, preset="plain", beam_size=3, max_new_tokens=8)
    out = c.completions.create(model="tiny", prompt="the dog", max_tokens=8, extra_body={"preset": "plain", "beam_size": 3})
    assert out.choices[0].text == plain.text


@pytest.mark.parametrize("fields", [
    {"beam_size": 0}, {"beam_size": 2.5}, {"length_reward": "x"}, {"stopping": "never"},
    {"shortlist": "on"}, {"min_new_tokens": 9, "max_new_tokens": 8}, {"nbest": 4, "beam_size": 2},
    {"eos_ids": []}, {"no_repeat_ngram": -1},
])
def test_bad_settings_get_searchconfigs_message(server, fields):
    from fstbeam.errors import DecodeError
    from fstbeam.runtime.config import SearchConfig

    with pytest.raises(DecodeError) as want:
        SearchConfig(**fields)
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "x", **fields}, timeout=60)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["message"] == str(want.value) and err["param"] in fields


@pytest.mark.parametrize("field,value", [
    ("response_format", {"type": "xml"}), ("guided_grammar", "root ::= 'a'"), ("guided_decoding_backend", "outlines"),
    ("structured_outputs", {"grammar": "root ::= 'a'"}), ("temperature", 0.7), ("top_p", 0.5),
    ("logit_bias", {"5": 10}), ("tools", [{"type": "function"}]), ("best_of", 3), ("suffix", "end"),
    ("preset", "bogus"), ("batch_size", 2), ("max_new_tokens", 3),
])
def test_refused_fields_name_themselves(server, field, value):
    body = {"prompt": "x", field: value}
    if field == "max_new_tokens":
        body["max_tokens"] = 4  # the same setting twice, with two values
    r = httpx.post(server.url + "/v1/completions", json=body, timeout=60)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"].split(".")[0] in (field, "max_tokens") and field in err["message"]
    ok = httpx.post(server.url + "/v1/completions", json={"prompt": "x", "max_tokens": 2, "temperature": 0,
                                                           "top_p": 1, "seed": 7}, timeout=60)
    assert ok.status_code == 200, ok.text
