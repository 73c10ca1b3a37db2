"""Real calendar dates in English: ``3 May 2024``, ``May 3, 2024``, ``2024-05-03``.

Two modes:

- ``filter`` (default): any text in which every date-shaped part is a real date. Checked:
  ISO dates (``2024-02-30`` is rejected, ``2023-02-29`` too: not a leap year), a day before a
  month name (``31 April``) and a month name before a day (``February 30``, ``May 3th``).
  Intersect it with a word list: ``combine([build("cefr", level="A2"), build("dates")])``.
  Limits: only capitalized month names count (``may`` is a verb), the leap-year check needs the
  ISO form, and "May 45 people" is read as a bad date.
- ``only``: the whole text is one date in one of ``formats``.

Month names and their lengths are in ``data/months.tsv``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import pynini

from fstbeam.errors import GrammarError
from fstbeam.grammars.lib import numbers
from fstbeam.grammars.lib.filters import only_valid
from fstbeam.grammars.lib.fsts import accep, chars, strings
from fstbeam.grammars.lib.tsv import read_tsv

_DATA = Path(__file__).resolve().parent / "data"
FORMATS = ("iso", "dmy", "mdy")


def _months(path: Path) -> list[tuple[str, int, int]]:
    months = []
    for row in read_tsv(path, columns=3, names=("name", "number", "days")):
        name, number, days = row.fields
        if not number.isdigit() or not 1 <= int(number) <= 12:
            raise GrammarError(f"{row.where}: month number must be 1..12, not {number!r}")
        if not days.isdigit() or not 28 <= int(days) <= 31:
            raise GrammarError(f"{row.where}: days must be 28..31, not {days!r}")
        months.append((name, int(number), int(days)))
    return months


def _days(most: int, *, two_digits: bool) -> pynini.Fst:
    """Day numbers 1..most: ``3`` (or ``03`` with two_digits)."""
    fmt = "{:02d}" if two_digits else "{:d}"
    return strings(fmt.format(d) for d in range(1, most + 1))


def _leap_years() -> pynini.Fst:
    """Four-digit years divisible by 4, except centuries not divisible by 400 (1900, 2100)."""
    d, nonzero = numbers.DIGIT(), chars("123456789")
    last_two = strings(f"{n:02d}" for n in range(4, 100, 4))  # 04 .. 96
    centuries = strings(f"{n:02d}" for n in range(12, 100, 4))  # 1200, 1600, 2000, 2400 ...
    return (nonzero + d + last_two) | (centuries + accep("00"))


def _dates(months, fmt: str, *, ordinals: bool, year: bool, leap_check: bool) -> pynini.Fst:
    """Every real date in format ``fmt``, with or without the year."""
    d, nonzero = numbers.DIGIT(), chars("123456789")
    any_year = nonzero + d + d + d
    parts = []
    for name, number, most in months:
        if fmt == "iso":
            month, days = accep(f"{number:02d}"), _days(most, two_digits=True)
        else:
            month, days = accep(name), _days(most, two_digits=False)
            if ordinals:
                days = days | numbers.ordinal_digits(days)
        days = days.optimize()
        if year and leap_check and number == 2 and most == 29:
            # February 29 (29th) exists only in leap years.
            the_29th = pynini.intersect(days, strings(["29", "29th"])).optimize()
            choices = [(pynini.difference(days, the_29th).optimize(), any_year), (the_29th, _leap_years())]
        else:
            choices = [(days, any_year)]
        for day, years in choices:
            if fmt == "iso":
                parts.append(years + accep("-") + month + accep("-") + day)
            elif fmt == "dmy":
                parts.append(day + accep(" ") + month + (accep(" ") + years if year else accep("")))
            else:  # mdy
                parts.append(month + accep(" ") + day + (accep(", ") + years if year else accep("")))
    return pynini.union(*parts).optimize()


def build(
    mode: Literal["filter", "only"] = "filter",
    formats: str = "iso,dmy,mdy",
    ordinals: bool = True,
    year: Literal["required", "optional"] = "required",
    months: Path = _DATA / "months.tsv",
) -> pynini.Fst:
    """``formats``: comma-separated, from iso (2024-05-03), dmy (3 May 2024), mdy (May 3, 2024).
    ``ordinals``: allow 3rd May / May 3rd. ``year``: in ``only`` mode, may the year be left out
    of dmy/mdy dates (``3 May``)? ``months``: the month table (name, number, days)."""
    chosen = [f.strip().lower() for f in formats.split(",") if f.strip()]
    bad = [f for f in chosen if f not in FORMATS]
    if bad or not chosen:
        raise GrammarError(
            f"unknown date format {', '.join(map(repr, bad)) or repr(formats)}; "
            f"valid formats: {', '.join(FORMATS)} (comma-separated)"
        )
    table = _months(months)
    if mode == "only":
        langs = [
            _dates(table, f, ordinals=ordinals, year=(f == "iso" or year == "required"), leap_check=True)
            for f in chosen
        ]
        if year == "optional":
            langs += [_dates(table, f, ordinals=ordinals, year=True, leap_check=True) for f in chosen if f != "iso"]
        return pynini.union(*langs)

    # filter: every maximal date-shaped part of the text must be a real date.
    d = numbers.DIGIT()
    letter = chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    month_names = strings(name for name, _, _ in table)
    one_or_two = d + pynini.closure(d, 0, 1)
    suffix = pynini.closure(strings(["st", "nd", "rd", "th"]), 0, 1) if ordinals else accep("")
    filters = []
    if "iso" in chosen:
        shape = d**4 + accep("-") + one_or_two + accep("-") + one_or_two
        valid = _dates(table, "iso", ordinals=False, year=True, leap_check=True)
        filters.append(only_valid(shape, valid, not_after=d, not_before=d, stage="dates iso"))
    if "dmy" in chosen:
        shape = one_or_two + suffix + accep(" ") + month_names
        valid = _dates(table, "dmy", ordinals=ordinals, year=False, leap_check=False)
        filters.append(only_valid(shape, valid, not_after=d, not_before=letter, stage="dates dmy"))
    if "mdy" in chosen:
        shape = month_names + accep(" ") + one_or_two + suffix
        valid = _dates(table, "mdy", ordinals=ordinals, year=False, leap_check=False)
        filters.append(only_valid(shape, valid, not_after=letter, not_before=d | letter, stage="dates mdy"))
    out = filters[0]
    for f in filters[1:]:
        out = pynini.intersect(out, f).optimize()
    return out
