"""The shared building blocks in fstbeam/grammars/lib (table-driven, one comment per case)."""
from __future__ import annotations

import pynini
import pytest

from fstbeam.errors import GrammarError
from fstbeam.fst.inspect import accepted_strings, accepts
from fstbeam.grammars.lib import casing, filters, inflection, numbers
from fstbeam.grammars.lib.fsts import accep, chars, strings
from fstbeam.grammars.lib.phrases import occurs
from fstbeam.grammars.lib.tsv import read_tsv, tsv_acceptor, tsv_transducer

# --------------------------------------------------------------------------- inflection

INFLECTIONS = [
    ("city", "PL", "cities"),  # y -> ie after a consonant
    ("day", "PL", "days"),  # ... but not after a vowel
    ("box", "PL", "boxes"),  # e inserted after x
    ("church", "PL", "churches"),  # ... and after ch
    ("carry", "PAST", "carried"),  # y -> i before -ed
    ("carry", "ING", "carrying"),  # y stays before -ing
    ("bake", "PAST", "baked"),  # final e merges with -ed (and does not double: not "bakked")
    ("make", "ING", "making"),  # final e drops before -ing
    ("see", "ING", "seeing"),  # ... but not after a vowel
    ("die", "ING", "dying"),  # ie -> y before -ing
    ("stop", "PAST", "stopped"),  # one-syllable CVC doubles
    ("visit", "PAST", "visited"),  # two syllables: no doubling
    ("rain", "ING", "raining"),  # two vowels: no doubling
    ("fix", "ING", "fixing"),  # x never doubles
    ("big", "CMP", "bigger"),
    ("happy", "SUP", "happiest"),
    ("walk", "3SG", "walks"),
]


@pytest.mark.parametrize(("lemma", "tag", "form"), INFLECTIONS, ids=[f"{a}+{b}" for a, b, _ in INFLECTIONS])
def test_regular_inflection(lemma, tag, form):
    assert accepted_strings(inflection.inflect(strings([lemma]), tag), 5) == [form]


def test_irregular_forms_replace_regular_ones():
    table = inflection.read_irregular()
    assert inflection.forms(["go", "walk"], "PAST", table) == {"went", "walked"}
    assert inflection.forms(["child"], "PL", table) == {"children"}
    assert inflection.forms(["child"], "PL", {}) == {"childs"}


def test_irregular_table_errors(tmp_path):
    bad = tmp_path / "irr.tsv"
    bad.write_text("go\tPAST\twent\ngo\tPASTT\twent\n", encoding="utf-8")
    with pytest.raises(GrammarError, match=r"irr.tsv:2: unknown tag 'PASTT'"):
        inflection.read_irregular(bad)


# --------------------------------------------------------------------------- numbers

NUMERALS = [
    ("7", True),
    ("007", True),  # leading zeros are fine without separators
    ("1,000", True),
    ("1,234,567.89", True),
    ("1,00", False),  # groups after the first have three digits
    ("01,000", False),  # no leading zero in a grouped number
    ("1.2.3", False),  # one decimal point at most
    (".5", False),  # a decimal needs its integer part
    ("", False),
]


@pytest.mark.parametrize(("text", "ok"), NUMERALS)
def test_numeral(text, ok):
    assert accepts(numbers.numeral(), text) is ok


ORDINALS = [
    ("1st", True), ("2nd", True), ("3rd", True), ("4th", True),
    ("11th", True), ("12th", True), ("13th", True),  # the teens take -th
    ("21st", True), ("101st", True), ("111th", True),
    ("11st", False), ("3th", False), ("2st", False),
]


@pytest.mark.parametrize(("text", "ok"), ORDINALS)
def test_ordinal_digits(text, ok):
    assert accepts(numbers.ordinal_digits(pynini.closure(numbers.DIGIT(), 1)), text) is ok


WORDS = [
    ("zero", True),
    ("twenty-one", True),
    ("twenty one", False),  # the hyphen is required
    ("a hundred and five", True),
    ("one hundred five", True),
    ("nine hundred ninety-nine thousand", True),
    ("two million and one", True),
    ("ten hundred", False),
    ("one thousand thousand", False),
    ("a", False),
]


@pytest.mark.parametrize(("text", "ok"), WORDS)
def test_cardinal_words(text, ok):
    assert accepts(numbers.cardinal_words(), text) is ok


def test_cardinal_words_max_scale():
    thousands = numbers.cardinal_words(max_scale="thousand")
    assert accepts(thousands, "five thousand") and not accepts(thousands, "five million")


# --------------------------------------------------------------------------- filters, casing


def test_only_valid_checks_maximal_occurrences_only():
    d = chars("0123456789")
    two_digits = filters.only_valid(pynini.closure(d, 1), d + d, not_after=d, not_before=d)
    assert accepts(two_digits, "a 12 b 34")
    assert not accepts(two_digits, "a 123 b")  # the maximal run is 3 digits, though "12" is valid
    assert accepts(two_digits, "no digits")


def test_contains_and_avoids():
    cat = accep("cat")
    assert accepts(filters.contains(cat), "a cat!") and not accepts(filters.contains(cat), "a dog")
    assert accepts(filters.avoids(cat), "a dog") and not accepts(filters.avoids(cat), "concatenate")


def test_case_variants_cover_latin_letters():
    lang = casing.with_case_variants(strings(["élan", "may 3"]))
    assert set(accepted_strings(lang, 10)) == {"élan", "Élan", "ÉLAN", "may 3", "May 3", "MAY 3"}
    assert accepted_strings(casing.capitalized(strings(["3rd"])), 5) == ["3rd"]  # no letter first: unchanged


# --------------------------------------------------------------------------- tsv, phrases


def test_read_tsv_skips_comments_and_blank_lines(tmp_path):
    p = tmp_path / "d.tsv"
    p.write_text("\ufeff# header\n\na\tb\r\n#x\nc\td\n", encoding="utf-8")
    rows = read_tsv(p, columns=2)
    assert [r.fields for r in rows] == [("a", "b"), ("c", "d")] and [r.line for r in rows] == [3, 5]
    assert accepted_strings(tsv_acceptor(p, columns=2), 5) == ["a", "c"]
    assert accepted_strings(pynini.project(tsv_transducer(p), "output"), 5) == ["b", "d"]


def test_read_tsv_errors(tmp_path):
    p = tmp_path / "d.tsv"
    p.write_text("a\tb\n\tc\n", encoding="utf-8")
    with pytest.raises(GrammarError, match=r"d.tsv:2: lemma is empty"):
        read_tsv(p, columns=2, names=("lemma", "class"))
    with pytest.raises(GrammarError, match=r"does not exist"):
        read_tsv(tmp_path / "missing.tsv", columns=1)


OCCURS = [
    ("sign in now", "sign in", True),
    ("signing in", "sign in", False),  # glued to letters
    ("e-mails", "e-mail", False),
    ("(e-mail)", "e-mail", True),  # punctuation is a boundary
    ("naïve", "na", False),  # non-ASCII letters are word characters
    ("x.ray", ".ray", True),  # a phrase starting with punctuation needs no boundary there
    ("x-ray", "ray", False),  # the hyphen and the apostrophe join a word (issue 21)
    ("He jump's", "jump", False),
    ("He is stand- ", "stand", False),
    ("a fenced-in area", "fenced", False),
    ("'fence'", "fence", False),  # (as with typographic quotes: ’fence’)
    ("the dog's bowl", "dog's", True),
]


@pytest.mark.parametrize(("text", "phrase", "found"), OCCURS)
def test_occurs_at_word_boundaries(text, phrase, found):
    assert occurs(text, phrase) is found
