"""Constants and key encodings of the table layout (docs/tables.md), shared by both halves.

The compiler writes keys with these helpers and the runtime searches them; one definition keeps
the two sides in step.
"""
from __future__ import annotations

from typing import Any, Iterable, TypeVar

T = TypeVar("T")

__all__ = [
    "BYTE_KEYS",
    "INF_DIST",
    "LIGHT_ROLES",
    "NO_TEXT_CLASS",
    "N_CLASSES",
    "ends_in_word_byte",
    "light_order",
    "starts_nonword",
]

#: Hard tables key a state's blocks by ``state * BYTE_KEYS + first byte`` (sorted int64 keys).
BYTE_KEYS = 256
#: Text token classes of the light layout: ``2 * first_byte_nonword + last_byte_nonword``.
N_CLASSES = 4
#: Class of ids without text (special tokens, EOS, padding).
NO_TEXT_CLASS = 4
#: Distance of a state that cannot reach an accepting state.
INF_DIST = 1 << 30
#: The order of a request's light automata everywhere (matcher, pool, artifact).
LIGHT_ROLES = ("phrase", "avoid", "prefix")


def starts_nonword(cls: Any) -> Any:
    """Text class ``cls`` (an int, array or tensor): the first byte is not a word byte (a space
    or punctuation). False for ids without text."""
    return (cls == 2) | (cls == 3)


def ends_in_word_byte(cls: Any) -> Any:
    """Text class ``cls``: the last byte is a word byte. False for ids without text."""
    return (cls == 0) | (cls == 2)


def light_order(phrases: Iterable[T], avoid: Iterable[T], prefix: T | None) -> tuple[T, ...]:
    """Light automata in contract order: must-include phrases, avoid phrases, then the prefix."""
    return tuple(phrases) + tuple(avoid) + ((prefix,) if prefix is not None else ())
