"""Where a phrase occurs in a text, with the compiler's word-boundary rule.

A phrase "occurs" at word boundaries when it is not glued to a word character on a side where
the phrase itself starts/ends with a word character. Word characters are ASCII letters and
digits and every non-ASCII character (the compiler works on bytes: any byte >= 0x80 counts as a
word byte). This is the plain-Python oracle used by golden cases and grammar checks.
"""
from __future__ import annotations

__all__ = ["is_word_char", "occurs"]


def is_word_char(ch: str) -> bool:
    return ch.isascii() and ch.isalnum() or not ch.isascii()


def occurs(text: str, phrase: str, *, word_boundary: bool = True) -> bool:
    """Does ``phrase`` occur in ``text`` (case-sensitive; at word boundaries by default)?"""
    if not phrase:
        return True
    start = text.find(phrase)
    while start != -1:
        end = start + len(phrase)
        ok = True
        if word_boundary:
            if is_word_char(phrase[0]) and start > 0 and is_word_char(text[start - 1]):
                ok = False
            if is_word_char(phrase[-1]) and end < len(text) and is_word_char(text[end]):
                ok = False
        if ok:
            return True
        start = text.find(phrase, start + 1)
    return False
