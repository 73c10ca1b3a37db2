"""Tiny constructors every grammar needs: literal strings, character sets, unions.

All automata are acceptors over bytes (``token_type="byte"``; see `fstbeam.fst.labels`).
Literal text goes through ``pynini.escape`` so ``[``, ``]`` and ``\\`` mean themselves.
"""
from __future__ import annotations

from collections.abc import Iterable

import pynini

from ...fst.optimize import byte_sigma, sigma_star  # re-exported for grammar authors

__all__ = ["accep", "any_char", "byte_sigma", "chars", "not_chars", "sigma_star", "strings"]


def accep(text: str) -> pynini.Fst:
    """Exactly ``text`` (its UTF-8 bytes)."""
    return pynini.accep(pynini.escape(text), token_type="byte")


def strings(items: Iterable[str]) -> pynini.Fst:
    """Any one of ``items``; the empty language if there are none."""
    items = sorted(set(items))
    if not items:
        return pynini.Fst()
    return pynini.string_map([pynini.escape(s) for s in items]).optimize()


def chars(characters: str) -> pynini.Fst:
    """Any one character of ``characters`` (each may be multi-byte)."""
    return strings(characters)


def not_chars(characters: str) -> pynini.Fst:
    """Any one *byte* that is not one of the ASCII ``characters``."""
    if any(ord(c) > 0x7F for c in characters):
        raise ValueError("not_chars works on ASCII characters only")
    return pynini.difference(byte_sigma(), chars(characters)).optimize()


def any_char() -> pynini.Fst:
    """Any one byte (label 1..255)."""
    return byte_sigma()

