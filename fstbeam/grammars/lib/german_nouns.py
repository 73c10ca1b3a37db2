"""A small German noun paradigm: the example to copy when adding a language's inflection.

A paradigm maps a lemma and its *class* to the forms a term may take in running text. German
nouns show case and number: ``Haus`` (nominative/accusative/dative singular), ``Hauses``
(genitive singular), ``Häuser`` (plural), ``Häusern`` (dative plural). Each class lists its
forms as suffix patterns over the lemma, written with markers the rules below spell out:

    +U   umlaut the last full vowel of the stem (Haus -> Häus, Vater -> Väter, Kuh -> Küh)
    +G   genitive -s, or -es after s, ß, x, z (Tag -> Tags, Haus -> Hauses)
    +N   dative plural -n, except after n or s (Häuser -> Häusern, Frauen -> Frauen)

and a suffix ``+en`` that loses its e after a stem ending in e (Lampe+en -> Lampen). The rules
are ``pynini.cdrewrite`` rewrites composed in order, as in ``lib/inflection.py`` for English.
To add a language: list its classes like ``CLASSES`` below, write its spelling rules, and
expose ``forms(lemma, cls)``; the terminology grammar looks paradigms up by ``@class`` name.
"""
from __future__ import annotations

import functools

import pynini

from ...errors import GrammarError
from ...fst.optimize import sigma_star
from .fsts import accep, chars

__all__ = ["CLASSES", "forms"]

#: Class -> suffix patterns of its forms (the lemma itself is always one of them).
CLASSES = {
    "m-e": ("", "+G", "+es", "+e", "+e+N"),  # der Tag, des Tags/Tages, die Tage, den Tagen
    "m-ue": ("", "+G", "+es", "+U+e", "+U+e+N"),  # der Vertrag, des Vertrag(e)s, die Verträge
    "n-e": ("", "+G", "+es", "+e", "+e+N"),  # das Jahr, des Jahr(e)s, die Jahre
    "n-er": ("", "+G", "+es", "+U+er", "+U+er+N"),  # das Haus, des Hauses, die Häuser, den Häusern
    "m-0": ("", "+G", "+N"),  # der Lehrer, des Lehrers, die Lehrer, den Lehrern
    "n-0": ("", "+G", "+N"),  # das Fenster, des Fensters, die Fenster, den Fenstern
    "m-0u": ("", "+G", "+U", "+U+N"),  # der Vater, des Vaters, die Väter, den Vätern
    "n-s": ("", "+G"),  # das Auto, des Autos, die Autos (one spelling: -s)
    "f-en": ("", "+en"),  # die Zeitung, die Zeitungen; die Lampe, die Lampen
    "f-ue": ("", "+U+e", "+U+e+N"),  # die Kuh, die Kühe, den Kühen
    "m-n": ("", "+en"),  # der Kunde, des/dem/den Kunden (weak masculine)
}

_CONS = "bcdfghjklmnpqrstvwxzß"


@functools.cache
def _rules() -> pynini.Fst:
    sig = sigma_star()
    cons = pynini.closure(chars(_CONS))
    umlaut = pynini.union(pynini.cross("au", "äu"), pynini.cross("Au", "Äu"), pynini.cross("a", "ä"),
                          pynini.cross("o", "ö"), pynini.cross("u", "ü"), pynini.cross("A", "Ä"),
                          pynini.cross("O", "Ö"), pynini.cross("U", "Ü"))
    rules = [
        # Haus+U -> Häus+U, Vater+U -> Väter+U: the last vowel before the marker, skipping one
        # unstressed e-syllable (-er, -el, -en)
        pynini.cdrewrite(umlaut, "", cons + pynini.closure(accep("e") + cons, 0, 1) + accep("+U"), sig),
        pynini.cdrewrite(pynini.cross("+U", ""), "", "", sig),
        # Haus+G -> Hauses ; Tag+G -> Tags
        pynini.cdrewrite(pynini.cross("+G", "es"), chars("sßxz"), "", sig),
        pynini.cdrewrite(pynini.cross("+G", "s"), "", "", sig),
        # Lampe+en -> Lampen
        pynini.cdrewrite(pynini.cross("+en", "n"), accep("e"), "", sig),
        # Frauen+N -> Frauen ; Autos+N -> Autos ; Häuser+N -> Häusern
        pynini.cdrewrite(pynini.cross("+N", ""), chars("ns"), "", sig),
        pynini.cdrewrite(pynini.cross("+N", "n"), "", "", sig),
        pynini.cdrewrite(pynini.cross("+", ""), "", "", sig),
    ]
    out = rules[0]
    for r in rules[1:]:
        out = pynini.compose(out, r)
    return out.optimize()


def forms(lemma: str, cls: str) -> tuple[str, ...]:
    """The forms of ``lemma`` in paradigm class ``cls``, the lemma first."""
    if cls not in CLASSES:
        raise GrammarError(f"unknown German noun class {cls!r}; the classes are {', '.join(CLASSES)}")
    out = []
    for pattern in CLASSES[cls]:
        lattice = pynini.compose(accep(lemma + pattern), _rules())
        form = pynini.shortestpath(lattice).project("output").rmepsilon().string(token_type="byte")
        if form not in out:
            out.append(form)
    return tuple(out)
