"""The HTTP routes (FastAPI): OpenAI-compatible completions and chat, models, stored
constraints, health and metrics; plus the body-size limit, the API key and one log line per
request (``fstbeam.serve`` logger)."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .errors import RequestError, error_body
from .guard import Guard
from .options import constraints_with_structured, refuse_unsupported, request_config
from .responses import Answer, ClientGone, fill_logprobs, logprobs_wanted, stop_watching, stream_events, wait_result
from .schemas import ChatBody, CompletionBody, param_of

__all__ = ["create_app"]

log = logging.getLogger("fstbeam.serve")


def create_app(state) -> FastAPI:
    """The app over a started :class:`~.server.ServerState` (decoder, engine, store, metrics)."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await state.engine.close(state.config.grace_s)

    app = FastAPI(title="fstbeam", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.fstbeam = state
    _errors(app)
    app.add_middleware(Guard, state=state)

    @app.get("/health")
    async def health():
        eng = state.engine
        return {"status": "ok" if eng.accepting else "draining", "model": state.config.model_name,
                "in_flight": max(state.http_in_flight, eng.in_flight())}

    @app.get("/metrics")
    async def metrics():
        from prometheus_client import CONTENT_TYPE_LATEST

        state.engine.update_gauges()
        return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": state.config.model_name, "object": "model", "created": state.started,
                                            "owned_by": "fstbeam"}]}

    @app.get("/v1/models/{model_id:path}")
    async def model(model_id: str):
        if model_id != state.config.model_name:
            raise RequestError(404, f"model {model_id!r} is not served here: this server serves "
                                    f"{state.config.model_name!r}", "model")
        return {"id": model_id, "object": "model", "created": state.started, "owned_by": "fstbeam"}

    @app.post("/v1/completions")
    async def completions(body: CompletionBody, request: Request):
        prompts = [body.prompt] if isinstance(body.prompt, str) else list(body.prompt)
        return await _decode(state, request, body, prompts, chat=False)

    @app.post("/v1/chat/completions")
    async def chat(body: ChatBody, request: Request):
        return await _decode(state, request, body, [_chat_prompt(state.decoder, body.messages)], chat=True)

    @app.post("/v1/constraints")
    async def store_constraints(request: Request):
        body = await _json(request)
        if not body or not isinstance(body, dict):
            raise RequestError(400, "give the constraints object as the body, e.g. {\"cefr\": \"A1\"}", "body")
        cc = await state.engine.compile(body)
        if cc is None:
            raise RequestError(400, "the constraints object constrains nothing", "body")
        from .constraints import canonical_key

        ident = await state.engine.run_in_compiler(state.store.add, state.store.content_id(canonical_key(body)), cc)
        return {"id": ident, "object": "constraints", "phrases": [str(getattr(p, "text", p)) for p in cc.phrases],
                "summary": _jsonable(cc.summary())}

    @app.get("/v1/constraints")
    async def list_constraints():
        # the artifacts loaded at start; POSTed ones are their clients' own (content ids), not listed
        return {"object": "list", "data": [{"id": k, "object": "constraints"} for k in sorted(state.store.pinned)]}

    @app.delete("/v1/constraints/{ident}")
    async def delete_constraints(ident: str):
        state.store.delete(ident)
        return {"id": ident, "object": "constraints", "deleted": True}

    return app


async def _json(request: Request):
    import json

    raw = await request.body()
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"the body is not valid JSON ({exc})", "body") from None


def _jsonable(d: dict) -> dict:
    return {k: v if isinstance(v, (str, int, float, bool, type(None), list)) else str(v) for k, v in d.items()}


def _chat_prompt(decoder, messages):
    """Token ids from the tokenizer's chat template (all turns); a base model without one (the
    default Gemma 3 270M) continues the last user message, in the server's prompt format."""
    tok = decoder.tokenizer
    if getattr(tok, "chat_template", None):
        ids = tok.apply_chat_template([{"role": m.role, "content": m.text()} for m in messages],
                                      add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return [int(i) for i in ids]
    users = [m.text() for m in messages if m.role == "user"]
    if not users or not users[-1].strip():
        raise RequestError(400, "messages must end with a non-empty user message (this model has no chat template: "
                                "it continues the last user message)", "messages")
    return users[-1]


def _search_config(state, body):
    """The request's SearchConfig (404 for another model; 400 for a field beam search refuses)."""
    cfg = state.config
    if body.model is not None and body.model != cfg.model_name:
        raise RequestError(404, f"model {body.model!r} is not served here: use {cfg.model_name!r} (GET /v1/models)",
                           "model")
    refuse_unsupported(body)
    return request_config(body, cfg, state.decoder.preset)


def _include_usage(body) -> bool:
    opts = body.stream_options
    if opts is None:
        return False
    if not body.stream:
        raise RequestError(400, "stream_options applies to streamed requests: set stream: true or leave it out",
                           "stream_options")
    unknown = sorted(set(opts) - {"include_usage"})
    if unknown:
        raise RequestError(400, f"unknown stream_options field {unknown[0]!r}: the server takes include_usage",
                           f"stream_options.{unknown[0]}")
    if not isinstance(opts.get("include_usage", False), bool):
        raise RequestError(400, "stream_options.include_usage is true or false", "stream_options.include_usage")
    return bool(opts.get("include_usage"))


async def _decode(state, request: Request, body, prompts, *, chat: bool):
    wanted = _search_config(state, body)
    top = logprobs_wanted(body, chat)
    include_usage = _include_usage(body)
    # with stop strings (ended in the search), the n best distinct texts of the whole beam's outputs
    search = dataclasses.replace(wanted, nbest=wanted.beam_size) if wanted.stop else wanted
    t0 = time.monotonic()
    deadline = t0 + state.config.limits.timeout_s
    try:  # the compile counts against the request's time limit too
        constraints = constraints_with_structured(body)  # response_format etc. as constraint keys
        cc = await asyncio.wait_for(state.engine.compile(constraints), max(0.01, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        raise RequestError(504, "compiling the constraints did not finish within the server's time limit (--timeout): "
                                "store them once with POST /v1/constraints and refer to the artifact", "constraints") from None
    jobs = []
    try:
        for p in prompts:
            jobs.append(await state.engine.submit(p, cc, search, stream=body.stream))
    except RequestError as exc:
        for j in jobs:
            j.cancel()
        if chat and exc.param == "prompt":
            exc.param = "messages"
        raise
    request.state.info = {"prompts": len(prompts), "beam": search.beam_size, "user": body.user,
                          "constrained": cc is not None}
    answer = Answer(chat, state.config.model_name, wanted.nbest, wanted.stop,
                    prompts if (not chat and getattr(body, "echo", False)) else None, state.decoder.vocab.token_bytes,
                    wanted.max_new_tokens)
    if body.stream:
        gen = stream_events(answer, jobs, state.decoder.vocab.token_bytes, request, deadline, include_usage,
                            sum(j.prompt_tokens for j in jobs))
        return StreamingResponse(_observe(gen, state, t0), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    try:
        results = [await wait_result(j, request, deadline) for j in jobs]
    except BaseException:
        for j in jobs:
            j.cancel()
        raise
    finally:
        stop_watching(request)
    if top is not None:
        await fill_logprobs(answer, state, prompts, results, top)
    state.metrics.latency_s.observe(time.monotonic() - t0)
    body_out = answer.body(results, sum(j.prompt_tokens for j in jobs))
    request.state.info["tokens"] = body_out["usage"]["completion_tokens"]
    return body_out


async def _observe(gen, state, t0):
    async for chunk in gen:
        yield chunk
    state.metrics.latency_s.observe(time.monotonic() - t0)


def _errors(app: FastAPI) -> None:
    @app.exception_handler(RequestError)
    async def request_error(request, exc: RequestError):
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(ClientGone)
    async def client_gone(request, exc):
        return Response(status_code=499)

    @app.exception_handler(RequestValidationError)
    async def invalid(request, exc: RequestValidationError):
        errs = exc.errors()
        first = errs[0] if errs else {"loc": ("body",), "msg": "invalid body", "type": ""}
        if first.get("type") == "json_invalid":
            return JSONResponse(error_body(400, "the body is not valid JSON", "body"), status_code=400)
        param = param_of(first.get("loc", ()))
        msg = first.get("msg", "invalid value")
        if first.get("type") == "extra_forbidden":
            msg = f"unknown field {param!r} (beam search fields: beam_size, constraints)"
        elif first.get("type") == "missing":
            msg = f"{param} is required"
        else:
            msg = f"{param}: {msg}"
        return JSONResponse(error_body(400, msg, param), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, exc: StarletteHTTPException):
        return JSONResponse(error_body(exc.status_code, str(exc.detail)), status_code=exc.status_code)
