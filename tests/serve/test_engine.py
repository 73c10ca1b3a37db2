"""ServeEngine in-process on the tiny model: the queue limit (429), draining (accepted requests,
those still compiling included, finish; the HTTP guard refuses new ones) and failing what is left
at the end of the grace period (503)."""
from __future__ import annotations

import asyncio
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from serve_helpers import offline_result  # noqa: E402

from fstbeam.runtime.presets import search_config  # noqa: E402
from fstbeam.serve.config import Limits, ServeConfig  # noqa: E402
from fstbeam.serve.errors import RequestError  # noqa: E402
from fstbeam.serve.server import build_state  # noqa: E402


def Settings(beam_size: int, max_tokens: int, n: int):
    """A request's SearchConfig as the server makes it with these fields set (batch of 2)."""
    return search_config("continuation", dict(beam_size=beam_size, max_new_tokens=max_tokens, nbest=n, batch_size=2,
                                              refill=0.5))


async def _result(job, timeout=120):
    kind, value = await asyncio.wait_for(job.events.get(), timeout)
    while kind == "prefix":
        kind, value = await asyncio.wait_for(job.events.get(), timeout)
    return kind, value


def test_queue_limit_drain_and_fail(offline):
    state = build_state(ServeConfig(search={"batch_size": 2}, limits=Limits(max_queue=2)), decoder=offline)
    eng = state.engine
    s = Settings(beam_size=3, max_tokens=8, n=1)

    async def main():
        a = await eng.submit("the cat", None, s)
        b = await eng.submit("a dog", None, s)
        with pytest.raises(RequestError) as full:
            await eng.submit("the mat", None, s)  # two in flight: the queue is full
        assert full.value.status == 429
        got = [await _result(job) for job in (a, b)]  # both decoded before the oracle uses the same model
        for (kind, res), p in zip(got, ("the cat", "a dog")):
            assert kind == "done" and res.text == offline_result(offline, p, None).text
        c = await eng.submit("the mat", None, Settings(beam_size=3, max_tokens=8, n=1))  # room again
        eng.drain()  # stop accepting new requests; c, and d (accepted before, compiling then), are decoded
        assert not eng.accepting
        d = await eng.submit("a cat", None, s)
        got = [await _result(job) for job in (c, d)]  # both decoded before the oracle uses the same model
        for (kind, res), p in zip(got, ("the mat", "a cat")):
            assert kind == "done" and res.text == offline_result(offline, p, None).text
        eng.fail_remaining("the server shut down")  # the grace period is over
        with pytest.raises(RequestError) as closed:
            await eng.submit("a cat", None, s)
        assert closed.value.status == 503
        await eng.close(grace=5)
        for w in eng.workers.values():  # the decoding threads end (close waits 5 s; a busy machine may need more)
            w.thread.join(60)
            assert not w.thread.is_alive()

    asyncio.run(main())


def test_requests_left_at_the_end_of_the_grace_period_get_503(offline):
    state = build_state(ServeConfig(search={"batch_size": 2}), decoder=offline)
    eng = state.engine

    async def main():
        jobs = [await eng.submit(p, None, Settings(beam_size=8, max_tokens=100, n=1))
                for p in ["the cat", "a dog", "the mat", "a cat sat", "on a mat", "the dog ran"]]
        await eng.close(grace=0.0)  # no time at all: whatever is unfinished is failed, none dropped
        answers = [await _result(j, 30) for j in jobs]
        assert {k for k, _ in answers} <= {"done", "error"} and len(answers) == len(jobs)
        errors = [v for k, v in answers if k == "error"]
        assert errors and all(e.status == 503 and "shut down" in e.message for e in errors)

    asyncio.run(main())
