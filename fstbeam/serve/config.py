"""What a server is allowed to take: :class:`ServeConfig` (address, key, search defaults) and
:class:`Limits` (the 4xx/429 thresholds), validated in one place."""
from __future__ import annotations

from dataclasses import dataclass, field

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
    ``max_tokens`` / ``max_beam`` / ``max_n`` the search budget of one request.
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

    def __post_init__(self):
        for name in ("max_body_bytes", "max_queue", "max_phrases", "max_phrase_chars", "max_words", "max_tokens",
                     "max_beam", "max_n", "max_artifacts"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise DecodeError(f"limit {name} must be a positive integer (got {v!r})")
        if not (isinstance(self.timeout_s, (int, float)) and self.timeout_s > 0):
            raise DecodeError(f"limit timeout_s must be a positive number of seconds (got {self.timeout_s!r})")


@dataclass(frozen=True)
class ServeConfig:
    """How the server runs. ``host`` is 127.0.0.1 unless asked (a model server is not public by
    default); ``api_key``: when set, ``/v1/*`` needs ``Authorization: Bearer KEY``.
    ``batch_size``: requests decoded together (continuous batching); ``max_engines``: distinct
    search settings (beam size, max_tokens, n) decoded at the same time, one batch each.
    ``stop_at_newline`` / ``qa`` / ``length_reward``: the search defaults, as for
    ``fstbeam generate`` (``fstbeam.runtime.defaults``); ``grace_s``: after SIGTERM, how long
    accepted requests may take before they are failed with 503."""

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None
    model_name: str = "fstbeam-default"
    batch_size: int = 8
    max_engines: int = 4
    default_beam: int = 5
    default_max_tokens: int = 64
    stop_at_newline: bool = False
    qa: bool = False
    length_reward: float | None = None
    grace_s: float = 30.0
    limits: Limits = field(default_factory=Limits)
    log_requests: bool = True

    def __post_init__(self):
        for name in ("port", "batch_size", "max_engines", "default_beam", "default_max_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "port" else 1):
                raise DecodeError(f"{name} must be a positive integer (got {v!r})")
        if self.api_key is not None and not self.api_key.strip():
            raise DecodeError("api_key must be non-empty text (or None for no key)")
