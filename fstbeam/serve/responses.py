"""OpenAI-shaped answers: completion and chat objects, their stream chunks, the wait for a job's
events (with the request's deadline and its client's disconnect), and ``logprobs``: the returned
tokens' log-probabilities under the model (`fstbeam.runtime.token_scores`: one forward pass per
choice, under the model lock, off the event loop), in the completions shape (``tokens``,
``token_logprobs``, ``top_logprobs``, ``text_offset``) or the chat shape (``content``)."""
from __future__ import annotations

import asyncio
import time
import uuid

from .errors import RequestError
from .streaming import TextStream, sse

__all__ = ["Answer", "ClientGone", "logprobs_wanted", "fill_logprobs", "client_gone", "next_event", "stop_watching",
           "wait_result", "stream_events"]

_FINISH = {"eos": "stop", "stop": "stop", "length": "length", "incomplete": "length", "error": "stop"}


class ClientGone(Exception):
    """The client disconnected: its requests left their batches."""


async def next_event(job, timeout: float, gone: asyncio.Future | None = None):
    """The job's next event, or None after ``timeout`` seconds or once ``gone`` is done (the
    pending get is kept)."""
    getter = getattr(job, "_getter", None)
    if getter is None:
        getter = job._getter = asyncio.ensure_future(job.events.get())
    done, _ = await asyncio.wait({getter} if gone is None else {getter, gone}, timeout=timeout,
                                 return_when=asyncio.FIRST_COMPLETED)
    if getter not in done:
        return None
    job._getter = None
    return getter.result()


def client_gone(request) -> asyncio.Future:
    """A task that ends when the client disconnects (one per request; cancelled by
    :func:`stop_watching`). The body is read by then, so the next ASGI message is the
    disconnect: a request leaves its batch at once, not at the next poll."""
    task = getattr(request.state, "gone", None)
    if task is None:
        async def watch():
            while (await request.receive())["type"] != "http.disconnect":
                pass

        task = request.state.gone = asyncio.ensure_future(watch())
    return task


def stop_watching(request) -> None:
    task = getattr(request.state, "gone", None)
    if task is not None:
        task.cancel()


def drop(job) -> None:
    job.cancel()
    getter = getattr(job, "_getter", None)
    if getter is not None:
        getter.cancel()


async def wait_result(job, request, deadline: float):
    """The job's GenerationResult; 504 past ``deadline``; ClientGone as soon as the client left."""
    gone = client_gone(request)
    while True:
        ev = await next_event(job, max(0.01, deadline - time.monotonic()), gone)
        if ev is None:
            if gone.done():
                drop(job)
                raise ClientGone()
            if time.monotonic() >= deadline:
                drop(job)
                raise RequestError(504, "the request did not finish within the server's time limit (--timeout): lower "
                                        "max_tokens or beam_size, or retry when the server is less busy")
            continue
        kind, value = ev
        if kind == "error":
            raise value
        if kind == "done":
            return value


class Answer:
    """Builds the response objects of one request (``chat`` or completion).

    ``n`` choices per prompt: the search's n best outputs; with ``stop`` strings (which end
    hypotheses inside the search, `fstbeam.runtime.search.stops`) the n best *distinct* texts
    (the search then keeps its whole beam's outputs to choose from), and usage counts only the
    tokens a kept text needed (the outputs' token ids are those). ``token_bytes``: the
    vocabulary's."""

    def __init__(self, chat: bool, model: str, n: int, stop, echo_prompts=None, token_bytes=None,
                 max_tokens: int | None = None):
        self.chat, self.model, self.n, self.max_tokens = chat, model, n, max_tokens
        self.stop = tuple(stop or ())
        self.echo = echo_prompts  # completion prompts to prepend (echo=true)
        self.token_bytes = token_bytes
        self.id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        self.created = int(time.time())
        self.logprobs: dict = {}  # (prompt, choice) -> the choice's logprobs object (when asked for)

    def pick(self, res) -> list[tuple[object, str, str, int]]:
        """(hypothesis, text, OpenAI finish_reason, tokens kept) of a result's choices: the n best
        distinct texts (a stop string ended some in the search, cut before it: their tokens are
        the kept ones)."""
        out, seen = [], set()
        for hyp in res.hypotheses:
            if self.stop and hyp.text in seen:
                continue
            seen.add(hyp.text)
            # an output that used every token it may have was cut by the limit, even where the
            # search ranks it as ended (end_in_top_k: an ending among the next best tokens)
            full = self.max_tokens is not None and len(hyp.token_ids) >= self.max_tokens and hyp.finish_reason != "stop"
            out.append((hyp, hyp.text, "length" if full else _FINISH.get(hyp.finish_reason, "stop"), len(hyp.token_ids)))
            if len(out) == self.n:
                break
        return out

    def _extras(self, res, hyp) -> dict:
        return {"satisfied": hyp.satisfied, "phrases_met": list(hyp.phrases_met), "phrases": list(res.phrases),
                "score": hyp.score, "logprob": hyp.logprob, "fstbeam_finish_reason": hyp.finish_reason,
                "warnings": list(res.warnings)}

    def choices(self, results) -> list[dict]:
        out = []
        for p, res in enumerate(results):
            for j, (hyp, text, fr, _) in enumerate(self.pick(res)):
                c = {"index": p * self.n + j, "finish_reason": fr, "logprobs": self.logprobs.get((p, j)),
                     **self._extras(res, hyp)}
                if self.chat:
                    c["message"] = {"role": "assistant", "content": text}
                else:
                    c["text"] = (self.echo[p] if self.echo else "") + text
                out.append(c)
        return out

    def usage(self, results, prompt_tokens: int) -> dict:
        done = sum(kept for r in results for *_, kept in self.pick(r))
        return {"prompt_tokens": prompt_tokens, "completion_tokens": done, "total_tokens": prompt_tokens + done}

    def body(self, results, prompt_tokens: int) -> dict:
        return {"id": self.id, "object": "chat.completion" if self.chat else "text_completion", "created": self.created,
                "model": self.model, "choices": self.choices(results), "usage": self.usage(results, prompt_tokens)}

    def chunk(self, index: int, text: str | None, finish: str | None = None, extras: dict | None = None,
              first: bool = False) -> str:
        if self.chat:
            delta = {"role": "assistant"} if first else {}
            if text is not None:
                delta["content"] = text
            c = {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
        else:
            c = {"index": index, "text": text or "", "finish_reason": finish, "logprobs": None}
        c.update(extras or {})
        return sse({"id": self.id, "object": "chat.completion.chunk" if self.chat else "text_completion",
                    "created": self.created, "model": self.model, "choices": [c]})

    def usage_chunk(self, usage: dict) -> str:
        """``stream_options.include_usage``: the last chunk, with no choices and the usage."""
        return sse({"id": self.id, "object": "chat.completion.chunk" if self.chat else "text_completion",
                    "created": self.created, "model": self.model, "choices": [], "usage": usage})


async def stream_events(answer: Answer, jobs, token_bytes, request, deadline: float, include_usage: bool = False,
                        prompt_tokens: int = 0):
    """Server-sent events of a streaming request: each prompt's shared prefix as it grows (choice
    ``p * n``; with ``n > 1`` the other choices come whole at the end, as fewer than ``n``
    outputs may finish), then the rest of every choice, then ``[DONE]``. Leaving early (client
    gone, timeout) cancels the jobs."""
    n = answer.n
    streams = {p: TextStream(token_bytes, answer.stop) for p in range(len(jobs))}
    pending = dict(enumerate(jobs))
    finished: list = []
    try:
        for p in range(len(jobs)):
            for j in range(n):
                yield answer.chunk(p * n + j, answer.echo[p] if answer.echo else ("" if answer.chat else None), first=True)
        while pending:
            ev = await _any_event(pending, max(0.01, min(0.5, deadline - time.monotonic())))
            if ev is None:
                if await request.is_disconnected():
                    raise ClientGone()
                if time.monotonic() >= deadline:
                    yield sse(RequestError(504, "the request did not finish within the server's time limit").body())
                    break
                continue
            p, (kind, value) = ev
            if kind == "prefix":
                delta = streams[p].feed(value)
                if delta:
                    yield answer.chunk(p * n, delta)
                continue
            del pending[p]
            if kind == "error":
                yield sse(value.body())
                continue
            finished.append(value)
            for j, (hyp, text, fr, _) in enumerate(answer.pick(value)):
                rest = streams[p].finish(text) if j == 0 else text
                yield answer.chunk(p * n + j, rest, fr, answer._extras(value, hyp))
        if include_usage:
            yield answer.usage_chunk(answer.usage(finished, prompt_tokens))
        yield sse("[DONE]")
    finally:
        for job in pending.values():
            drop(job)


async def _any_event(pending: dict, timeout: float):
    tasks = {}
    for p, job in pending.items():
        if getattr(job, "_getter", None) is None:
            job._getter = asyncio.ensure_future(job.events.get())
        tasks[job._getter] = p
    done, _ = await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if not done:
        return None
    t = next(iter(done))
    p = tasks[t]
    pending[p]._getter = None
    return p, t.result()


# ---- logprobs ---------------------------------------------------------------------------------
MAX_COMPLETION_TOP = 5
MAX_CHAT_TOP = 20


def logprobs_wanted(body, chat: bool) -> int | None:
    """The number of alternatives per token a request asks for (None: no logprobs)."""
    if chat:
        if body.top_logprobs is not None and not body.logprobs:
            raise RequestError(400, "top_logprobs needs logprobs: true", "top_logprobs")
        if body.logprobs not in (None, True, False):
            raise RequestError(400, "logprobs of a chat request is true or false (top_logprobs: how many "
                                    "alternatives)", "logprobs")
        top = body.top_logprobs or 0 if body.logprobs else None
    else:
        if body.top_logprobs is not None:
            raise RequestError(400, "top_logprobs belongs to chat requests: a completion asks with logprobs: N "
                                    f"(0..{MAX_COMPLETION_TOP})", "top_logprobs")
        v = body.logprobs
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_COMPLETION_TOP):
            raise RequestError(400, f"logprobs of a completion is an integer 0..{MAX_COMPLETION_TOP} (the "
                                    "alternatives per token)", "logprobs")
        top = v
    if top is not None and body.stream:
        raise RequestError(400, "logprobs with stream is not supported: a streamed output is sent before its "
                                "tokens are final; use stream: false", "logprobs")
    return top


def _text(tb: bytes) -> str:
    return tb.decode("utf-8", "replace")


async def fill_logprobs(answer, state, prompts, results, top: int) -> None:
    """Put each choice's logprobs object in ``answer.logprobs`` (by (prompt, choice))."""
    from ..runtime.token_scores import token_logprobs

    dec, tb = state.decoder, state.decoder.vocab.token_bytes
    loop = asyncio.get_running_loop()

    def score(prompt, ids):
        with state.engine.model_lock:
            return token_logprobs(dec, prompt, ids, top)

    for p, res in enumerate(results):
        for j, (hyp, _text_kept, _fr, kept) in enumerate(answer.pick(res)):
            ids = list(hyp.token_ids[:kept])
            scores = await loop.run_in_executor(None, score, prompts[p], ids)
            answer.logprobs[(p, j)] = _chat(ids, scores, tb) if answer.chat else _completion(ids, scores, tb)


def _completion(ids, scores, tb) -> dict:
    tokens, offsets, at = [], [], 0
    for t in ids:
        tokens.append(_text(tb[t] or b""))
        offsets.append(at)
        at += len(tokens[-1])
    return {"tokens": tokens, "token_logprobs": [lp for lp, _ in scores],
            "top_logprobs": [{_text(tb[i] or b""): v for i, v in alts} for _, alts in scores], "text_offset": offsets}


def _chat(ids, scores, tb) -> dict:
    def item(i, v):
        b = tb[i] or b""
        return {"token": _text(b), "logprob": v, "bytes": list(b)}

    return {"content": [dict(item(t, lp), top_logprobs=[item(i, v) for i, v in alts]) for t, (lp, alts) in zip(ids, scores)],
            "refusal": None}
