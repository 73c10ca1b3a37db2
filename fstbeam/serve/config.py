"""What a server is allowed to take: :class:`ServeConfig` (address, key, search defaults) and
:class:`Limits` (the 4xx/429 thresholds), validated in one place."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import DecodeError

__all__ = ["Limits", "ServeConfig"]


@dataclass(frozen=True)
class Limits:
    """Per-request limits; a request over one gets a 4xx JSON error naming the field.

    ``max_body_bytes``: HTTP body (413). ``max_queue``: requests accepted but not finished (429
    beyond). ``timeout_s``: a request still unfinished after this many seconds leaves the batch
    (504). The constraint size limits bound what one request may make the compiler do:
    ``max_phrases`` entries of ``phrases`` + ``avoid`` (an AnyOf's alternatives count each),
    ``max_phrase_chars`` per text, ``max_words`` words in a per-request word list,
    ``max_tokens`` / ``max_beam`` / ``max_n`` the search budget of one request. Stored artifacts:
    at most ``max_artifacts`` and ``max_artifact_bytes`` in all (the least recently used POSTed
    one is dropped past either). Connections: a request's headers must arrive within
    ``header_timeout_s``, its body within ``body_timeout_s``; an idle keep-alive connection closes
    after ``idle_timeout_s``; at most ``max_connections`` open connections (503 beyond) and
    ``max_connections_per_client`` from one address (429 beyond). Large compiles run in
    ``compile_threads`` threads (small ones, cache hits and tokenizing in a quick lane of two);
    one that outlasts ``compile_timeout_s`` gets a 504.
    """

    max_body_bytes: int = 1 << 20
    max_queue: int = 256
    timeout_s: float = 300.0
    max_phrases: int = 32
    max_phrase_chars: int = 200
    max_words: int = 50_000
    max_tokens: int = 512
    max_beam: int = 16
    max_n: int = 16
    max_artifacts: int = 256
    max_artifact_bytes: int = 256 << 20
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    idle_timeout_s: float = 5.0
    max_connections: int = 1024
    max_connections_per_client: int = 128
    compile_timeout_s: float = 30.0
    compile_threads: int = 2

    def __post_init__(self):
        for name in ("max_body_bytes", "max_queue", "max_phrases", "max_phrase_chars", "max_words", "max_tokens",
                     "max_beam", "max_n", "max_artifacts", "max_artifact_bytes", "max_connections",
                     "max_connections_per_client", "compile_threads"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise DecodeError(f"limit {name} must be a positive integer (got {v!r})")
        for name in ("timeout_s", "header_timeout_s", "body_timeout_s", "idle_timeout_s", "compile_timeout_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf"):
                raise DecodeError(f"limit {name} must be a positive number of seconds (got {v!r})")


@dataclass(frozen=True)
class ServeConfig:
    """How the server runs. ``host`` is 127.0.0.1 unless asked (a model server is not public by
    default); ``api_key``: when set, ``/v1/*`` needs ``Authorization: Bearer KEY``.

    The search: a request's `SearchConfig` is ``preset`` (default: the one of the decoder's
    prompt format, as for ``fstbeam generate``), then ``search`` (the server's defaults:
    `SearchConfig` field names, from the same flags as ``generate``), then the request's own
    fields. ``batch_size`` in ``search`` is the size of each continuous batch.
    ``max_engines``: distinct search settings decoded at the same time, one batch each;
    ``grace_s``: after SIGTERM, how long accepted requests may take before they are failed
    with 503."""

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None
    model_name: str = "fstbeam-default"
    preset: str | None = None
    search: Mapping[str, Any] = field(default_factory=dict)
    max_engines: int = 4
    grace_s: float = 30.0
    limits: Limits = field(default_factory=Limits)
    log_requests: bool = True

    def __post_init__(self):
        for name in ("port", "max_engines"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "port" else 1):
                raise DecodeError(f"{name} must be a positive integer (got {v!r})")
        if not 0 <= self.port <= 65535:
            raise DecodeError(f"port must be in 0..65535 (got {self.port})")
        if self.api_key is not None and not self.api_key.strip():
            raise DecodeError("api_key must be non-empty text (or None for no key)")
        from ..runtime.presets import search_config

        search_config(self.preset, self.search)  # a bad default is an error at start, not per request

    @property
    def batch_size(self) -> int:
        from ..runtime.config import SearchConfig

        return int(self.search.get("batch_size") or SearchConfig().batch_size)
