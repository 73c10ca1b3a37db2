"""UTF-8 byte acceptors for sets of code points.

A set of code points (inclusive ranges) becomes a minimal byte acceptor (labels 1..255, byte
value == label) of their UTF-8 encodings. The ranges are first split into runs whose encodings
share a length and whose continuation bytes cover whole blocks (the construction of RE2 and
Rust's utf8-ranges): each run is a sequence of byte ranges, one arc per byte. Surrogates
(D800-DFFF) have no UTF-8 encoding and code point 0 has no label (byte 0 is OpenFst's epsilon):
both are left out silently.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import pynini

from ....fst.optimize import optimize

__all__ = [
    "ANY_CHAR",
    "MAX_CODE_POINT",
    "normalize_ranges",
    "complement_ranges",
    "utf8_sequences",
    "codepoint_ranges_fst",
]

MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)
# Every code point with a label and an encoding: 1..10FFFF minus the surrogates.
ANY_CHAR: list[tuple[int, int]] = [(1, 0xD7FF), (0xE000, MAX_CODE_POINT)]


def normalize_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, merged, clipped to 1..10FFFF and without surrogates."""
    clipped = []
    for lo, hi in ranges:
        if lo > hi:
            raise ValueError(f"empty code point range {lo:#x}-{hi:#x}")
        lo, hi = max(lo, 1), min(hi, MAX_CODE_POINT)
        for a, b in ((lo, min(hi, _SURROGATES[0] - 1)), (max(lo, _SURROGATES[1] + 1), hi)):
            if a <= b:
                clipped.append((a, b))
    clipped.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in clipped:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def complement_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Every encodable code point (ANY_CHAR) not in ``ranges``."""
    out: list[tuple[int, int]] = []
    nxt = 1
    for lo, hi in normalize_ranges(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODE_POINT:
        out.append((nxt, MAX_CODE_POINT))
    return normalize_ranges(out)


def _encode(cp: int, n: int) -> list[int]:
    if n == 1:
        return [cp]
    lead = {2: 0xC0, 3: 0xE0, 4: 0xF0}[n]
    out = [0x80 | ((cp >> (6 * i)) & 0x3F) for i in range(n - 1)]
    out.append(lead | (cp >> (6 * (n - 1))))
    return out[::-1]


def utf8_sequences(lo: int, hi: int) -> Iterator[list[tuple[int, int]]]:
    """Split ``lo..hi`` (no surrogates) into byte-range sequences whose products are exactly the
    encodings of the range, in order."""
    stack = [(lo, hi)]
    while stack:
        s, e = stack.pop()
        split = False
        for limit in (0x7F, 0x7FF, 0xFFFF):  # encoding-length boundaries
            if s <= limit < e:
                stack.extend([(limit + 1, e), (s, limit)])
                split = True
                break
        if split:
            continue
        if e <= 0x7F:
            yield [(s, e)]
            continue
        for i in range(1, 4):  # align to whole continuation-byte blocks
            m = (1 << (6 * i)) - 1
            if s & ~m != e & ~m:
                if s & m:
                    stack.extend([((s | m) + 1, e), (s, s | m)])
                    split = True
                    break
                if e & m != m:
                    stack.extend([(e & ~m, e), (s, (e & ~m) - 1)])
                    split = True
                    break
        if split:
            continue
        n = 2 if e <= 0x7FF else 3 if e <= 0xFFFF else 4
        yield list(zip(_encode(s, n), _encode(e, n)))


def codepoint_ranges_fst(ranges: Iterable[tuple[int, int]]) -> pynini.Fst:
    """A minimal byte acceptor of the UTF-8 encodings of the code points in ``ranges``
    (inclusive; surrogates and code point 0 left out). No code point: the empty language."""
    f = pynini.Fst()
    start, final = f.add_state(), f.add_state()
    f.set_start(start)
    f.set_final(final)
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    for lo, hi in normalize_ranges(ranges):
        for seq in utf8_sequences(lo, hi):
            src = start
            for k, (a, b) in enumerate(seq):
                dst = final if k == len(seq) - 1 else f.add_state()
                for byte in range(a, b + 1):
                    f.add_arc(src, pynini.Arc(byte, byte, one, dst))  # type: ignore[attr-defined]
                src = dst
    f.connect()
    return optimize(f, stage="utf8 code points")
