"""Text checks of bench_tasks: what a teacher or a translator sees in an output, measured from
the text alone (never from the decoder's flags).

- **sentences**: a sentence ends at ``.``, ``!``, ``?`` or ``…`` (closing quotes and brackets
  may follow) followed by white space and a character that is not a lower-case letter, or by
  the end of the text; not after a known abbreviation ("e.g.", "z.B.", "Dr.") or a single
  letter ("J. Smith"). A number with a period ("1. 2. 3.") does end one, so enumeration filler
  counts as several sentences (a German ordinal before a capital, "16. Schicht", is split too:
  rare in these sources, and it errs towards "more than one sentence").
- **coverage** (CommonGen): a concept is covered when a word of the output is the concept, one
  of its inflections, or has it among its lemmas (lemminflect, every part of speech).
- **term present**: the term occurs with a word boundary on both sides (no letter or digit
  next to it), exactly or ignoring case.
- **term inside the translation**: present in the output's first N sentences, N the number of
  sentences of the source.
"""
from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")
_END = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]\u00bb]*")
ABBREV = frozenset({"e.g", "i.e", "etc", "vs", "dr", "mr", "mrs", "ms", "prof", "st", "no", "nr", "z.b", "d.h", "u.a",
                    "bzw", "ca", "usw", "sr", "sra", "p.ej", "ee.uu", "approx", "fig", "inc", "ltd", "co", "vgl", "ggf"})
FINAL = re.compile(r"[.!?\u2026][\"'\u201d\u2019)\]\u00bb]*$")


def words(text: str) -> list[str]:
    return WORD.findall(text)


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see the module docstring); empty text has none."""
    out, start = [], 0
    for m in _END.finditer(text):
        end = m.end()
        rest = text[end:]
        if rest and not rest[0].isspace():
            continue  # "3.5", "z.B." inside a word, "?!" handled by the + above
        nxt = rest.lstrip()
        if nxt and nxt[0].islower():
            continue
        before = text[start : m.start()].split()
        last = before[-1].lower().rstrip(".") if before else ""
        if m.group().startswith(".") and (last in ABBREV or (len(last) == 1 and last.isalpha())):
            continue
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def ends_sentence(text: str) -> bool:
    """Whether the text ends with sentence-final punctuation (else it stops mid-sentence)."""
    return bool(FINAL.search(text.rstrip()))


def term_regex(term: str, case_sensitive: bool = True) -> re.Pattern:
    """``term`` as whole words, with the word rule of ``WORD``: an apostrophe or hyphen between
    letters joins a word ("fenced-in", "dog's" do not contain "fenced", "dog")."""
    before = r"(?<![^\W_])(?<![^\W_]['\u2019-])" if term[:1].isalnum() else ""
    after = r"(?![^\W_])(?!['\u2019-][^\W_])" if term[-1:].isalnum() else ""
    return re.compile(before + re.escape(term) + after, 0 if case_sensitive else re.IGNORECASE)


def term_present(text: str, term: str, case_sensitive: bool = True) -> bool:
    return bool(term_regex(term, case_sensitive).search(text))


def translation_proper(output: str, source: str) -> str:
    """The output's first N sentences, N = the source's sentence count (at least 1)."""
    n = max(1, len(sentences(source)))
    return " ".join(sentences(output)[:n])


def term_inside(output: str, source: str, term: str) -> bool:
    return term_present(translation_proper(output, source), term)


@lru_cache(maxsize=None)
def inflections(lemma: str) -> frozenset[str]:
    """Every inflected form lemminflect knows for ``lemma`` (all parts of speech), with it."""
    from lemminflect import getAllInflections, getAllInflectionsOOV

    forms = {lemma}
    table = getAllInflections(lemma)
    if not table:
        for pos in ("NOUN", "VERB"):
            table.update(getAllInflectionsOOV(lemma, pos))
    for tup in table.values():
        forms.update(tup)
    return frozenset(forms)


@lru_cache(maxsize=None)
def lemmas(word: str) -> frozenset[str]:
    from lemminflect import getAllLemmas

    out = {word}
    for tup in getAllLemmas(word).values():
        out.update(tup)
    return frozenset(out)


def covered(text: str, concept: str) -> bool:
    """Whether a word of ``text`` is ``concept`` by lemma (see the module docstring)."""
    c = concept.lower()
    forms = {f.lower() for f in inflections(c)}
    for w in words(text):
        lw = w.lower()
        if lw in forms or c in lemmas(lw):
            return True
    return False


def meets_any(text: str, alternatives, *, sentence_case: bool = False) -> bool:
    """Whether one alternative occurs as whole words: the semantics of ``AnyOf`` (with a
    capitalized alternative allowed at a sentence start when ``sentence_case``)."""
    for a in alternatives:
        if term_present(text, a):
            return True
        if sentence_case and a[:1].islower():
            cap = a[:1].upper() + a[1:]
            for m in term_regex(cap).finditer(text):
                before = text[: m.start()].rstrip()
                if not before or before[-1] in ".!?":
                    return True
    return False
