"""Word lists as character automata: words from the list separated by spaces and punctuation.

The language, over bytes:

    text  = OPEN{0,2} word (gap word)* CLOSE{0,3}
    gap   = CLOSE{0,3} SPACE ("- ")? OPEN{0,2}  |  JOINER
    word  = listed form (lower / Title / UPPER) ['s] | contraction | number
    number = digits ([.,:] digits)* ("%" | st | nd | rd | th)?

Contractions are allowed when their parts are: "don't" needs "do" and "not", "I'm" needs
"i" and "am". Numbers are digits with optional inner separators (3.5, 1,000, 6:30), then
optionally ``%`` or an ordinal suffix that agrees with the last digits (10%, 1st, 2nd, 11th).

Built in time linear in the list (docs/compiler.md, "Word lists at lexicon scale"): the forms
become one minimal acyclic DFA (`acyclic`), and the text DFA is assembled around it
(`text_dfa`) without determinizing closures. No Python object per word outlives the parsing.
"""
from __future__ import annotations

import logging
import time
from typing import Iterable

import numpy as np
import pynini

from ...errors import SpecError
from ..vector_fst import vector_fst_bytes
from . import chars as T
from .acyclic import forms_array, minimal_acyclic_dfa
from .text_dfa import Control, TextDFA, text_dfa

log = logging.getLogger("fstbeam.fst")

def cased_forms(word: str) -> set[str]:
    """lower, Title and UPPER forms; a form written with capitals (a name) keeps its own casing."""
    if word != word.lower():
        return {word, word.upper()}
    return {word, word[:1].upper() + word[1:], word.upper()}


def contraction_forms(words: set[str]) -> set[str]:
    """Contracted forms whose parts are all in ``words`` (lowercase), e.g. don't, I'm, we'll."""
    forms: set[str] = set()
    for apo in T.APOSTROPHES:
        for suffix, (full, hosts) in T.CONTRACTIONS.items():
            if full not in words or hosts is None:
                continue
            for host in hosts:
                if host in words:
                    forms.add(f"{host}{apo}{suffix}")
        if "not" in words:
            for host in T.NEGATABLE:
                if T.IRREGULAR_NEGATIVE_HOSTS.get(host, host) in words:
                    forms.add(f"{host}n{apo}t")
    return forms


def normalize_entries(entries: Iterable[str], *, source: str = "word list") -> list[str]:
    """Strip and validate entries; an empty result is an error naming the source."""
    stripped = [raw.strip() for raw in entries]
    if "\x00" in "".join(stripped):  # one scan; the line number only when there is an error
        n = next(i for i, w in enumerate(stripped, 1) if "\x00" in w)
        raise SpecError(f"{source}:{n}: entry contains a NUL byte, which no text can spell")
    words = [w for w in stripped if w and w[0] != "#"]
    if not words:
        raise SpecError(f"{source} has no words: give at least one entry (one per line)")
    return words


def _encoded(entries: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(UTF-8 forms as an ``S`` array, bool: the entry is ASCII lower case) without a Python
    object per entry: one join, then numpy over the bytes (entries hold no NUL, the separator)."""
    buf = np.frombuffer("\x00".join(entries).encode("utf-8") + b"\x00", np.uint8)
    ends = np.flatnonzero(buf == 0)
    starts = np.r_[0, ends[:-1] + 1]
    lens = ends - starts
    row = np.repeat(np.arange(len(entries)), lens)
    col = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    data = buf[buf != 0]
    mat = np.zeros((len(entries), max(int(lens.max()), 1)), np.uint8)
    mat[row, col] = data
    odd = (data >= 0x80) | ((data >= ord("A")) & (data <= ord("Z")))
    plain = np.bincount(row, weights=odd, minlength=len(entries)) == 0
    return mat.view(f"S{mat.shape[1]}").ravel(), plain


def _case_expanded(low: np.ndarray) -> np.ndarray:
    """lower, Title and UPPER forms of ASCII lower-case words, made on the byte matrix."""
    if not len(low):
        return low
    mat = low.view(np.uint8).reshape(len(low), low.dtype.itemsize)
    letter = (mat >= ord("a")) & (mat <= ord("z"))
    upper = np.where(letter, mat - 32, mat).astype(np.uint8)
    title = mat.copy()
    title[:, 0] = upper[:, 0]
    return np.concatenate([low, title.view(low.dtype).ravel(), upper.view(low.dtype).ravel()])


def _word_forms(entries: list[str], case_variants: bool) -> np.ndarray:
    forms, plain = _encoded(entries)
    if not case_variants:
        return forms
    # ASCII lower-case entries (nearly all of a dictionary) get their variants in numpy.
    other: set[str] = set()
    for i in np.flatnonzero(~plain).tolist():
        other |= cased_forms(entries[i])
    extra = forms_array(f.encode("utf-8") for f in sorted(other))
    expanded = _case_expanded(forms[plain])
    return np.concatenate([expanded, extra]) if len(extra) else expanded


def _control(contracted: set[str], *, punctuation: bool, digits: bool, possessive: bool, leading_space: bool):
    """The NFA around the word DFA: (nfa, start, enter, base_end); see the module docstring."""
    k = Control()
    start, word, enter, base_end, end = (k.add() for _ in range(5))
    k.epsilon(word, enter)
    k.epsilon(base_end, end)
    if possessive:  # "'s" after any listed word (it's, Tom's)
        apo = k.add()
        k.chars(base_end, apo, T.APOSTROPHES)
        k.chars(apo, end, "sS")
    if contracted:  # a trie, so that contractions sharing a prefix share states
        root, nodes = k.add(), {}
        k.epsilon(word, root)
        for form in sorted(contracted):
            q = root
            for b in form.encode("utf-8"):
                nxt = nodes.get((q, b))
                if nxt is None:
                    nxt = nodes[q, b] = k.add()
                    k.arcs[q].setdefault(b, set()).add(nxt)
                q = nxt
            k.epsilon(q, end)
    if digits:
        _numbers(k, word, end)
    if punctuation:
        opening = [k.add() for _ in range(T.MAX_OPENING + 1)]
        for i, q in enumerate(opening):
            k.epsilon(q, word)
            if i < T.MAX_OPENING:
                k.chars(q, opening[i + 1], T.OPENING)
        k.epsilon(start, opening[0])
        closing = [k.add() for _ in range(T.MAX_CLOSING + 1)]
        k.epsilon(end, closing[0])
        spaced, dash, dash_space = k.add(), k.add(), k.add()
        for i, q in enumerate(closing):
            k.final.add(q)
            k.chars(q, spaced, T.SPACES)
            if i < T.MAX_CLOSING:
                k.chars(q, closing[i + 1], T.CLOSING)
        k.epsilon(spaced, opening[0])
        k.chars(spaced, dash, T.JOINERS)  # a spaced dash: "word - word"
        k.chars(dash, dash_space, " ")
        k.epsilon(dash_space, opening[0])
        k.chars(end, word, T.JOINERS)  # "well-known"
    else:
        k.epsilon(start, word)
        k.final.add(end)
        k.chars(end, word, T.SPACES)
    if leading_space:
        first = k.add()
        k.chars(first, start, " ")
        k.epsilon(first, start)
        start = first
    return k, start, enter, base_end


def _numbers(k: Control, word: int, end: int) -> None:
    """Numbers in digits between ``word`` and ``end``: digit runs joined by separators (3.5,
    1,000, 6:30), optionally followed by ``%`` or the ordinal suffix their last digits take.

    One state per (last digit, was the digit before it a 1): "1" -> st, but "11" -> th."""
    last = {d: k.add() for d in "123o"}  # last digit 1, 2, 3, other; the one before is not a 1
    teen1, teen = k.add(), k.add()  # the digit before the last is a 1 ("11", "12".."19")
    inner, suffix = k.add(), k.add()

    def digit_arcs(src: int, after_one: bool) -> None:
        for d in T.DIGITS:
            if after_one:
                dst = teen1 if d == "1" else teen
            else:
                dst = last.get(d, last["o"])
            k.chars(src, dst, d)

    digit_arcs(word, False)
    digit_arcs(inner, False)
    for q, after_one in ((last["1"], True), (teen1, True), (last["2"], False), (last["3"], False),
                         (last["o"], False), (teen, False)):
        digit_arcs(q, after_one)
        k.chars(q, inner, T.NUMBER_INNER)
        k.chars(q, suffix, T.PERCENT)
        k.epsilon(q, end)
    for d, q in last.items():
        k.text(q, suffix, T.ORDINAL_SUFFIX.get(d, T.ORDINAL_OTHER).encode())
    for q in (teen1, teen):
        k.text(q, suffix, T.ORDINAL_OTHER.encode())
    k.epsilon(suffix, end)


def word_list_dfa(
    words: Iterable[str],
    *,
    case_variants: bool = True,
    punctuation: bool = True,
    contractions: bool = True,
    digits: bool = True,
    leading_space: bool = False,
) -> TextDFA:
    """DFA over bytes for running text made of ``words`` (see the module docstring), as arrays.

    ``leading_space``: the text may start with one space."""
    t0 = time.perf_counter()
    entries = normalize_entries(words)
    log.info("word list: %d entries", len(entries))  # a progress line before a long compile
    lower = {w.lower() for w in entries}
    forms = _word_forms(entries, case_variants)
    contracted: set[str] = set()
    if contractions:
        for form in contraction_forms(lower):
            contracted |= cased_forms(form) if case_variants else {form}
    possessive = contractions and "is" in lower
    del entries, lower
    t1 = time.perf_counter()
    wdfa = minimal_acyclic_dfa(forms)
    del forms
    t2 = time.perf_counter()
    k, start, enter, base_end = _control(
        contracted, punctuation=punctuation, digits=digits, possessive=possessive, leading_space=leading_space
    )
    dfa = text_dfa(wdfa, k, start=start, enter=enter, base_end=base_end)
    log.info(
        "word list: %d word states -> %d text states, %d arcs (forms %.2f s, words %.2f s, text %.2f s)",
        wdfa.num_states, dfa.num_states, dfa.num_arcs, t1 - t0, t2 - t1, time.perf_counter() - t2,
    )
    return dfa


def text_dfa_fst_bytes(dfa: TextDFA) -> bytes:
    """The DFA in OpenFst's binary VectorFst format (what artifacts store)."""
    return vector_fst_bytes(dfa.num_states, 0, dfa.final, dfa.src, dfa.byte.astype(np.int64), dfa.dst)


def word_list_fst(words: Iterable[str], **options) -> pynini.Fst:
    """`word_list_dfa` as a pynini acceptor (deterministic, arcs sorted by label); ``options`` are
    `word_list_dfa`'s (case_variants, punctuation, contractions, digits, leading_space)."""
    return pynini.Fst.read_from_string(text_dfa_fst_bytes(word_list_dfa(words, **options)))
