"""The server's request errors: an HTTP status, the body field at fault and a message, sent as
OpenAI's error object ``{"error": {"message", "type", "param", "code"}}``."""
from __future__ import annotations

__all__ = ["RequestError", "error_body"]

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 413: "invalid_request_error",
          422: "invalid_request_error", 429: "rate_limit_error", 503: "service_unavailable", 504: "timeout"}


class RequestError(Exception):
    """A request the server refuses or cannot finish (4xx/5xx), naming the field (``param``)."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> dict:
        return error_body(self.status, self.message, self.param, self.code)


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": _TYPES.get(status, "server_error"), "param": param, "code": code}}
