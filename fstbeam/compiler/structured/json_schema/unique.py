"""`uniqueItems` where an array's items come from a finite set of values.

Equality of two unbounded items (free strings, numbers) is not regular, so those arrays are not
checked (a WARNING names the path). Items held by their own keywords to a finite set of N values
(`enum`, `const`, `boolean`, an `integer` between bounds at most `MAX_RANGE_VALUES` apart,
through `$ref` and `allOf`) are:
- exactly, while the automaton that remembers which values came (2^N subsets, N·2^(N-1) copies of
  an item) fits `MAX_COUNT_STATES`;
- else between neighbours: each item differs from the one before it (N+1 states), which rejects
  the duplicates a model writes (a value repeated in a row) and never a valid array; a WARNING
  says so.

Each value's automaton is its spellings met with the item automaton, so the values' automata are
disjoint (values equal as JSON, 1 and 1.0, are one value) and together hold every item.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pynini

from .disjoint import listed_values
from .location import Location, SchemaContext
from .scalars import literal

__all__ = ["distinct_items"]

log = logging.getLogger("fstbeam")
_ROOT = 1 << 30  # nonterminal labels of the replacement: far above bytes and markers
_FIRST_VALUE = _ROOT + 1
_MAX_LOOKUPS = 16  # `$ref`/`allOf` hops followed to find a finite value list
MAX_RANGE_VALUES = 64  # an integer range read as its list of values (the budget then decides)
_FINITE_TYPES: dict[str, list[Any]] = {"boolean": [True, False], "null": [None]}


def distinct_items(c: SchemaContext, items: Any, item_fst: pynini.Fst | None,
                   piece: Callable[[pynini.Fst], pynini.Fst], prefixed: bool, path: str,
                   loc: Location, budget: int) -> pynini.Fst | None:
    """Sequences of ``piece(value)`` with no value twice (or none twice in a row; see the module
    doc), or None where not enforced: the items' values are not a known finite set, or too many,
    or `prefixItems` come first."""
    if prefixed:
        log.warning("%s: uniqueItems at %s is not enforced beside prefixItems (documented "
                    "approximation)", c.where, path or "/")
        return None
    if item_fst is None:  # no items: nothing to repeat
        return None
    values = _distinct(_finite_values(c, items, _MAX_LOOKUPS))
    if values is None:
        log.warning("%s: uniqueItems at %s is not enforced: its items are not drawn from a finite "
                    "list of values (documented approximation)", c.where, path or "/")
        return None
    pieces: list[pynini.Fst] = []
    size = 0
    for v in values:  # one piece per value the items accept: its spellings
        spelled = c.meet(literal(c, v, path, loc), item_fst)
        if spelled.num_states():
            pieces.append(piece(spelled))
            size = max(size, pieces[-1].num_states())
            if len(pieces) ** 2 * size > budget:  # (n and size only grow: stop building here)
                log.warning("%s: uniqueItems at %s is not enforced (%d values of up to %d states "
                            "or more)", c.where, path or "/", len(pieces), size)
                return None
    n = len(pieces)
    if n * 2 ** max(n - 1, 0) * size <= budget:
        root = _subsets(n)
    else:
        log.warning("%s: uniqueItems at %s is enforced between neighbouring items only (%d values: "
                    "every subset would take 2^%d states)", c.where, path or "/", n, n)
        root = _neighbours(n)
    pairs = [(_ROOT, root), *((_FIRST_VALUE + i, p) for i, p in enumerate(pieces))]
    return c.opt(pynini.replace(pairs, epsilon_on_replace=True), path)


def _finite_values(c: SchemaContext, node: Any, hops: int) -> list[Any] | None:
    """The values ``node``'s own keywords hold an instance to, where they are a finite list."""
    if not isinstance(node, dict) or hops <= 0:
        return None
    ref = node.get("$ref")
    if isinstance(ref, str) and c.resolver.ref_alone:  # drafts 3-7: the siblings are no keywords
        return _finite_values(c, c.resolver.resolve(ref, "")[0], hops - 1)
    listed = listed_values(node)
    if listed is not None:
        return listed
    subs = [c.resolver.resolve(ref, "")[0]] if isinstance(ref, str) else []
    for sub in [*subs, *(node.get("allOf") or [])]:
        found = _finite_values(c, sub, hops - 1)
        if found is not None:
            return found
    kinds = node.get("type")
    values: list[Any] = []
    for kind in kinds if isinstance(kinds, list) else [kinds]:  # (a list of types: each one finite)
        found = _integer_range(node) if kind == "integer" else _FINITE_TYPES.get(str(kind))
        if found is None:
            return None
        values += found
    return values


def _integer_range(node: dict[str, Any]) -> list[int] | None:
    """The integers between an integer node's bounds (the inclusive ones and the numeric
    exclusive ones, taken inclusively: the item automaton met with each value drops those the
    node excludes), where both are given and at most `MAX_RANGE_VALUES` apart."""
    def bound(*names: str) -> list[float]:
        return [v for v in (node.get(k) for k in names)
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    lows, highs = bound("minimum", "exclusiveMinimum"), bound("maximum", "exclusiveMaximum")
    if not lows or not highs:
        return None
    lo, hi = math.ceil(max(lows)), math.floor(min(highs))
    return list(range(lo, hi + 1)) if hi - lo < MAX_RANGE_VALUES else None


def _equality_key(value: Any) -> tuple[str, Any] | None:
    """Values equal under JSON Schema's equality share a key (1 and 1.0; true is not 1); None
    for arrays and objects (not handled)."""
    if value is None or isinstance(value, bool):
        return ("literal", value)
    if isinstance(value, (int, float)):
        try:
            return ("number", Fraction(value))
        except (ValueError, OverflowError):
            return None
    if isinstance(value, str):
        return ("string", value)
    return None


def _distinct(values: list[Any] | None) -> list[Any] | None:
    """``values`` less those equal to an earlier one as JSON; None where one is an array or an
    object (not handled)."""
    if values is None:
        return None
    distinct: dict[tuple[str, Any], Any] = {}
    for v in values:
        key = _equality_key(v)
        if key is None:
            return None
        distinct.setdefault(key, v)
    return list(distinct.values())


def _acceptor(states: int) -> pynini.Fst:
    f = pynini.Fst()
    f.add_states(states)
    f.set_start(0)
    for s in range(states):
        f.set_final(s)
    return f


def _subsets(n: int) -> pynini.Fst:
    """Sequences of the symbols of n values, each at most once: a state per subset seen."""
    f = _acceptor(1 << n)
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    for seen in range(1 << n):
        for i in range(n):
            if not seen >> i & 1:
                f.add_arc(seen, pynini.Arc(_FIRST_VALUE + i, _FIRST_VALUE + i, one,  # type: ignore[attr-defined]
                                           seen | 1 << i))
    return f


def _neighbours(n: int) -> pynini.Fst:
    """Sequences of the symbols of n values, none right after itself: a state per last value."""
    f = _acceptor(n + 1)  # state 0: nothing yet; state i + 1: value i last
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    for last in range(n + 1):
        for i in range(n):
            if last != i + 1:
                f.add_arc(last, pynini.Arc(_FIRST_VALUE + i, _FIRST_VALUE + i, one, i + 1))  # type: ignore[attr-defined]
    return f
