"""The word-list language: casing, contractions, punctuation, numbers (checked string by string)."""
from __future__ import annotations

import pynini
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.fst.wordlist import language as W

from wordlist_oracle import _chars, _strings

WORDS = ["i", "am", "do", "not", "is", "you", "are", "cat", "the", "big", "well", "ok", "can", "London"]


@pytest.fixture(scope="module")
def dfa():
    return fst_to_dfa(W.word_list_fst(WORDS))


@pytest.mark.parametrize("text", [
    "the cat", "The cat is big.", "THE CAT IS BIG!", "I am.", "I'm ok", "i'm ok", "I\u2019m ok", "you're big",
    "don't", "Don't!", "can't", "the cat's", "LONDON is big", "London", "(the cat)", '"ok," you are',
    "the cat - the cat", "well-big", "3 cats"[:1] + " cat", "1,000 cats"[:5], "3.5", "the cat?!", "ok.\nok",
])
def test_accepts(dfa, text):
    assert dfa.accepts(text.encode()), text


@pytest.mark.parametrize("text", [
    "", " the cat", "the cat ", "the  cat", "tHe cat", "the dog", "london", "you'm", "the cat -the",
    "the cat,the cat", "cats", "the cat....", "((((the", "wasn't",
])
def test_rejects(dfa, text):
    assert not dfa.accepts(text.encode()), text


def test_contraction_needs_its_parts():
    without_not = fst_to_dfa(W.word_list_fst(["do", "i", "am"]))
    assert not without_not.accepts(b"don't") and without_not.accepts(b"I'm")
    without_am = fst_to_dfa(W.word_list_fst(["i", "do", "not"]))
    assert without_am.accepts(b"don't") and not without_am.accepts(b"I'm")


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet="abcXé-", min_size=1, max_size=4), min_size=1, max_size=6, unique=True))
def test_relabelled_case_variants_equal_explicit_forms(words):
    """The fast Title/UPPER construction has exactly the language of the listed forms."""
    words = [w for w in words if w.strip("-")]
    if not words:
        return
    fast = W.word_list_fst(words, punctuation=False, contractions=False, digits=False)
    forms = set()
    for w in words:
        forms |= W.cased_forms(w)
    slow = _strings(forms)
    text = (slow + pynini.closure(_chars(" \n") + slow)).optimize()
    assert pynini.equivalent(fast, text)
