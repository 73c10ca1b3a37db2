"""Connection guards below HTTP: no client can hold the server with connections that send nothing.

uvicorn's h11 protocol (:class:`GuardedH11`) with three additions:

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

import json
from collections import Counter

from uvicorn.protocols.http.h11_impl import H11Protocol

from .errors import error_body

__all__ = ["ConnectionLimits", "protocol_for"]

_REASONS = {408: b"Request Timeout", 429: b"Too Many Requests", 503: b"Service Unavailable"}


class ConnectionLimits:
    """Open connections, in total and per client address (one event loop: no locking)."""

    def __init__(self, limits):
        self.limits = limits
        self.total = 0
        self.per_client: Counter = Counter()

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


def protocol_for(limits: ConnectionLimits):
    """The protocol class uvicorn makes per connection, bound to ``limits``."""

    class GuardedH11(H11Protocol):
        def connection_made(self, transport) -> None:  # type: ignore[override]
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

        def connection_lost(self, exc) -> None:
            if getattr(self, "_fstbeam_timer", None) is not None:
                self._fstbeam_timer.cancel()
            if getattr(self, "_fstbeam_admitted", False):
                self._fstbeam_admitted = False
                limits.release(self._fstbeam_client)
            super().connection_lost(exc)

    return GuardedH11
