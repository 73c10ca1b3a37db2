"""Free JSON values shared between compiles.

The free value of a location (`containers.any_value`) depends on the location's shape, the
depth and the whitespace alone, not on the schema it came from; building it (minimized once
per depth) was ~0.015 CPU-s of every small schema's ~0.09 s character automaton. Entries are
kept least recently used first, bounded in count and size (a server compiles schema after
schema), and copied in and out, so no compile sees another's in-place edits.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import pynini

from . import containers
from .location import Location, SchemaContext

__all__ = ["free_value", "clear"]

MAX_ENTRIES = 32
MAX_STATES = 20_000
_VALUES: OrderedDict[tuple[Any, ...], pynini.Fst] = OrderedDict()
_LOCK = threading.Lock()


def free_value(c: SchemaContext, loc: Location, depth: int, only: str | None,
               key: tuple[Any, ...], settings: tuple[Any, ...]) -> pynini.Fst:
    """`containers.any_value(c, loc, depth, only)`, from the shared store where ``key``
    (the location's shape, depth, ``only``) and ``settings`` (whatever else of ``c`` the value
    depends on: whitespace, caps) were built before. Values over free text
    (``c.string_words``) are not shared."""
    if c.string_words is not None:
        return containers.any_value(c, loc, depth, only)
    shared = (*key, *settings)
    with _LOCK:
        hit = _VALUES.get(shared)
        if hit is not None:
            _VALUES.move_to_end(shared)
            return hit.copy()
    fst = containers.any_value(c, loc, depth, only)
    if fst.num_states() <= MAX_STATES:
        with _LOCK:
            _VALUES[shared] = fst.copy()
            while len(_VALUES) > MAX_ENTRIES:
                _VALUES.popitem(last=False)
    return fst


def clear() -> None:
    """Forget every shared value (tests compare a cold build with a shared one)."""
    with _LOCK:
        _VALUES.clear()
