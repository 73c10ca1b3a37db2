"""``fstbeam serve`` with the real default model (Gemma 3 270M): the unchanged openai client gets
CEFR-constrained completions and chat answers, equal to offline decoding with the same settings."""
from __future__ import annotations

import os
import sys
import warnings

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from serve_helpers import Server  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def default_server():
    s = Server(["--format", "qa", "--stop-at-newline", "--warm-cefr", "A1", "--batch-size", "4"], timeout=600)
    yield s
    assert s.stop() == 0


def test_a1_answers_over_http_equal_offline(default_server):
    from openai import OpenAI

    from fstbeam import Decoder, compile_constraints, with_request
    from fstbeam.runtime.defaults import generate_defaults
    from fstbeam.runtime.templates import prompt_format

    client = OpenAI(base_url=default_server.url + "/v1", api_key="unused", max_retries=0, timeout=600)
    q = "What do you drink in the morning?"
    body = {"cefr": "A1", "phrases": [["tea", "coffee", "milk"]]}
    out = client.completions.create(model="fstbeam-default", prompt=q, max_tokens=20,
                                    extra_body={"beam_size": 4, "constraints": body})
    chat = client.chat.completions.create(model="fstbeam-default", messages=[{"role": "user", "content": q}],
                                          max_tokens=20, stream=True, extra_body={"beam_size": 4, "constraints": body})
    streamed = "".join(ch.choices[0].delta.content or "" for ch in chat)

    dec = Decoder(prompt_format=prompt_format("qa"))
    from fstbeam import AnyOf

    cc = with_request(compile_constraints(cefr="A1", tokenizer=dec.vocab, leading_space=True),
                      phrases=[AnyOf("tea", "coffee", "milk")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [want] = dec.generate([q], cc, beam_size=4, max_new_tokens=20, stop_at="line", batch_size=4,
                              **generate_defaults(qa=True))
    choice = out.choices[0]
    assert choice.text == want.text and streamed == want.text
    assert choice.model_extra["satisfied"] is want.satisfied is True
    assert choice.model_extra["phrases_met"] == [True]
    assert any(w in choice.text for w in ("tea", "coffee", "milk"))
