"""Case-insensitive matching (the `i` flag): a set of code points closed under case folding.

ECMA-262 with the `u` and `i` flags compares characters by their *simple* case folding
(Unicode's CaseFolding.txt, statuses C and S): `K`, `k` and the Kelvin sign U+212A are one, so
are `S`, `s` and the long s U+017F, and `Σ σ ς`; `ß` stays itself (its full folding `ss` is two
characters). Python has no simple folding, so it is read from `str.casefold` where that gives
one character, else from `str.lower`: the same classes for every code point but the few whose
full and simple foldings differ, which then keep their lowercase (U+1E9E `ẞ` -> `ß`).
"""
from __future__ import annotations

import bisect
from functools import cache

from .utf8 import MAX_CODE_POINT, normalize_ranges

__all__ = ["case_closure"]

Ranges = list[tuple[int, int]]


def _fold(c: str) -> str:
    f = c.casefold()
    if len(f) == 1:
        return f
    low = c.lower()
    return low if len(low) == 1 else c


@cache
def _classes() -> tuple[list[int], list[tuple[int, ...]]]:
    """(sorted code points that share their folding with another, each one's class)."""
    groups: dict[str, list[int]] = {}
    for cp in range(1, MAX_CODE_POINT + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        key = _fold(c)
        if key != c or c.upper() != c:
            groups.setdefault(key, []).append(cp)
    members: dict[int, tuple[int, ...]] = {}
    for key, cps in groups.items():
        if len(key) == 1 and ord(key) not in cps:
            cps.append(ord(key))
        if len(cps) > 1:
            cls = tuple(sorted(cps))
            for cp in cls:
                members[cp] = cls
    order = sorted(members)
    return order, [members[cp] for cp in order]


def case_closure(ranges: Ranges) -> Ranges:
    """``ranges`` with every code point's case variants added (the classes of `_classes`)."""
    cased, classes = _classes()
    extra: Ranges = []
    for lo, hi in ranges:
        i = bisect.bisect_left(cased, lo)
        j = bisect.bisect_right(cased, hi)
        for cls in classes[i:j]:
            extra.extend((cp, cp) for cp in cls)
    return normalize_ranges([*ranges, *extra]) if extra else ranges

