"""Letter case over byte automata: capitalized and upper-case variants of a language.

Covers ASCII and the Latin letters of Unicode's Latin-1 Supplement and Latin Extended-A
(``é``/``É``, ``ł``/``Ł``): each lowercase letter is rewritten to its uppercase form with
``pynini.cdrewrite``. UTF-8 is self-synchronizing, so rewriting byte sequences never matches
across character boundaries. Scripts other than Latin are left unchanged.
"""
from __future__ import annotations

import functools

import pynini

from ...fst.optimize import sigma_star
from .fsts import accep

__all__ = ["capitalized", "case_pairs", "upper_cased", "with_case_variants"]


@functools.cache
def case_pairs() -> tuple[tuple[str, str], ...]:
    """(lowercase, uppercase) letter pairs handled here."""
    pairs = []
    for cp in list(range(ord("a"), ord("z") + 1)) + list(range(0xDF, 0x180)):
        low = chr(cp)
        up = low.upper()
        if len(up) == 1 and up != low and up.lower() == low:
            pairs.append((low, up))
    return tuple(pairs)


@functools.cache
def _to_upper() -> pynini.Fst:
    return pynini.union(*(pynini.cross(accep(lo), accep(up)) for lo, up in case_pairs())).optimize()


@functools.cache
def _upper_rule() -> pynini.Fst:
    # Every lowercase letter, anywhere.
    return pynini.cdrewrite(_to_upper(), "", "", sigma_star()).optimize()


@functools.cache
def _first_upper_rule() -> pynini.Fst:
    # Only a lowercase letter at the very beginning ([BOS] is cdrewrite's start-of-string).
    return pynini.cdrewrite(_to_upper(), "[BOS]", "", sigma_star()).optimize()


def _apply(language: pynini.Fst, rule: pynini.Fst) -> pynini.Fst:
    return pynini.compose(language, rule).project("output").optimize()


def capitalized(language: pynini.Fst) -> pynini.Fst:
    """Each string of ``language`` with its first character in upper case (``may`` -> ``May``;
    a string that does not start with a lowercase letter is unchanged)."""
    return _apply(language, _first_upper_rule())


def upper_cased(language: pynini.Fst) -> pynini.Fst:
    """Each string of ``language`` in upper case (``may 3`` -> ``MAY 3``)."""
    return _apply(language, _upper_rule())


def with_case_variants(language: pynini.Fst, *, upper: bool = True) -> pynini.Fst:
    """``language`` plus its capitalized (and, if ``upper``, its upper-case) strings."""
    parts = [language, capitalized(language)]
    if upper:
        parts.append(upper_cased(language))
    return pynini.union(*parts).optimize()
