"""The Unicode data the regex parser reads: general categories (`\\p{L}`, `property_ranges`) and
case folding for the `i` flag (`case_closure`: a set of code points closed under folding).

ECMA-262 with the `u` and `i` flags compares characters by their *simple* case folding
(Unicode's CaseFolding.txt, statuses C and S): `K`, `k` and the Kelvin sign U+212A are one, so
are `S`, `s` and the long s U+017F, and `Σ σ ς`; `ß` stays itself (its full folding `ss` is two
characters). Python has no simple folding, so it is read from `str.casefold` where that gives
one character, else from `str.lower`: the same classes for every code point but the few whose
full and simple foldings differ, which then keep their lowercase (U+1E9E `ẞ` -> `ß`).
"""
from __future__ import annotations

import bisect
import unicodedata
from functools import cache

from .utf8 import ANY_CHAR, MAX_CODE_POINT, normalize_ranges

__all__ = ["case_closure", "property_ranges"]

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


_CATEGORY_NAMES = {
    "Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
    "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M",
    "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N",
    "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
    "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd",
    "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
    "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm",
    "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z",
    "Space_Separator": "Zs", "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Other": "C",
    "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co",
    "Unassigned": "Cn",
}


def property_ranges(name: str) -> Ranges | None:
    """Code point ranges of a General_Category value (short or long name), else None."""
    for prefix in ("General_Category=", "gc="):
        if name.startswith(prefix):
            name = name[len(prefix):]
    name = _CATEGORY_NAMES.get(name, name)
    if name in ("Any",):
        return list(ANY_CHAR)
    table = _category_table()
    if name == "LC":
        return normalize_ranges(table.get("Lu", []) + table.get("Ll", []) + table.get("Lt", []))
    if len(name) == 1 and any(k.startswith(name) for k in table):
        return normalize_ranges([r for k, v in table.items() if k.startswith(name) for r in v])
    if name in table:
        return table[name]
    return None


@cache
def _category_table() -> dict[str, Ranges]:
    """General category -> ranges, from Python's unicodedata (one pass over the code points)."""
    table: dict[str, Ranges] = {}
    prev_cat, start = None, 0
    for cp in range(0x110001):
        cat = unicodedata.category(chr(cp)) if cp <= 0x10FFFF else None
        if cat != prev_cat:
            if prev_cat is not None:
                table.setdefault(prev_cat, []).append((start, cp - 1))
            prev_cat, start = cat, cp
    return table
