"""OpenAI's ``logprobs`` for the returned choices: the tokens' log-probabilities under the model
(`fstbeam.runtime.token_scores`: one forward pass per choice, under the model lock, off the
event loop), in the completions shape (``tokens``, ``token_logprobs``, ``top_logprobs``,
``text_offset``) or the chat shape (``content``: token, logprob, bytes, top_logprobs)."""
from __future__ import annotations

import asyncio

from .errors import RequestError

__all__ = ["wanted", "fill"]

MAX_COMPLETION_TOP = 5
MAX_CHAT_TOP = 20


def wanted(body, chat: bool) -> int | None:
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


async def fill(answer, state, prompts, results, top: int) -> None:
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
