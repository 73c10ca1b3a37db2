"""Regular and irregular English inflection over your own lemma list (a pynini rewrite example).

Reads ``lemma<TAB>class`` lines (``data/lemmas.tsv`` by default) and accepts running text made
of every form of every lemma: ``cat cats``, ``carry carries carried carrying``, ``big bigger
biggest``. Regular forms come from the spelling rules in ``fstbeam/grammars/lib/inflection.py``
(``pynini.cdrewrite`` cascades); irregular forms (``child -> children``, ``go -> went``) from a
``lemma<TAB>tag<TAB>form`` table. This file adds one rule of its own, for the class ``noun-f``
(``calf -> calves``), to show how a grammar extends the shared rules.
"""
from __future__ import annotations

import functools
from pathlib import Path

import pynini

from fstbeam.errors import GrammarError
from fstbeam.fst.optimize import sigma_star
from fstbeam.fst.wordlist.language import word_list_fst
from fstbeam.grammars.lib import inflection
from fstbeam.grammars.lib.fsts import accep, strings
from fstbeam.grammars.lib.tsv import read_tsv

_DATA = Path(__file__).resolve().parent / "data"

# Class -> the tags its lemmas inflect for. "noun-f" is a noun with this grammar's f -> v rule.
CLASSES = {**inflection.CLASS_TAGS, "noun-f": ("PL",), "word": ()}


@functools.cache
def _f_to_ve() -> pynini.Fst:
    """calf+s -> calve+s, knife+s -> knive+s (the shared rules then give calves, knives).

    ``cdrewrite(change, left, right, sigma)``: rewrite ``f`` or ``fe`` as ``ve`` wherever it
    stands right before the plural ending ``+s``.
    """
    change = pynini.cross("fe", "ve") | pynini.cross("f", "ve")
    return pynini.cdrewrite(change, "", accep("+s"), sigma_star()).optimize()


def _read_lemmas(path: Path) -> dict[str, set[str]]:
    by_class: dict[str, set[str]] = {c: set() for c in CLASSES}
    for row in read_tsv(path, columns=2, names=("lemma", "class")):
        lemma, cls = row.fields
        if cls not in CLASSES:
            raise GrammarError(
                f"{row.where}: unknown class {cls!r} for {lemma!r}; valid classes: "
                f"{', '.join(CLASSES)}"
            )
        by_class[cls].add(lemma)
    return by_class


def paradigm_forms(lemmas: Path, irregular: Path | None) -> set[str]:
    """Every form of every lemma (lemmas themselves included), as strings."""
    by_class = _read_lemmas(lemmas)
    table = inflection.read_irregular(irregular) if irregular is not None else {}
    out: set[str] = set().union(*by_class.values())
    for cls, members in by_class.items():
        before = _f_to_ve() if cls == "noun-f" else None
        for tag in CLASSES[cls]:
            out |= inflection.forms(members, tag, table, before=before)
    return out


def build(
    lemmas: Path = _DATA / "lemmas.tsv",
    irregular: Path | None = inflection.IRREGULAR_TSV,
    text: bool = True,
) -> pynini.Fst:
    """``lemmas``: your ``lemma<TAB>class`` file. ``irregular``: a ``lemma<TAB>tag<TAB>form``
    table (default: the English table shipped in grammars/lib/data; ``none`` for rules only).
    ``text``: running text of these forms (spaces, punctuation, capitals), or else exactly one
    lowercase form."""
    forms = paradigm_forms(lemmas, irregular)
    if not text:
        return strings(forms)
    return word_list_fst(sorted(forms), contractions=True, digits=False)
