"""The HTTP guard in front of the routes (pure ASGI middleware): what every request passes before
a route sees it, so no route has to repeat it and no input reaches a route malformed.

- the API key (401) and, after SIGTERM, a JSON 503 naming the shutdown for new requests;
- the body, read whole before the route runs: 413 over ``max_body_bytes`` (with or without a
  ``Content-Length``: chunked bodies are counted as they arrive), 408 when it does not arrive
  within ``body_timeout_s``;
- POST bodies must be ``application/json`` (415): a web page cannot post a form to the server;
- the JSON itself: 400 for text that is not JSON, nested deeper than ``MAX_DEPTH``, or holding a
  lone surrogate (``"\\ud800"``), which no later step could encode;
- the request counter, the requests in flight, and one log line per request, with the client's
  text escaped (a newline in ``user`` cannot forge a line).

Below HTTP, :func:`protocol_for` guards connections, so no client can hold the server with
connections that send nothing: uvicorn's h11 protocol with three additions:

- a request's headers must be complete within ``header_timeout_s`` of the connection opening
  (or of the previous response, on a keep-alive connection): a connection that drips its headers
  byte by byte is answered 408 and closed (uvicorn itself only times out idle keep-alive
  connections, after ``idle_timeout_s``);
- at most ``max_connections`` open connections (the excess is answered 503 at once and closed)
  and ``max_connections_per_client`` from one client address (429), each a JSON error;
- uvicorn's ``limit_concurrency`` is not used: its refusal is text/plain and hits every client,
  ``/health`` included, once one client holds enough connections.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from .errors import error_body

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from uvicorn.protocols.http.h11_impl import H11Protocol

    from .config import Limits

    # the ASGI types (as starlette.types spells them)
    Scope = MutableMapping[str, Any]
    Message = MutableMapping[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]
    ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["Guard", "MAX_DEPTH", "escape", "ConnectionLimits", "protocol_for"]

log = logging.getLogger("fstbeam.serve")

MAX_DEPTH = 64
ROUTES = ("/health", "/metrics", "/v1/models", "/v1/completions", "/v1/chat/completions", "/v1/constraints")


def escape(value: object) -> str:
    """Client text for a log line: control characters (newlines included) as escapes, at most 200 characters."""
    text = str(value)
    out = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text[:200])
    return out + ("..." if len(text) > 200 else "")


def check_json(raw: bytes) -> str | None:
    """Why ``raw`` is not a body the routes can take (None: it is)."""
    depth = deepest = 0
    in_str = esc = False
    for b in raw:  # nesting, counted outside strings, before a recursive parser sees it
        if in_str:
            if esc:
                esc = False
            elif b == 0x5C:
                esc = True
            elif b == 0x22:
                in_str = False
        elif b == 0x22:
            in_str = True
        elif b in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                return f"the body is nested deeper than {MAX_DEPTH} levels"
        elif b in (0x5D, 0x7D):
            depth -= 1
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return f"the body is not valid JSON ({str(exc)[:120]})"
    bad = _lone_surrogate(value)
    if bad is not None:
        return f"the body holds a lone surrogate (\\u{ord(bad):04x}) in a string: send valid Unicode text"
    return None


def _lone_surrogate(value: Any) -> str | None:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as exc:
                return v[exc.start]
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


class _Refuse(Exception):
    def __init__(self, status: int, message: str, param: str | None = "body") -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


class Guard:
    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app, self.state = app, state  # state.http_in_flight: POSTs accepted, not answered (compiling included)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0, path = time.monotonic(), scope.get("path", "")
        status = {"code": 500, "started": False}

        async def send_wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"], status["started"] = message["status"], True
            await send(message)

        counted = scope.get("method") == "POST"
        self.state.http_in_flight += counted
        try:
            try:
                self._refuse(scope)
                receive = await self._body(scope, receive)
            except _Refuse as r:
                await send_json(send_wrapped, r.status, r.message, r.param)
                return
            try:
                await self.app(scope, receive, send_wrapped)
            except Exception:  # noqa: BLE001 - a bug: a JSON 500 without details, logged here
                log.exception("request failed: %s %s", scope.get("method"), escape(path))
                if not status["started"]:
                    await send_json(send_wrapped, 500, "internal error: the server logged it", None)
        finally:
            self.state.http_in_flight -= counted
            self._log(scope, path, status["code"], time.monotonic() - t0)

    def _refuse(self, scope: Scope) -> None:
        cfg = self.state.config
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        path = scope.get("path", "")
        if cfg.api_key and path.startswith("/v1/"):
            given = headers.get("authorization", "")
            token = given[7:] if given.lower().startswith("bearer ") else ""
            if not hmac.compare_digest(token.encode("utf-8", "replace"), cfg.api_key.encode()):
                raise _Refuse(401, "missing or wrong API key: send Authorization: Bearer KEY", "authorization")
        if not self.state.engine.accepting and path.startswith("/v1/"):
            raise _Refuse(503, "the server is shutting down: retry on another instance", None)
        limit = cfg.limits.max_body_bytes
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise _Refuse(413, f"the body ({length} bytes) is over this server's limit of {limit} bytes")
        if scope.get("method") == "POST":
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                raise _Refuse(415, f"the body must be JSON sent as Content-Type: application/json (got "
                                   f"{escape(kind) or 'none'!r})", "content-type")

    async def _body(self, scope: Scope, receive: Receive) -> Receive:
        """The whole body, checked; a receive that replays it (then waits for the disconnect)."""
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            return receive
        limit = self.state.config.limits.max_body_bytes
        deadline = time.monotonic() + self.state.config.limits.body_timeout_s
        chunks, size = [], 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.01, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                raise _Refuse(408, f"the body did not arrive within {self.state.config.limits.body_timeout_s:g} s") from None
            if message["type"] == "http.disconnect":
                raise _Refuse(400, "the client left before sending the body")
            size += len(message.get("body", b""))
            if size > limit:
                raise _Refuse(413, f"the body is over this server's limit of {limit} bytes")
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        problem = check_json(raw) if raw else "the body is empty: send a JSON object"
        if problem:
            raise _Refuse(400, problem)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            return await receive()

        return replay

    def _log(self, scope: Scope, path: str, code: int, seconds: float) -> None:
        route = path if path in ROUTES else "other"
        self.state.metrics.requests.labels(route, str(code)).inc()
        if not self.state.config.log_requests:
            return
        info = (scope.get("state") or {}).get("info") or {}
        client = scope.get("client") or ("-", 0)
        extra = " ".join(f"{k}={escape(v)}" for k, v in info.items() if v is not None)
        log.info("%s %s %s %d %.3fs %s", client[0], scope.get("method", "-"), escape(path), code, seconds, extra)


async def send_json(send: Send, status: int, message: str, param: str | None) -> None:
    body = json.dumps(error_body(status, message, param)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


# ---- connections (below HTTP) -----------------------------------------------------------------
_REASONS = {408: b"Request Timeout", 429: b"Too Many Requests", 503: b"Service Unavailable"}


class ConnectionLimits:
    """Open connections, in total and per client address (one event loop: no locking)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.total = 0
        self.per_client: Counter[str] = Counter()

    def admit(self, client: str) -> tuple[int, str] | None:
        lim = self.limits
        if self.total >= lim.max_connections:
            return 503, f"the server has {self.total} open connections (its limit): retry later"
        if self.per_client[client] >= lim.max_connections_per_client:
            return 429, (f"{self.per_client[client]} connections are open from your address (the limit per client): "
                         "reuse a connection (keep-alive) or close some")
        self.total += 1
        self.per_client[client] += 1
        return None

    def release(self, client: str) -> None:
        self.total -= 1
        self.per_client[client] -= 1
        if self.per_client[client] <= 0:
            del self.per_client[client]


def _raw_json(status: int, message: str) -> bytes:
    body = json.dumps(error_body(status, message)).encode()
    return (b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % (status, _REASONS[status], len(body)) + body)


def protocol_for(limits: ConnectionLimits) -> type[H11Protocol]:
    """The protocol class uvicorn makes per connection, bound to ``limits``."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11(H11Protocol):
        _fstbeam_timer: asyncio.TimerHandle | None  # set by connection_made

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's own
            super().connection_made(transport)
            self._fstbeam_client = self.client[0] if self.client else "-"
            self._fstbeam_timer = None
            refusal = limits.admit(self._fstbeam_client)
            self._fstbeam_admitted = refusal is None
            if refusal is not None:
                transport.write(_raw_json(*refusal))
                transport.close()
                return
            self._fstbeam_arm()

        def _fstbeam_arm(self) -> None:
            """Headers due within the limit, from now (the connection opened or a response ended)."""
            if self._fstbeam_timer is not None:
                self._fstbeam_timer.cancel()
            self._fstbeam_waiting = self.cycle
            self._fstbeam_timer = self.loop.call_later(limits.limits.header_timeout_s, self._fstbeam_too_slow)

        def _fstbeam_too_slow(self) -> None:
            self._fstbeam_timer = None
            if self.cycle is self._fstbeam_waiting and not self.transport.is_closing():  # no new request started
                self.transport.write(_raw_json(408, f"the request's headers did not arrive within "
                                                    f"{limits.limits.header_timeout_s:g} s"))
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self._fstbeam_timer is not None and self.cycle is not self._fstbeam_waiting:  # headers complete
                self._fstbeam_timer.cancel()
                self._fstbeam_timer = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._fstbeam_arm()

        def connection_lost(self, exc: Exception | None) -> None:
            timer = getattr(self, "_fstbeam_timer", None)
            if timer is not None:
                timer.cancel()
            if getattr(self, "_fstbeam_admitted", False):
                self._fstbeam_admitted = False
                limits.release(self._fstbeam_client)
            super().connection_lost(exc)

    return GuardedH11
