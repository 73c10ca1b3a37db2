"""English numbers: digits (``1,234.5``), ordinal digits (``21st``) and number words.

Everything returns an acceptor over bytes for *one* number; `digits_filter` turns a numeral
language into a filter over whole texts ("every number written with digits is well formed").
"""
from __future__ import annotations

import functools
from typing import Literal

import pynini

from ...fst.optimize import optimize
from .filters import only_valid
from .fsts import accep, chars, strings

__all__ = [
    "DIGIT",
    "Grouping",
    "cardinal_words",
    "digits_filter",
    "numeral",
    "numeral_candidates",
    "ordinal_digits",
]

Grouping = Literal["optional", "required", "never"]

DIGITS = "0123456789"


@functools.cache
def _digit() -> pynini.Fst:
    return chars(DIGITS)


def DIGIT() -> pynini.Fst:  # noqa: N802 - reads like the constant it stands for
    """One ASCII digit."""
    return _digit().copy()


def _integer(grouping: Grouping) -> pynini.Fst:
    d = _digit()
    plain = pynini.closure(d, 1)
    # 1,234 and 12,345,678: a first group of 1-3 digits (no leading zero), then groups of 3.
    grouped = chars("123456789") + pynini.closure(d, 0, 2) + pynini.closure(accep(",") + d**3, 1)
    if grouping == "never":
        return optimize(plain, stage="numeral")
    if grouping == "optional":
        return optimize(plain | grouped, stage="numeral")
    # "required": 5 digits or more must be grouped (10,000); 4-digit numbers and years may be
    # written either way (2024, 1,500).
    short = pynini.closure(d, 1, 4)
    return optimize(short | grouped, stage="numeral")


def numeral(*, grouping: Grouping = "optional", decimals: bool = True) -> pynini.Fst:
    """One number written with digits: ``7``, ``007``, ``1,234``, ``3.25`` (no sign).

    ``grouping``: thousands separators ``optional`` (1000 or 1,000), ``required`` (from five
    digits: 10,000), ``never``. A grouped number has groups of exactly three digits after the
    first (``1,00`` and ``10,00,000`` are not numbers) and no leading zero.
    """
    out = _integer(grouping)
    if decimals:
        out = out + pynini.closure(accep(".") + pynini.closure(_digit(), 1), 0, 1)
    return optimize(out, stage="numeral")


def numeral_candidates() -> pynini.Fst:
    """What looks like a number in running text: digit runs joined by ``,`` or ``.``."""
    d = pynini.closure(_digit(), 1)
    return optimize(d + pynini.closure(chars(",.") + d), stage="numeral candidates")


def digits_filter(valid: pynini.Fst) -> pynini.Fst:
    """Texts in which every maximal digit run (with its inner ``,``/``.``) is in ``valid``.

    ``3.`` at the end of a sentence and ``1, 2, 3`` are fine: a separator counts as part of a
    number only between two digits.
    """
    d = _digit()
    sep = chars(",.")
    return only_valid(
        numeral_candidates(),
        valid,
        not_after=d | (d + sep),
        not_before=d | (sep + d),
        stage="digits filter",
    )


def ordinal_digits(numbers: pynini.Fst) -> pynini.Fst:
    """``numbers`` with the right English ordinal suffix: 1st 2nd 3rd 4th 11th 12th 13th 21st."""
    d = _digit()
    any_digits = pynini.closure(d)
    not_ten = (any_digits + pynini.difference(d, accep("1"))) | accep("")  # no "1" before last
    ends = {
        "st": not_ten + accep("1"),
        "nd": not_ten + accep("2"),
        "rd": not_ten + accep("3"),
    }
    special = optimize(pynini.union(*ends.values()), stage="ordinal")
    ends["th"] = pynini.difference(pynini.closure(d, 1), special)
    parts = [
        optimize(pynini.intersect(optimize(numbers, stage="ordinal"), optimize(pattern, stage="ordinal")), stage="ordinal")
        + accep(suffix)
        for suffix, pattern in ends.items()
    ]
    return optimize(pynini.union(*parts), stage="ordinal")


_ONES = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
          "eighteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ["thousand", "million", "billion"]


@functools.cache
def _cardinal_words(max_scale: str, and_: bool) -> pynini.Fst:
    ones, teens, tens = strings(_ONES), strings(_TEENS), strings(_TENS)
    n99 = ones | teens | tens | (tens + accep("-") + ones)  # "twenty-one" takes a hyphen
    conj = (accep(" and ") | accep(" ")) if and_ else accep(" ")
    n999 = n99 | (ones + accep(" hundred") + pynini.closure(conj + n99, 0, 1))
    below = n999  # numbers below the current scale, e.g. below a thousand
    for scale in _SCALES[: _SCALES.index(max_scale) + 1]:
        # "two million", "two million three hundred", "two million and five"
        rest = (accep(" ") + below) | ((accep(" and ") + n99) if and_ else pynini.Fst())
        below = below | (n999 + accep(f" {scale}") + pynini.closure(rest, 0, 1))
        below = optimize(below, stage="number words")
    # "a hundred", "a thousand": "one" before a scale word may be "a" at the very start.
    scales = pynini.union(*(accep(s) for s in ["hundred", *_SCALES]))
    sigma = pynini.closure(pynini.union(*(accep(chr(c)) for c in range(0x20, 0x7F))))
    a_rule = pynini.cdrewrite(pynini.cross("one ", "a "), "[BOS]", scales, sigma)
    with_a = pynini.compose(below, a_rule).project("output")
    return optimize(accep("zero") | below | with_a, stage="number words")


def cardinal_words(*, max_scale: Literal["thousand", "million", "billion"] = "billion", and_: bool = True) -> pynini.Fst:
    """Cardinal numbers in lowercase words: ``zero``, ``twenty-one``, ``a hundred and five``,
    ``three thousand two hundred``, ``two million and one``; up to ``max_scale``.

    ``and_``: allow the British "and" before the last two digits (``one hundred and five``).
    Casing variants (``Twenty-one``) come from `fstbeam.grammars.lib.casing`.
    """
    return _cardinal_words(max_scale, and_).copy()
