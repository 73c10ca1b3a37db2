"""SIGTERM under load, and the API key: a server of its own (it is stopped by the test)."""
from __future__ import annotations

import concurrent.futures as cf
import os
import sys
import time

import httpx

sys.path.insert(0, os.path.dirname(__file__))
from serve_helpers import Server, offline_result  # noqa: E402


def test_sigterm_under_load_answers_every_accepted_request(model_dir, offline):
    s = Server(["--model", model_dir, "--device", "cpu", "--batch-size", "2", "--api-key", "s3cret", "--grace", "30"])
    auth = {"Authorization": "Bearer s3cret"}
    try:
        r = httpx.post(s.url + "/v1/completions", json={"prompt": "the cat", "max_tokens": 4})
        assert r.status_code == 401 and r.json()["error"]["param"] == "authorization"
        assert httpx.post(s.url + "/v1/completions", headers={"Authorization": "Bearer wrong"},
                          json={"prompt": "the cat", "max_tokens": 4}).status_code == 401
        assert httpx.get(s.url + "/health").status_code == 200  # health needs no key

        prompts = ["the cat", "a dog", "the mat", "a cat sat", "the dog ran", "on a mat", "the cat sat", "a mat"] * 2
        body = {"phrases": ["dog"]}
        answers: list = []

        def one(i):
            p = prompts[i]
            try:
                r = httpx.post(s.url + "/v1/completions", headers=auth, timeout=120,
                               json={"prompt": p, "max_tokens": 24, "beam_size": 4, "constraints": body})
                answers.append((p, r.status_code, r.json()))
            except httpx.TransportError as exc:  # not accepted: the server had stopped listening
                answers.append((p, None, repr(exc)))

        with cf.ThreadPoolExecutor(len(prompts)) as pool:
            futures = [pool.submit(one, i) for i in range(len(prompts))]
            end = time.monotonic() + 60
            while time.monotonic() < end and httpx.get(s.url + "/health").json()["in_flight"] < 6:
                time.sleep(0.02)
            s.proc.send_signal(15)  # SIGTERM while requests are in flight
            for f in futures:
                f.result(timeout=120)
        code = s.proc.wait(60)
    finally:
        s.stop()
    assert code == 0
    assert len(answers) == len(prompts)
    ok = [(p, j) for p, status, j in answers if status == 200]
    assert len(ok) >= 6, answers  # the 6+ in flight at SIGTERM were finished, not dropped
    for _p, status, j in answers:
        assert status in (200, 503, None), (status, j)
        if status == 503:
            assert j["error"]["message"]
    for p, j in ok:
        assert j["choices"][0]["text"] == offline_result(offline, p, body, beam_size=4, max_tokens=24).text
    assert s.wait_log("draining")
    try:  # nothing is left listening
        httpx.get(s.url + "/health", timeout=2)
        raise AssertionError("the server still answers after SIGTERM")
    except httpx.TransportError:
        pass
