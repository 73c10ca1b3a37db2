"""Checks of what users hand in, one function per kind of input, run before native code or a
model sees it. Each raises a `fstbeam.errors` error that names the input (and its position) and
says how to fix it. The limits are documented in docs/trust.md (a test reads both).
"""
from __future__ import annotations

from typing import Any

from .errors import Error, SpecError

__all__ = ["LIMITS", "check_text", "check_texts", "check_flag"]

#: Per-request limits (characters count Unicode code points). Above one, a request is refused in
#: milliseconds with an error that names the limit, never a MemoryError later.
LIMITS: dict[str, int] = {
    "phrase_chars": 1_000,  # one must-include phrase, avoid phrase or AnyOf alternative
    "prefix_chars": 10_000,
    "avoid_chars": 10_000,  # all avoid phrases of one request together
    "phrases_per_request": 200,  # must-include items
    "avoid_per_request": 1_000,
    "alternatives_per_item": 1_000,  # alternatives of one AnyOf
    "word_chars": 200,  # one entry of a word list
}


def _kind(value: Any) -> str:
    return type(value).__name__


def check_text(value: Any, where: str, *, limit: str | None = None, error: type[Error] = SpecError) -> str:
    """``value`` as text for the input ``where``: a non-empty ``str`` of valid Unicode (no lone
    surrogate, no NUL byte), at most ``LIMITS[limit]`` characters."""
    if not isinstance(value, str):
        raise error(f"{where} must be text (str), not {_kind(value)} {value!r:.60}")
    if not value.strip():
        raise error(f"{where} is empty: give the text (or leave it out)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{where} is not valid Unicode text (a lone surrogate {value[exc.start]!r} at character "
                    f"{exc.start}): pass UTF-8 text") from None
    if "\x00" in value:
        raise error(f"{where} contains a NUL character at {value.index(chr(0))}, which no token can spell: remove it")
    if limit is not None and len(value) > LIMITS[limit]:
        raise error(f"{where} has {len(value):,} characters, over the limit of {LIMITS[limit]:,} ({limit}, "
                    "docs/trust.md): shorten it")
    return value


def check_texts(values: Any, where: str, *, limit: str | None = None, count: str | None = None,
                error: type[Error] = SpecError) -> tuple[str, ...]:
    """A list of texts (each checked by :func:`check_text` as ``where[i]``); at most
    ``LIMITS[count]`` of them."""
    if isinstance(values, (str, bytes, bytearray, dict)) or not hasattr(values, "__iter__"):
        raise error(f"{where} must be a list of texts, not {_kind(values)} {values!r:.60}")
    out = tuple(check_text(v, f"{where}[{i}]", limit=limit, error=error) for i, v in enumerate(values))
    if count is not None and len(out) > LIMITS[count]:
        raise error(f"{where} has {len(out):,} entries, over the limit of {LIMITS[count]:,} ({count}, docs/trust.md)")
    return out


def check_flag(value: Any, where: str, *, error: type[Error] = SpecError) -> bool:
    """A yes/no option: ``True`` or ``False`` only (never 0, 1 or "false")."""
    if not isinstance(value, bool):
        raise error(f"{where} must be true or false, not {value!r:.60}")
    return value
