"""Regular English inflection as ordered rewrite rules (``pynini.cdrewrite``).

A form is spelled as ``lemma+suffix`` and a cascade of spelling rules turns it into text:

    city+s   -> cities     (y -> ie after a consonant, before +s)
    box+s    -> boxes      (e inserted after s x z ch sh, before +s)
    carry+ed -> carried    (y -> i after a consonant, before a suffix starting with e)
    bake+ed  -> baked      (a final e merges with a suffix starting with e)
    make+ing -> making     (a final e after a consonant drops before +ing)
    die+ing  -> dying      (ie -> y before +ing)
    stop+ed  -> stopped    (one-syllable words ending consonant-vowel-consonant double it)
    big+er   -> bigger

Each rule is one ``cdrewrite(change, left, right, sigma)``; the cascade is their composition, in
order. Irregular forms (``go`` -> ``went``) are data, not rules: see the ``inflection`` grammar.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from pathlib import Path

import pynini

from ...errors import GrammarError
from ...fst.optimize import optimize, sigma_star
from .fsts import accep, chars, strings
from .tsv import read_tsv

__all__ = [
    "CLASS_TAGS",
    "IRREGULAR_TSV",
    "SUFFIXES",
    "TAGS",
    "forms",
    "inflect",
    "read_irregular",
    "spelling_rules",
]

IRREGULAR_TSV = Path(__file__).resolve().parent / "data" / "english_irregular.tsv"
"""Irregular English forms shipped with fstbeam: ``lemma<TAB>tag<TAB>form``."""

# Tag -> suffix. PAST and PPART share "-ed" for regular verbs.
SUFFIXES = {
    "PL": "s",      # noun plural: cats
    "3SG": "s",     # verb, 3rd person singular present: walks
    "PAST": "ed",   # walked
    "PPART": "ed",  # (has) walked
    "ING": "ing",   # walking
    "CMP": "er",    # adjective comparative: taller
    "SUP": "est",   # superlative: tallest
}
TAGS = tuple(SUFFIXES)
# Which tags each word class takes.
CLASS_TAGS = {
    "noun": ("PL",),
    "verb": ("3SG", "PAST", "PPART", "ING"),
    "adj": ("CMP", "SUP"),
}

_VOWELS = "aeiou"
_CONSONANTS = "bcdfghjklmnpqrstvwxyz"
_MARK = "+"


def _rule(change: pynini.Fst, left, right) -> pynini.Fst:
    return pynini.cdrewrite(change, left, right, sigma_star())


@functools.cache
def _spelling_rules() -> pynini.Fst:
    v, c = chars(_VOWELS), chars(_CONSONANTS)
    plus = accep(_MARK)
    e_suffix = plus + accep("e")  # +ed, +er, +est
    rules = [
        # city+s -> citie+s ; day+s stays (vowel before y)
        _rule(pynini.cross("y", "ie"), c, plus + accep("s")),
        # carry+ed -> carri+ed ; happy+er -> happi+er ; not before +ing (carrying)
        _rule(pynini.cross("y", "i"), c, e_suffix),
        # box+s -> boxe+s ; church+s -> churche+s
        _rule(pynini.cross("", "e"), chars("sxz") | accep("ch") | accep("sh"), plus + accep("s")),
    ]
    # stop+ed -> stopp+ed ; big+er -> bigg+er: a one-syllable word (start, consonants, one
    # vowel, one consonant) doubles its last consonant before a suffix starting with a vowel.
    # "[BOS]" is cdrewrite's beginning-of-string marker; w, x and y never double. This runs
    # before the e-deletion below, or bake+ed -> bak+ed would then double to "bakked".
    vowel_suffix = plus + v
    for last in "bdgklmnprtvz":
        left = pynini.accep("[BOS]") + pynini.closure(c) + v + accep(last)
        rules.append(_rule(pynini.cross("", last), left, vowel_suffix))
    rules += [
        # die+ing -> dy+ing
        _rule(pynini.cross("ie", "y"), "", plus + accep("ing")),
        # bake+ed -> bak+ed ; nice+er -> nic+er ; free+ed -> fre+ed
        _rule(pynini.cross("e", ""), "", e_suffix),
        # make+ing -> mak+ing ; see+ing keeps its e (a vowel before it)
        _rule(pynini.cross("e", ""), c, plus + accep("ing")),
    ]
    # Finally the boundary marker disappears: stopp+ed -> stopped.
    rules.append(_rule(pynini.cross(_MARK, ""), "", ""))
    cascade = rules[0]
    for rule in rules[1:]:
        cascade = pynini.compose(cascade, rule)
    return cascade.optimize()


def spelling_rules() -> pynini.Fst:
    """The whole cascade as one transducer: ``lemma+suffix`` -> spelled form."""
    return _spelling_rules().copy()


def inflect(lemmas: pynini.Fst, tag: str, *, before: pynini.Fst | None = None) -> pynini.Fst:
    """The regular ``tag`` forms of every lemma in ``lemmas`` (an acceptor), e.g. PL of
    ``{city, box}`` is ``{cities, boxes}``.

    ``before``: an extra rule (a transducer over ``lemma+suffix`` strings, e.g. a ``cdrewrite``)
    applied before the shared spelling rules; this is how a grammar adds its own rule.
    """
    if tag not in SUFFIXES:
        raise ValueError(f"unknown tag {tag!r}: use one of {', '.join(TAGS)}")
    marked = lemmas + accep(_MARK + SUFFIXES[tag])
    if before is not None:
        marked = pynini.compose(marked, before)
    return optimize(pynini.compose(marked, _spelling_rules()).project("output"), stage=f"inflect {tag}")


def read_irregular(path: str | os.PathLike = IRREGULAR_TSV) -> dict[tuple[str, str], tuple[str, ...]]:
    """``(lemma, tag) -> forms`` from a ``lemma<TAB>tag<TAB>form`` file (errors name file:line)."""
    out: dict[tuple[str, str], list[str]] = {}
    for row in read_tsv(path, columns=3, names=("lemma", "tag", "form")):
        lemma, tag, form = row.fields
        if tag not in SUFFIXES:
            raise GrammarError(f"{row.where}: unknown tag {tag!r}; valid tags: {', '.join(TAGS)}")
        out.setdefault((lemma, tag), [])
        if form not in out[(lemma, tag)]:
            out[(lemma, tag)].append(form)
    return {k: tuple(v) for k, v in out.items()}


def forms(
    lemmas: Iterable[str],
    tag: str,
    irregular: dict[tuple[str, str], tuple[str, ...]] | None = None,
    *,
    before: pynini.Fst | None = None,
) -> set[str]:
    """The ``tag`` forms of ``lemmas`` as strings: irregular forms where listed, else regular."""
    irregular = irregular or {}
    lemmas = set(lemmas)
    listed = {lemma for lemma in lemmas if (lemma, tag) in irregular}
    out = {form for lemma in listed for form in irregular[(lemma, tag)]}
    regular = lemmas - listed
    if regular:
        fst = inflect(strings(regular), tag, before=before)
        out.update(fst.paths().ostrings())
    return out
