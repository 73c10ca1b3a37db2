"""Where a phrase occurs in a text: the boundary rule of `fstbeam.fst.text`, re-exported for
grammar authors (the plain-Python oracle used by golden cases and grammar checks)."""
from __future__ import annotations

from ...fst.text import is_word_char, occurs

__all__ = ["is_word_char", "occurs"]
