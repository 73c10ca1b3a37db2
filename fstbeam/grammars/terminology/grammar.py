"""Terminology from a glossary: approved terms that must appear, forbidden variants to avoid.

The glossary is a TSV file with one row per term (``data/example_terms.tsv`` shows it)::

    term<TAB>forbidden variants, comma-separated<TAB>required (yes/no, default yes)

This grammar has no language of its own: it returns must-appear ``phrases`` (the required
terms) and ``avoid`` phrases (the forbidden variants, also Capitalized and UPPER CASE unless
``case_variants=false``). Combine it with a word list or another grammar for the vocabulary.
"""
from __future__ import annotations

from pathlib import Path

from fstbeam.errors import GrammarError
from fstbeam.grammars import GrammarParts
from fstbeam.grammars.lib.phrases import occurs
from fstbeam.grammars.lib.tsv import read_tsv

_DATA = Path(__file__).resolve().parent / "data"
_YES, _NO = {"yes", "y", "true", "1", ""}, {"no", "n", "false", "0"}


def _variants(text: str, case_variants: bool) -> list[str]:
    if not case_variants:
        return [text]
    return list(dict.fromkeys([text, text[:1].upper() + text[1:], text.upper()]))


def build(path: Path = _DATA / "example_terms.tsv", require: bool = True, case_variants: bool = True) -> GrammarParts:
    """``path``: the glossary TSV. ``require``: make the required terms must-appear phrases
    (false: only avoid the forbidden variants). ``case_variants``: also forbid the Capitalized
    and UPPER CASE forms of each variant (except where that is the term's own Capitalized or
    UPPER CASE form: ``E-Mail`` forbids ``E-Mail`` but not ``E-MAIL``, the upper-case term)."""
    phrases: list[str] = []
    avoid: list[str] = []
    rows = read_tsv(path, columns=(1, 3), names=("term", "forbidden variants", "required"))
    if not rows:
        raise GrammarError(f"{path} has no terms: add lines term<TAB>variant, variant")
    for row in rows:
        term = row.fields[0].strip()
        variants = [v.strip() for v in row.fields[1].split(",")] if len(row.fields) > 1 else []
        if any(not v for v in variants) and row.fields[1].strip():
            raise GrammarError(f"{row.where}: empty variant in {row.fields[1]!r} (two commas in a row?)")
        variants = [v for v in variants if v]
        flag = row.fields[2].strip().lower() if len(row.fields) > 2 else ""
        if flag not in _YES | _NO:
            raise GrammarError(f"{row.where}: required must be yes or no, not {row.fields[2]!r}")
        term_forms = set(_variants(term, True))
        for variant in variants:
            # A forbidden variant inside the approved term would forbid the term itself.
            if occurs(term, variant):
                raise GrammarError(
                    f"{row.where}: forbidden variant {variant!r} occurs inside the term {term!r}, "
                    "so the term could never be written; remove the variant"
                )
            for form in _variants(variant, case_variants):
                # E-Mail -> E-MAIL is the upper-case term itself: keep that one allowed.
                if form == variant or (form not in term_forms and not occurs(term, form)):
                    avoid.append(form)
        if require and flag in _YES:
            phrases.append(term)
    return GrammarParts(language=None, phrases=tuple(dict.fromkeys(phrases)), avoid=tuple(dict.fromkeys(avoid)))
