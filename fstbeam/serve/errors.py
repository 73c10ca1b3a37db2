"""The server's request errors: an HTTP status, the body field at fault and a message, sent as
OpenAI's error object ``{"error": {"message", "type", "param", "code"}}``."""
from __future__ import annotations

__all__ = ["RequestError", "error_body", "scrub"]

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 408: "timeout",
          413: "invalid_request_error", 415: "invalid_request_error", 422: "invalid_request_error",
          429: "rate_limit_error", 503: "service_unavailable", 504: "timeout"}


class RequestError(Exception):
    """A request the server refuses or cannot finish (4xx/5xx), naming the field (``param``)."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> dict:
        return error_body(self.status, self.message, self.param, self.code)


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict:
    return {"error": {"message": scrub(message), "type": _TYPES.get(status, "server_error"), "param": param,
                      "code": code}}


def _roots() -> list[str]:
    """Folders whose paths an error message must not show a client (longest first)."""
    import os
    import sys
    import tempfile
    from pathlib import Path

    roots = {str(Path(__file__).resolve().parents[2]), sys.prefix, sys.base_prefix, os.path.expanduser("~"),
             os.getcwd(), tempfile.gettempdir(), os.environ.get("FSTBEAM_CACHE", "")}
    roots |= {str(Path(r).resolve()) for r in list(roots) if r}
    return sorted((r for r in roots if r and r != "/"), key=len, reverse=True)


_ROOTS: list[str] = []


def scrub(message: str) -> str:
    """``message`` with every file-system path under the server's folders (checkout, Python, home,
    working and temporary folders, cache) replaced by ``<path>``, and any other absolute path
    under a system folder (``/etc/...``)."""
    import re

    if not _ROOTS:
        _ROOTS.extend(_roots())
    for root in _ROOTS:
        if root in message:
            message = re.sub(re.escape(root) + r"[^\s'\"),;]*", "<path>", message)
    return re.sub(r"(?<![\w.:/])/(?:" + _TOP + r")(?:/[\w.~+-]*)*", "<path>", message)


# top-level folders of a file system (a URL path such as /v1/models is not one of them)
_TOP = "etc|usr|home|root|tmp|var|opt|work|proc|dev|srv|mnt|media|lib|lib64|bin|sbin|run|sys|nix|private|Users|Volumes"
