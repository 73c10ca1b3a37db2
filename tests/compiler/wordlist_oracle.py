"""The word-list language built the old way (unions and determinize/minimize over closures),
kept as the test oracle for the construction in `fstbeam.fst.wordlist.language`.

This is the builder fstbeam shipped before the linear-time construction (issue 15), unchanged
except for its name: tests compare the two languages with ``pynini.equivalent``.
"""
from __future__ import annotations

import logging
import time
from typing import Iterable

import pynini

from fstbeam.fst.wordlist import chars as T
from fstbeam.fst.wordlist.language import cased_forms, contraction_forms, normalize_entries

log = logging.getLogger("fstbeam.tests")


def _chars(chars: str) -> pynini.Fst:
    return pynini.union(*(pynini.accep(pynini.escape(c), token_type="byte") for c in chars)).optimize()


def _strings(strings: Iterable[str]) -> pynini.Fst:
    items = sorted(set(strings))
    if not items:
        return pynini.Fst()  # the empty language
    fst = pynini.string_map([pynini.escape(s) for s in items], input_token_type="byte", output_token_type="byte")
    return fst.project("input").optimize()


def _repeat(fst: pynini.Fst, max_times: int) -> pynini.Fst:
    return pynini.closure(fst, 0, max_times).optimize()


_LOWER = [ord(c) for c in "abcdefghijklmnopqrstuvwxyz"]


def _with_case_variants(lower: pynini.Fst) -> pynini.Fst:
    """lower | Title | UPPER for a DFA of ASCII lower-case strings."""
    if lower.num_states() == 0:
        return lower
    pairs = [(c, c - 32) for c in _LOWER]
    upper = lower.copy().relabel_pairs(ipairs=pairs, opairs=pairs)
    title = lower.copy()
    start = title.start()
    new_start = title.add_state()
    title.set_final(new_start, title.final(start))
    for arc in lower.arcs(start):
        label = arc.ilabel - 32 if arc.ilabel in _LOWER else arc.ilabel
        title.add_arc(new_start, pynini.Arc(label, label, arc.weight, arc.nextstate))
    title.set_start(new_start)
    return pynini.union(lower, title, upper).optimize()


def _numbers() -> pynini.Fst:
    """Digit runs joined by separators, then optionally "%" or an ordinal suffix. The suffix is
    chosen by intersecting with "what the number ends with" (an independent formulation of the
    construction's last-digit states): st after a 1 not preceded by a 1, th after 1x or 0/4-9."""
    d = pynini.closure(_chars(T.DIGITS), 1)
    core = pynini.concat(d, pynini.closure(pynini.concat(_chars(T.NUMBER_INNER), d))).optimize()
    any_ = pynini.closure(_chars(T.DIGITS + T.NUMBER_INNER))
    not_one = _chars(T.DIGITS.replace("1", "") + T.NUMBER_INNER)
    fresh = pynini.union(pynini.accep(""), any_ + not_one)  # the digit before the last is not a 1

    def ends(pattern: pynini.Fst) -> pynini.Fst:
        return pynini.intersect(core, pattern.optimize()).optimize()

    ordinals = [ends(fresh + pynini.accep(digit)) + pynini.accep(suffix) for digit, suffix in T.ORDINAL_SUFFIX.items()]
    th = pynini.union(any_ + pynini.accep("1") + _chars(T.DIGITS), fresh + _chars("0456789"))
    ordinals.append(ends(th) + pynini.accep(T.ORDINAL_OTHER))
    return pynini.union(core, core + _chars(T.PERCENT), *ordinals).optimize()


def word_list_fst_by_optimize(
    words: Iterable[str],
    *,
    case_variants: bool = True,
    punctuation: bool = True,
    contractions: bool = True,
    digits: bool = True,
) -> pynini.Fst:
    """Minimal DFA over bytes for running text made of ``words`` (see the module docstring)."""
    t0 = time.perf_counter()
    entries = normalize_entries(words)
    lower = {w.lower() for w in entries}
    if case_variants:
        # ASCII lower-case entries (nearly all of a dictionary) are compiled once and their
        # Title/UPPER variants made by relabelling arcs: three times fewer strings to minimize.
        plain = {w for w in entries if w.isascii() and w == w.lower()}
        other: set[str] = set()
        for w in set(entries) - plain:
            other |= cased_forms(w)
        word = _with_case_variants(_strings(plain))
        if other:
            word = pynini.union(word, _strings(other)).optimize()
        n_forms = 3 * len(plain) + len(other)
    else:
        word = _strings(entries)
        n_forms = len(set(entries))
    contracted: set[str] = set()
    if contractions:
        for form in contraction_forms(lower):
            contracted |= cased_forms(form) if case_variants else {form}
    if contractions and "is" in lower:  # possessive / "it's": 's after any word
        apos = pynini.union(*(pynini.accep(a, token_type="byte") for a in T.APOSTROPHES))
        s = _chars("sS")
        word = pynini.concat(word, pynini.closure(pynini.concat(apos, s), 0, 1))
    pieces = [word]
    if contracted:
        pieces.append(_strings(contracted))
    if digits:
        pieces.append(_numbers())
    word = pynini.union(*pieces).optimize()

    space = _chars(T.SPACES)
    if punctuation:
        close = _repeat(_chars(T.CLOSING), T.MAX_CLOSING)
        open_ = _repeat(_chars(T.OPENING), T.MAX_OPENING)
        # "word, word" / "word (word" / a spaced dash "word - word" / "well-known"
        dash = pynini.closure(_chars(T.JOINERS) + _chars(" "), 0, 1)
        gap = pynini.union(close + space + dash + open_, _chars(T.JOINERS))
        text = open_ + word + pynini.closure(gap + word) + close
    else:
        text = word + pynini.closure(space + word)
    text = text.optimize()
    log.info(
        "word list: %d entries, %d forms -> %d states in %.3f s",
        len(entries), n_forms + len(contracted), text.num_states(), time.perf_counter() - t0,
    )
    return text
