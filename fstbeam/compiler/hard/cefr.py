"""CEFR word lists for ``cefr=`` / ``--cefr``: cefrpy's word forms, read through the ``cefr``
grammar's cached table (one reader for the whole package).

A word's level is the lowest level of any of its parts of speech; ``A1`` means every form at or
below A1 (levels are cumulative). ``cefr=`` takes the forms exactly as cefrpy lists them; the
``cefr`` grammar (``grammar="cefr"``) also admits the inflections of allowed lemmas.
"""
from __future__ import annotations

from functools import lru_cache

from ...validate import CEFR_LEVELS as LEVELS
from ...validate import check_cefr


def parse_level(level: str) -> int:
    return LEVELS.index(check_cefr(level)) + 1


@lru_cache(maxsize=len(LEVELS))
def _words(level: str) -> tuple[str, ...]:
    from ... import grammars

    return tuple(sorted(grammars.get("cefr").module.forms_at(level)))


def cefr_words(level: str) -> list[str]:
    """Every word form at or below ``level`` (e.g. ``"A1"``), sorted."""
    parse_level(level)
    return list(_words(str(level).strip().upper()))
