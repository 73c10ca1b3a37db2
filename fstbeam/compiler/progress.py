"""DBA progress of a must-include phrase counted in *completed words* (not bytes).

A light phrase automaton records ``progress``: the bytes of the phrase matched so far. Counting
DBA banks in bytes gave one bank per byte (7 banks for "Things" against a beam of 5), so a
hypothesis one byte further into a word ("T") beat any hypothesis with less progress, whatever its
score, and fragments such as "T Things" survived. Post & Vilar's banks count constraint tokens,
a handful per phrase; the tokenizer-independent analogue here is the phrase's words:

- a word of the phrase ends at byte ``e`` (1-based) when byte ``e - 1`` is a word byte and byte
  ``e`` is not (or ``e`` is the phrase's length); a phrase without word bytes is one word;
- a word that ends inside the phrase is complete once the byte after it is matched too (its right
  boundary is then certain); the last word is complete when the whole phrase is matched (met, or
  matched and waiting for a boundary: ``progress == len``).

So "Things" has 1 word and "a price tag" has 3; a state's word progress is a function of its byte
progress only, computed here from the literal.
"""
from __future__ import annotations

import numpy as np

from .token_index import IS_WORD_BYTE

__all__ = ["phrase_word_ends", "phrase_words", "word_progress"]


def phrase_word_ends(literal: bytes) -> list[int]:
    """1-based end positions of the phrase's words (``[len]`` when it has no word byte)."""
    m = len(literal)
    ends = [e for e in range(1, m + 1) if IS_WORD_BYTE[literal[e - 1]] and (e == m or not IS_WORD_BYTE[literal[e]])]
    return ends or [m]


def phrase_words(literal: bytes) -> int:
    """Banks a phrase adds to DBA: its number of words."""
    return len(phrase_word_ends(literal))


def word_progress(literal: bytes, byte_progress: np.ndarray) -> np.ndarray:
    """int64 words complete at each byte progress (see the module docstring)."""
    m = len(literal)
    p = np.asarray(byte_progress, np.int64)
    out = np.zeros(p.shape, np.int64)
    for e in phrase_word_ends(literal):
        out += (p >= e + 1) if e < m else (p == m)
    return out
