"""codepoint_ranges_fst against Python's own UTF-8 encoder."""
from __future__ import annotations

import random

import pytest

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.regex.utf8 import (
    ANY_CHAR,
    codepoint_ranges_fst,
    complement_ranges,
    normalize_ranges,
)

SURROGATES = range(0xD800, 0xE000)
BOUNDARIES = [1, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF]


def _encodable(cp: int) -> bool:
    return cp != 0 and cp not in SURROGATES


def _check(ranges, probes):
    dfa = fst_to_dfa(codepoint_ranges_fst(ranges))
    inside = normalize_ranges(ranges)
    for cp in probes:
        if not 0 <= cp <= 0x10FFFF or not _encodable(cp):
            continue
        want = any(lo <= cp <= hi for lo, hi in inside)
        assert dfa.accepts(chr(cp).encode("utf-8")) == want, (hex(cp), ranges)


def test_every_code_point_of_random_ranges_and_their_neighbours():
    rng = random.Random(7)
    for _ in range(40):
        ranges = []
        for _ in range(rng.randint(1, 4)):
            lo = rng.choice([rng.randint(1, 0x800), rng.randint(1, 0x10FFFF)] + BOUNDARIES)
            hi = min(0x10FFFF, lo + rng.choice([0, 1, 63, 64, 200, 5000]))
            ranges.append((lo, hi))
        probes = set()
        for lo, hi in ranges:
            span = range(lo, hi + 1)
            probes.update(span if len(span) <= 300 else rng.sample(span, 300))
            probes.update([lo - 1, hi + 1, lo, hi])
        probes.update(rng.randint(1, 0x10FFFF) for _ in range(200))
        _check(ranges, probes)


def test_boundaries_of_encoding_lengths():
    probes = {b + d for b in BOUNDARIES for d in (-1, 0, 1)}
    for lo, hi in [(0x7F, 0x80), (0x7FF, 0x800), (0xFFFF, 0x10000), (0x80, 0x10FFFF), (1, 0x10FFFF)]:
        _check([(lo, hi)], probes)


def test_surrogates_and_nul_have_no_encoding():
    fst = codepoint_ranges_fst([(0, 0x10FFFF)])
    dfa = fst_to_dfa(fst)
    assert not dfa.accepts(b"\x00")
    # CESU-style encodings of surrogates and overlong forms are not UTF-8.
    for bad in [b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf4\x90\x80\x80", b"\x80", b"\xff"]:
        assert not dfa.accepts(bad), bad
    assert dfa.accepts("\ud7ff".encode()) and dfa.accepts("\ue000".encode())
    # Only-surrogate ranges are the empty language.
    assert codepoint_ranges_fst([(0xD800, 0xDFFF)]).num_states() == 0


def test_any_char_is_exactly_one_character():
    dfa = fst_to_dfa(codepoint_ranges_fst(ANY_CHAR))
    rng = random.Random(3)
    for _ in range(2000):
        cp = rng.randint(1, 0x10FFFF)
        if _encodable(cp):
            assert dfa.accepts(chr(cp).encode())
            assert not dfa.accepts((chr(cp) * 2).encode())
    assert not dfa.accepts(b"")
    # Minimal: start, final, and the continuation-byte states of the UTF-8 structure.
    assert fst_to_dfa(codepoint_ranges_fst(ANY_CHAR)).num_states < 12


def test_complement():
    rng = random.Random(11)
    ranges = [(0x30, 0x39), (0x41, 0x5A), (0x4E00, 0x9FFF)]
    comp = complement_ranges(ranges)
    probes = {rng.randint(1, 0x10FFFF) for _ in range(3000)} | {0x2F, 0x30, 0x39, 0x3A, 0x4DFF, 0x4E00}
    dfa = fst_to_dfa(codepoint_ranges_fst(comp))
    for cp in probes:
        if _encodable(cp):
            assert dfa.accepts(chr(cp).encode()) != any(lo <= cp <= hi for lo, hi in ranges)


def test_bad_range():
    with pytest.raises(ValueError):
        codepoint_ranges_fst([(5, 4)])
