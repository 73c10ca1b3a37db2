"""``fstbeam serve`` over HTTP: the unchanged ``openai`` client and httpx against a real server
process on a tiny random model; every output is checked against offline decoding."""
from __future__ import annotations

import concurrent.futures as cf
import json
import os
import sys

import httpx
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from serve_helpers import offline_result  # noqa: E402

CASES = {
    "none": None,
    "phrases": {"phrases": ["dog", "mat"]},
    "anyof": {"phrases": [["dogs", "dog"], "cat"]},
    "avoid": {"avoid": ["cat", ["dog", "mat"]]},
    "prefix": {"prefix": "the", "sentence_case": True},
    "ordered": {"phrases": ["dog", "sat"], "ordered": True},
    "words": {"words": ["a", "cat", "dog", "the"]},
    "words+phrase": {"words": ["a", "cat", "dog", "the", "sat"], "phrases": ["sat"]},
    "artifact+phrase": {"artifact": "animals", "phrases": ["ran"]},
}


def _client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _check(choice, want, text=None):
    extra = choice.model_extra
    assert (choice.text if text is None else text) == want.text
    assert extra["satisfied"] == want.satisfied
    assert extra["phrases_met"] == list(want.phrases_met)
    assert extra["score"] == pytest.approx(want.score, abs=1e-4)


def test_models_health_and_metrics(server):
    c = _client(server)
    assert [m.id for m in c.models.list().data] == ["tiny"]
    assert httpx.get(server.url + "/health").json()["status"] == "ok"
    text = httpx.get(server.url + "/metrics").text
    for name in ("fstbeam_requests_total", "fstbeam_queue_length", "fstbeam_batch_occupancy",
                 "fstbeam_tokens_per_second", "fstbeam_compile_seconds"):
        assert name in text


@pytest.mark.parametrize("case", list(CASES))
def test_openai_completions_equal_offline_decoding(server, offline, words_artifact, case):
    body = CASES[case]
    extra = {"beam_size": 3} | ({"constraints": body} if body is not None else {})
    out = _client(server).completions.create(model="tiny", prompt="the cat", max_tokens=8, extra_body=extra)
    want = offline_result(offline, "the cat", body, artifact=words_artifact)
    [choice] = out.choices
    _check(choice, want)
    assert out.usage.completion_tokens == len(want.token_ids)
    if body and "phrases" in body:
        assert choice.model_extra["phrases"] == list(want.phrases)


def test_chat_and_streaming_give_the_same_outputs(server, offline):
    c = _client(server)
    body = {"phrases": ["dog"], "avoid": ["mat"]}
    want = offline_result(offline, "the dog", body, max_tokens=12)
    kw = dict(model="tiny", max_tokens=12, extra_body={"beam_size": 3, "constraints": body})
    chat = c.chat.completions.create(messages=[{"role": "user", "content": "the dog"}], **kw)
    _check(chat.choices[0], want, chat.choices[0].message.content)
    assert chat.choices[0].finish_reason in ("stop", "length")
    for make in (lambda: c.chat.completions.create(messages=[{"role": "user", "content": "the dog"}], stream=True, **kw),
                 lambda: c.completions.create(prompt="the dog", stream=True, **kw)):
        chunks = list(make())
        pieces = [ch.choices[0].delta.content or "" if hasattr(ch.choices[0], "delta") else ch.choices[0].text
                  for ch in chunks]
        assert "".join(pieces) == want.text
        last = chunks[-1].choices[0]
        assert last.finish_reason is not None and last.model_extra["satisfied"] == want.satisfied


def test_n_best_echo_and_stop(server, offline):
    c = _client(server)
    want = offline_result(offline, "a dog", None, beam_size=4, n=3)
    out = c.completions.create(model="tiny", prompt="a dog", max_tokens=8, n=3, echo=True, extra_body={"beam_size": 4})
    assert [ch.text for ch in out.choices] == ["a dog" + h.text for h in want.hypotheses]
    assert [ch.index for ch in out.choices] == list(range(len(want.hypotheses)))
    text = want.hypotheses[0].text
    if len(text) > 2:  # stop at the text's second character: the search ends its outputs before it, as offline
        stop = text[1:3]
        cut = c.completions.create(model="tiny", prompt="a dog", max_tokens=8, stop=[stop], extra_body={"beam_size": 4})
        stopped = offline_result(offline, "a dog", None, beam_size=4, stop=[stop])
        assert cut.choices[0].text == stopped.text and stop not in stopped.text
        assert cut.choices[0].finish_reason == ("stop" if stopped.finish_reason in ("stop", "eos") else "length")


def test_concurrent_requests_share_batches_and_equal_offline(server, offline, words_artifact):
    def steps():
        for line in httpx.get(server.url + "/metrics").text.splitlines():
            if line.startswith("fstbeam_search_steps_total"):
                return float(line.split()[1])
        return 0.0

    prompts = ["the cat", "a dog", "the mat", "a cat sat", "the dog ran", "on a mat"]
    jobs = [(p, case) for p in prompts for case in ("none", "phrases", "anyof", "words")]

    def one(job):
        p, case = job
        body = {"prompt": p, "max_tokens": 8, "beam_size": 3}
        if CASES[case] is not None:
            body["constraints"] = CASES[case]
        r = httpx.post(server.url + "/v1/completions", json=body, timeout=120)
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]

    before = steps()
    with cf.ThreadPoolExecutor(12) as pool:
        got = list(pool.map(one, jobs))
    used = steps() - before
    total_alone = 0
    for (p, case), choice in zip(jobs, got):
        want = offline_result(offline, p, CASES[case], artifact=words_artifact)
        assert choice["text"] == want.text and choice["satisfied"] == want.satisfied, (p, case)
        assert choice["score"] == pytest.approx(want.score, abs=1e-4)
        total_alone += want.steps
    assert used < total_alone  # requests ran together, not one after another


def test_stored_constraints_are_reused_by_id(server, offline):
    body = {"words": ["a", "cat", "the", "mat"], "avoid": ["mat"]}
    r = httpx.post(server.url + "/v1/constraints", json=body)
    assert r.status_code == 200, r.text
    ident = r.json()["id"]
    assert httpx.post(server.url + "/v1/constraints", json=body).json()["id"] == ident  # by content
    listed = [d["id"] for d in httpx.get(server.url + "/v1/constraints").json()["data"]]
    assert ident not in listed and "animals" in listed  # POSTed ids are their clients' own; start-up ones are listed
    out = httpx.post(server.url + "/v1/completions", json={"prompt": "the cat", "max_tokens": 8, "beam_size": 3,
                                                            "constraints": {"artifact": ident}}).json()
    want = offline_result(offline, "the cat", body)
    assert out["choices"][0]["text"] == want.text


BAD = [  # (body or raw bytes, expected status, the field the error must name)
    (b"{not json", 400, "body"),
    ({"max_tokens": 4}, 400, "prompt"),
    ({"prompt": "x", "max_tokens": "many"}, 400, "max_tokens"),
    ({"prompt": "x", "max_tokens": 0}, 400, "max_tokens"),
    ({"prompt": "x", "constraint": {"phrases": ["a"]}}, 400, "constraint"),
    ({"prompt": "x", "constraints": {"phrases": {"dog": 1}}}, 400, "constraints.phrases"),
    ({"prompt": "x", "constraints": {"phrases": [["dog", 3]]}}, 400, "constraints.phrases"),
    ({"prompt": "x", "constraints": {"phrases": [[]]}}, 400, "constraints.phrases"),
    ({"prompt": "x", "constraints": {"prefix": ""}}, 400, "constraints.prefix"),
    ({"prompt": "x", "constraints": {"ordered": "yes"}}, 400, "constraints.ordered"),
    ({"prompt": "x", "constraints": {"colour": "red"}}, 400, "constraints.colour"),
    ({"prompt": "x", "constraints": {"phrases": [f"w{i}" for i in range(40)]}}, 400, "constraints.phrases"),
    ({"prompt": "x", "constraints": {"phrases": ["w" * 300]}}, 400, "constraints.phrases"),
    ({"prompt": "x", "constraints": {"cefr": "Z9"}}, 400, "constraints.cefr"),
    ({"prompt": "x", "constraints": {"artifact": "nope"}}, 404, "constraints.artifact"),
    ({"prompt": "x", "constraints": {"words": []}}, 400, "constraints.words"),
    ({"prompt": "x", "constraints": {"grammar": "cefr", "grammar_params": {"names": "/etc/passwd"}}}, 400,
     "constraints.grammar_params"),
    ({"prompt": "x", "n": 4, "beam_size": 2}, 400, "n"),
    ({"prompt": "x", "beam_size": 1000}, 400, "beam_size"),
    ({"prompt": "x", "model": "gpt-4"}, 404, "model"),
    ({"prompt": "   "}, 400, "prompt"),
    ({"prompt": "x" * 30000}, 413, "body"),
    ({"prompt": "the cat " * 200, "max_tokens": 8}, 400, "prompt"),  # over the model's 128 positions
]


def test_a_flood_of_bad_requests_does_not_disturb_valid_ones(server, offline):
    valid = [("the cat", "phrases"), ("a dog", "anyof"), ("the mat", "none"), ("a cat sat", "avoid")] * 3

    def good(job):
        p, case = job
        r = httpx.post(server.url + "/v1/completions", timeout=120,
                       json={"prompt": p, "max_tokens": 8, "beam_size": 3, "constraints": CASES[case]})
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]["text"]

    def bad(item):
        body, status, field = item
        kw = {"content": body, "headers": {"content-type": "application/json"}} if isinstance(body, bytes) else {"json": body}
        r = httpx.post(server.url + "/v1/completions", timeout=60, **kw)
        return r.status_code, r.json(), status, field

    with cf.ThreadPoolExecutor(16) as pool:
        goods = [pool.submit(good, j) for j in valid]
        bads = [pool.submit(bad, b) for b in BAD * 3]
        for f in bads:
            code, err, status, field = f.result()
            assert code == status, (field, err)
            assert err["error"]["param"] == field, err
            assert err["error"]["message"]
        for job, f in zip(valid, goods):
            assert f.result() == offline_result(offline, job[0], CASES[job[1]]).text
    assert httpx.get(server.url + "/health").json()["status"] == "ok"


def test_one_log_line_per_request(server):
    before = sum("POST /v1/completions" in ln for ln in server.lines)
    for _ in range(3):
        httpx.post(server.url + "/v1/completions", json={"prompt": "the cat", "max_tokens": 4, "user": "u-1"})
    assert server.wait_log("user=u-1")
    import time

    time.sleep(0.2)
    assert sum("POST /v1/completions" in ln for ln in server.lines) == before + 3


def test_a_disconnected_stream_leaves_the_batch(server):
    def cancelled():
        for line in httpx.get(server.url + "/metrics").text.splitlines():
            if line.startswith("fstbeam_requests_cancelled_total"):
                return float(line.split()[1])

    before = cancelled()
    body = {"prompt": "the cat", "max_tokens": 120, "beam_size": 16, "stream": True,
            "constraints": {"avoid": ["<eos>"], "phrases": ["dog ran", "mat"], "ordered": True}}
    with httpx.Client(timeout=30) as c:
        with c.stream("POST", server.url + "/v1/completions", json=body) as r:
            assert r.status_code == 200
            next(r.iter_lines())  # the first event arrived: the request is in a batch; now hang up
    import time

    end = time.monotonic() + 20
    while time.monotonic() < end and httpx.get(server.url + "/health").json()["in_flight"]:
        time.sleep(0.05)
    assert httpx.get(server.url + "/health").json()["in_flight"] == 0
    assert cancelled() == before + 1  # it left unfinished (a 120-token beam of 16 takes longer than this)
    assert json.loads(httpx.get(server.url + "/v1/models").text)["data"]


def test_a_disconnected_plain_request_leaves_the_batch(server):
    """A non-streaming request whose client hangs up (here: its read timeout) is cancelled: the
    server watches for the disconnect while the request decodes."""
    def cancelled():
        for line in httpx.get(server.url + "/metrics").text.splitlines():
            if line.startswith("fstbeam_requests_cancelled_total"):
                return float(line.split()[1])

    before = cancelled()
    # 12 batches of 4, each needing at least the 17-word phrase's tokens: seconds (a short
    # constraint lets the search stop after a few tokens, under the read timeout)
    body = {"prompt": ["the cat"] * 48, "max_tokens": 120, "beam_size": 16,
            "constraints": {"phrases": ["the dog ran on the mat and the cat sat on the mat and a dog ran and the cat sat"]}}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(server.url + "/v1/completions", json=body, timeout=httpx.Timeout(30, read=0.5))
    import time

    end = time.monotonic() + 20
    while time.monotonic() < end and httpx.get(server.url + "/health").json()["in_flight"]:
        time.sleep(0.05)
    assert httpx.get(server.url + "/health").json()["in_flight"] == 0
    assert cancelled() > before  # the unfinished prompts left their batches
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "the cat", "max_tokens": 4}, timeout=60)
    assert r.status_code == 200 and r.json()["choices"][0]["text"] is not None
