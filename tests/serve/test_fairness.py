"""One client's requests at the documented per-request limits do not hold back another client's
small request: 16 concurrent requests, each with 16 must-include phrases and 16 avoid phrases of
200 characters (``Limits.max_phrases`` texts of ``Limits.max_phrase_chars``, docs/serve.md), and
a one-phrase request sent while they compile and decode is answered before any of them (while
they compile), while most of them still run (while they decode), and in at most half the time the
fastest of them takes. Bounded: every request has a client timeout, and the heavy ones are awaited
before the test ends."""
from __future__ import annotations

import os
import random
import sys
import threading
import time

import httpx
import pytest

from fstbeam._startup import LOW_PRIORITY_NICE
from fstbeam.serve.config import Limits

WORDS = ["a", "cat", "dog", "the", "sat", "on", "mat", "ran", "and"]


def _text(rng: random.Random, chars: int) -> str:
    """A phrase of exactly ``chars`` characters from the tokenizer's words (each request's own)."""
    out = ""
    while len(out) < chars:
        out += ("" if not out else " ") + rng.choice(WORDS)
    text = out[:chars]
    return text if not text.endswith(" ") else text[:-1] + "a"


def _heavy_body(seed: int) -> dict:
    lim = Limits()
    rng = random.Random(seed)
    half = lim.max_phrases // 2
    return {"model": "tiny", "prompt": "the cat", "max_tokens": 8,
            "constraints": {"phrases": [_text(rng, lim.max_phrase_chars) for _ in range(half)],
                            "avoid": [_text(rng, lim.max_phrase_chars) for _ in range(lim.max_phrases - half)]}}


def _timed_post(url: str, body: dict, timeout: float) -> tuple[float, httpx.Response]:
    t0 = time.monotonic()
    r = httpx.post(url + "/v1/completions", json=body, timeout=timeout)
    return time.monotonic() - t0, r


def test_requests_at_the_limits_leave_a_small_request_answered(server):
    small = {"model": "tiny", "prompt": "a dog", "max_tokens": 8, "constraints": {"phrases": ["mat"]}}
    _timed_post(server.url, small, 60)  # warm: the phrase index, the kernels, the worker of these settings
    alone, r = _timed_post(server.url, dict(small, constraints={"phrases": ["cat"]}), 60)
    assert r.status_code == 200, r.text
    results: list = []

    def heavy(seed: int) -> None:
        results.append(_timed_post(server.url, _heavy_body(seed), 120))

    threads = [threading.Thread(target=heavy, args=(s,), daemon=True) for s in range(16)]
    for t in threads:
        t.start()
    time.sleep(0.2)  # the heavy requests are compiling (or decoding) now
    # (counted when the small request is sent: on a quiet machine the fastest heavy request ends
    # in 0.7 s, so a count taken after the small one's answer raced its own head start)
    still = sum(t.is_alive() for t in threads)
    busy, r = _timed_post(server.url, dict(small, constraints={"phrases": ["ran"]}), 60)  # while they compile
    t_end = time.monotonic() + 150
    while not results and time.monotonic() < t_end:  # the first heavy ones are answered: the rest decode now
        time.sleep(0.05)
    busy2, r2 = _timed_post(server.url, dict(small, constraints={"phrases": ["sat"]}), 60)
    still2 = sum(t.is_alive() for t in threads)
    print(f"small request: {alone:.2f} s alone, {busy:.2f} s among 16 at the limits ({still} still running), "
          f"{busy2:.2f} s once they decode ({still2} still running)")
    for t in threads:
        t.join(max(1.0, t_end - time.monotonic()))
    heavy_s = sorted(took for took, _ in results)
    print("heavy requests: " + " ".join(f"{t:.2f}" for t in heavy_s) + " s")
    assert r.status_code == 200 and r2.status_code == 200, (r.text, r2.text)
    assert len(results) == 16 and all(resp.status_code == 200 for _, resp in results), \
        [resp.text[:200] for _, resp in results if resp.status_code != 200]
    # Not held back: sent while all 16 run (while they compile), and again while most of them
    # still run (while they decode); answered in a fraction of the time the fastest of them takes.
    # Measured against the heavy requests of the same run, not in seconds: the step costs of both
    # scale alike with the machine's speed and load (a shared 2-core CI machine).
    assert still == 16 and still2 >= 8, (still, still2)
    for took in (busy, busy2):
        assert took <= 0.5 * heavy_s[0], \
            f"the small request took {took:.2f} s among 16 at the limits ({alone:.2f} s alone), the fastest of them {heavy_s[0]:.2f} s"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
def test_large_compile_threads_run_below_decoding(server):
    """The compile pool's thread (started at ready by the phrase-index warm-up) runs at the lower
    priority; the process's main thread keeps the usual one."""
    pid = server.proc.pid
    nice = {}
    for _ in range(100):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                nice[int(tid)] = int(fh.read().rsplit(")", 1)[1].split()[16])  # field 19: nice
        if LOW_PRIORITY_NICE in nice.values():
            break
        time.sleep(0.1)
    assert nice[pid] == 0, nice
    assert LOW_PRIORITY_NICE in nice.values(), nice
