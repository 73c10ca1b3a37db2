"""Well-formed English numbers: digits (1,234.5) and, in "only" mode, number words.

Two modes:

- ``filter`` (default): any text, as long as every number written with digits is well formed:
  ``1,000`` and ``1000`` pass, ``1,00`` and ``1.2.3`` do not. Intersect it with a word list
  (e.g. ``combine([build("cefr", level="A2"), build("numbers")])``): the word list lets digits
  through, this grammar checks their shape. Number words are not checked in this mode.
- ``only``: the whole text is one number: digits (optionally negative: ``-3.5``) or words
  (``twenty-one``, ``Three hundred and five``). Use it for a field that must hold a number,
  or union it with another language for "a number or ...".
"""
from __future__ import annotations

from typing import Literal

import pynini

from fstbeam.grammars.lib import casing, numbers
from fstbeam.grammars.lib.fsts import accep


def build(
    mode: Literal["filter", "only"] = "filter",
    grouping: Literal["optional", "required", "never"] = "optional",
    decimals: bool = True,
    words: bool = True,
) -> pynini.Fst:
    """``grouping``: thousands separators optional (1000 or 1,000), required from five digits
    (10,000), or never. ``decimals``: allow 3.25. ``words``: in ``only`` mode, allow numbers
    in words (lowercase, Capitalized or UPPER CASE)."""
    numeral = numbers.numeral(grouping=grouping, decimals=decimals)
    if mode == "filter":
        return numbers.digits_filter(numeral)
    # "only": exactly one number.
    one = pynini.closure(accep("-"), 0, 1) + numeral
    if words:
        one = one | casing.with_case_variants(numbers.cardinal_words())
    return one
