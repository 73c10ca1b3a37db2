"""The linear-time word-list construction accepts exactly the language of the old builder.

Three independent oracles: the old determinize/minimize builder (pynini ``equivalent``), a
regular expression written from the language's definition (brute force over every short
string), and pynini's own minimal automaton of a finite set (state counts).
"""
from __future__ import annotations

import itertools
import re

import numpy as np
import pynini
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstbeam.compiler.char_dfa import text_to_dfa
from fstbeam.fst.wordlist import chars as T
from fstbeam.fst.wordlist.acyclic import forms_array, minimal_acyclic_dfa
from fstbeam.fst.wordlist.language import (
    cased_forms,
    contraction_forms,
    word_list_dfa,
    word_list_fst,
)

from wordlist_oracle import word_list_fst_by_optimize

# Letters, the bytes the separators use (' - . space), a digit, a multi-byte letter and the
# typographic apostrophe: entries that overlap the separators are where construction is subtle.
ALPHABET = "abX'-. 1é’s"
HOSTS = ["i", "am", "do", "not", "is", "can", "will", "you", "are", "it"]
OPTIONS = ("case_variants", "punctuation", "contractions", "digits")

entries = st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=4), min_size=1, max_size=6)
hosts = st.lists(st.sampled_from(HOSTS), max_size=5, unique=True)
flags = st.fixed_dictionaries({k: st.booleans() for k in OPTIONS})


def _usable(words: list[str]) -> list[str]:
    return [w for w in words if w.strip()]


def _language(dfa) -> set[bytes]:
    out: set[bytes] = set()

    def walk(q: int, prefix: bytes) -> None:
        if dfa.final[q]:
            out.add(prefix)
        for i in range(dfa.ptr[q], dfa.ptr[q + 1]):
            walk(int(dfa.next[i]), prefix + bytes([dfa.byte[i]]))

    walk(dfa.start, b"")
    return out


@settings(max_examples=60, deadline=None)
@given(st.sets(st.text(alphabet="abcé", min_size=0, max_size=5), min_size=1, max_size=12))
def test_acyclic_dfa_is_the_minimal_automaton_of_the_set(forms):
    encoded = {f.encode() for f in forms if f}
    if not encoded:
        return
    dfa = minimal_acyclic_dfa(forms_array(sorted(encoded, reverse=True)))
    assert _language(dfa) == encoded
    ref = pynini.string_map([pynini.escape(f.decode()) for f in encoded]).optimize()
    assert dfa.num_states == ref.num_states()


@settings(max_examples=80, deadline=None)
@given(entries, hosts, flags, st.booleans())
def test_same_language_as_the_optimize_builder(words, host_words, options, leading_space):
    words = _usable(words + host_words)
    if not words:
        return
    new = word_list_fst(words, leading_space=leading_space, **options)
    old = word_list_fst_by_optimize(words, **options)
    if leading_space:
        old = (pynini.closure(pynini.accep(" "), 0, 1) + old).optimize()
    assert pynini.equivalent(new, old), (words, options, leading_space)


def _regex(words: list[str], *, case_variants=True, punctuation=True, contractions=True, digits=True) -> re.Pattern:
    """The module docstring's grammar, written as a regular expression over characters."""
    words = [w.strip() for w in words]
    forms = set().union(*(cased_forms(w) for w in words)) if case_variants else set(words)
    lower = {w.lower() for w in words}
    contracted = set()
    if contractions:
        for c in contraction_forms(lower):
            contracted |= cased_forms(c) if case_variants else {c}

    def alt(xs):
        return "(?:" + "|".join(re.escape(x) for x in sorted(xs, key=len, reverse=True)) + ")"

    word = alt(forms) + ("(?:['\u2019][sS])?" if contractions and "is" in lower else "")
    if contracted:
        word += "|" + alt(contracted)
    if digits:
        ordinal = r"(?:(?<=1)(?<!11)st|(?<=2)(?<!12)nd|(?<=3)(?<!13)rd|(?:(?<=1[0-9])|(?<=[04-9]))th)"
        word += rf"|[0-9]+(?:[.,:][0-9]+)*(?:%|{ordinal})?"
    word = f"(?:{word})"
    if not punctuation:
        return re.compile(f"{word}(?:[ \\n]{word})*", re.S)
    close, open_ = f"[{re.escape(T.CLOSING)}]{{0,3}}", f"[{re.escape(T.OPENING)}]{{0,2}}"
    gap = f"(?:{close}[ \\n](?:- )?{open_}|-)"
    return re.compile(f"{open_}{word}(?:{gap}{word})*{close}", re.S)


@pytest.mark.parametrize("words,options", [
    (["a", "ab", "a-b", "b'", "is", "s"], {}),  # entries containing the joiner and an apostrophe
    (["a.", "b", "1a"], {}),  # an entry ending in closing punctuation; one that starts like a number
    (["I", "am", "do", "not", "is", "b"], {}),  # contractions (I'm, don't, isn't) and the possessive
    (["'a", "a-", "b"], {"case_variants": False}),  # opening mark inside an entry; joiner at its end
    (["a b", "b"], {"punctuation": False}),  # an entry with a space, no punctuation
    (["ab", "b1"], {"digits": False, "contractions": False}),
])
def test_brute_force_against_the_definition(words, options):
    dfa = text_to_dfa(word_list_dfa(words, **options))
    pattern = _regex(words, **options)
    chars = sorted(set("".join(words)) | set("'- .1s\u2019S"))
    for n in range(0, 6):
        for t in itertools.product(chars, repeat=n):
            text = "".join(t)
            assert dfa.accepts(text.encode()) == bool(pattern.fullmatch(text)), (words, text)


def test_numbers_brute_force_against_the_definition():
    """Times, decimals, percentages and ordinals in digits: every text of up to 4 characters."""
    words = ["a", "st"]
    dfa = text_to_dfa(word_list_dfa(words))
    pattern = _regex(words)
    for n in range(0, 5):
        for t in itertools.product("a124:.,%sthnd ", repeat=n):
            text = "".join(t)
            assert dfa.accepts(text.encode()) == bool(pattern.fullmatch(text)), text
    for text in ("6:30", "3.5", "10%", "2nd", "1st", "3rd", "11th", "12th", "13th", "21st", "101st", "1,000th",
                 "3.5%", "A 6:30, a", "a 2nd a."):
        assert dfa.accepts(text.encode()), text
    for text in ("2th", "11st", "12nd", "13rd", "1th", "10 %", "1%%", "5th%", "6::30", "2nd2"):
        assert not dfa.accepts(text.encode()), text


@settings(max_examples=30, deadline=None)
@given(entries, hosts, flags)
def test_deterministic_and_trimmed_by_construction(words, host_words, options):
    words = _usable(words + host_words)
    if not words:
        return
    dfa = word_list_dfa(words, **options)
    key = dfa.src * 256 + dfa.byte
    assert np.all(np.diff(key) > 0)  # sorted, and never two arcs on one byte from one state
    assert dfa.byte.min() >= 1
    reached = np.zeros(dfa.num_states, bool)
    reached[0] = True
    reached[dfa.dst] = True
    assert reached.all()  # every state is entered (or is the start)
