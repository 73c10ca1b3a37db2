"""The word-boundary rule, in one place: which bytes are word bytes, where a phrase needs a
boundary, and what "the text contains the phrase" means (DESIGN.md).

Word bytes are ASCII letters and digits, the apostrophe ``'`` and the hyphen ``-``, and every
byte >= 0x80 (so multi-byte UTF-8 letters are word characters, and so are the typographic
apostrophe and dashes); every other byte is a non-word byte. The apostrophe and the hyphen join a
word: "jump's", "fenced-in" and a dangling "stand-" are one word each, so none of them contains
the phrase "jump", "fence(d)" or "stand" (issue 21: a forced lemma met through punctuation).

A phrase occurs "at word boundaries" when it is not glued to a word byte on a side where the
phrase itself starts / ends with a word byte; the start and end of the text count as boundaries.
Case-insensitive matching folds ASCII only.

numpy only at import time (the light compiler and the runtime-free checks use it); `contains_fst`
imports pynini when called.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "IS_WORD_BYTE",
    "NONWORD_LABELS",
    "boundary_needs",
    "contains_fst",
    "is_word_char",
    "occurs",
]

#: ``IS_WORD_BYTE[b]``: byte ``b`` is a word byte (ASCII letter or digit, ``'``, ``-``, or any
#: byte >= 0x80).
IS_WORD_BYTE = np.zeros(256, dtype=bool)
IS_WORD_BYTE[ord("0") : ord("9") + 1] = True
IS_WORD_BYTE[ord("A") : ord("Z") + 1] = True
IS_WORD_BYTE[ord("a") : ord("z") + 1] = True
IS_WORD_BYTE[[ord("'"), ord("-")]] = True
IS_WORD_BYTE[0x80:] = True
IS_WORD_BYTE.setflags(write=False)

#: The non-word bytes that can appear in text (byte 0 is OpenFst's epsilon label, never text).
NONWORD_LABELS = bytes(b for b in range(1, 256) if not IS_WORD_BYTE[b])


def boundary_needs(literal: bytes, word_boundary: bool = True) -> tuple[bool, bool]:
    """(boundary needed before, boundary needed after) ``literal``: only on a side where the
    literal starts / ends with a word byte, and only with ``word_boundary``."""
    if not word_boundary or not literal:
        return False, False
    return bool(IS_WORD_BYTE[literal[0]]), bool(IS_WORD_BYTE[literal[-1]])


def is_word_char(ch: str) -> bool:
    """The character-level twin of ``IS_WORD_BYTE`` (non-ASCII characters are word characters)."""
    return ch.isascii() and (ch.isalnum() or ch in "'-") or not ch.isascii()


def occurs(text: str, phrase: str, *, word_boundary: bool = True) -> bool:
    """Does ``phrase`` occur in ``text`` (case-sensitive; at word boundaries by default)?

    The plain-Python oracle of the rule (golden cases, grammar checks)."""
    if not phrase:
        return True
    left, right = boundary_needs(phrase.encode("utf-8"), word_boundary)
    start = text.find(phrase)
    while start != -1:
        end = start + len(phrase)
        glued_left = left and start > 0 and is_word_char(text[start - 1])
        glued_right = right and end < len(text) and is_word_char(text[end])
        if not glued_left and not glued_right:
            return True
        start = text.find(phrase, start + 1)
    return False


def contains_fst(text: str, *, word_boundary: bool = True, case_sensitive: bool = True):
    """pynini acceptor over bytes of every text that contains ``text`` (the rule above).

    The compiler checks requests with `fstbeam.compiler.light.phrase_dfa` instead; this form is for
    building grammars and for tests."""
    import pynini

    from .optimize import sigma_star

    sig = sigma_star()
    left_needed, right_needed = boundary_needs(text.encode("utf-8"), word_boundary)
    left = right = sig
    nonword = _byte_union(NONWORD_LABELS)
    if left_needed:
        left = pynini.union("", sig + nonword)
    if right_needed:
        right = pynini.union("", nonword + sig)
    return (left + _literal(text, case_sensitive) + right).optimize()


def _byte_union(chars: bytes):
    import pynini

    f = pynini.Fst()
    s, e = f.add_state(), f.add_state()
    f.set_start(s)
    f.set_final(e)
    one = pynini.Weight.one(f.weight_type())
    for b in sorted(set(chars)):
        f.add_arc(s, pynini.Arc(b, b, one, e))
    return f


def _literal(text: str, case_sensitive: bool):
    import pynini

    if case_sensitive:
        return pynini.accep(pynini.escape(text), token_type="byte")
    out = pynini.accep("")
    for b in text.encode("utf-8"):
        out = out + _byte_union(bytes({b, ord(chr(b).lower()), ord(chr(b).upper())}) if b < 128 else bytes([b]))
    return out.optimize()
