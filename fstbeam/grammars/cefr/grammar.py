"""English running text whose words are at or below a CEFR level (A1 .. C2, cumulative).

Words and levels come from the PyPI package ``cefrpy`` (~170k word forms, each with a level per
part of speech; a form's level is its lowest). On top of that, a lemma at the level brings its
regular and irregular inflections when cefrpy knows them as words (``book`` is A1 and ``books``
A2 in cefrpy: with ``inflections=true`` both are A1; ``go`` brings ``went``). The text may use
each word in lower case, Capitalized or UPPER CASE, with punctuation, contractions whose parts
are allowed (``don't`` needs ``do`` and ``not``) and numbers in digits (see
`fstbeam.fst.wordlist.language`). ``names`` adds your own proper names, one per line, kept in
their own casing (``McDonald``, ``New York``).
"""
from __future__ import annotations

import functools
import logging
import re
from importlib import metadata
from pathlib import Path
from typing import Literal, NamedTuple

import pynini

from fstbeam.errors import GrammarError
from fstbeam.fst.wordlist.language import word_list_fst
from fstbeam.grammars.lib import inflection
from fstbeam.grammars.lib.tsv import read_lines
from fstbeam.validate import CEFR_LEVELS

log = logging.getLogger("fstbeam.grammars")

LEVELS = CEFR_LEVELS
# cefrpy part-of-speech tags of the base forms that inflect: NN cat, VB walk, JJ tall.
_LEMMA_POS = {"NN": "noun", "VB": "verb", "JJ": "adj"}
_CLASSES = ("noun", "verb", "adj")
# An inflected form made by the rules counts only if cefrpy tags it as such a form: "banker"
# is a noun, not the comparative of "bank". (cefrpy's tags are noisy: "walks" is NNS/VB.)
_FORM_POS = {
    "PL": {"NNS", "NNPS"},
    "3SG": {"VBZ", "NNS", "VB"},
    "PAST": {"VBD", "VBN", "JJ"},
    "PPART": {"VBD", "VBN", "JJ"},
    "ING": {"VBG", "NN", "JJ"},
    "CMP": {"JJR", "RBR"},
    "SUP": {"JJS", "RBS"},
}
_CACHE_FORMAT = "3"  # 3: with a sha256 trailer (cachefs.write_text_checked)


try:
    DATA_VERSION = f"cefrpy {metadata.version('cefrpy')}"
except metadata.PackageNotFoundError:  # pragma: no cover - depends on the install
    DATA_VERSION = "cefrpy not installed"


def _cache_path() -> Path:
    from fstbeam.files.cache import subdir

    return subdir("grammars") / f"cefr-{_CACHE_FORMAT}-{DATA_VERSION.split()[-1]}.tsv"


class _Entry(NamedTuple):
    level: int  # lowest level of any part of speech, 1 (A1) .. 6 (C2)
    lemma: tuple[int, int, int]  # level as a noun / verb / adjective base form, 9 if none
    pos: frozenset[str]  # every cefrpy part-of-speech tag of the form


@functools.cache
def _table() -> dict[str, _Entry]:
    """Every cefrpy word form with its levels and tags.

    Reading cefrpy takes a few seconds, so the table is written once to fstbeam's cache dir
    (keyed by the cefrpy version) as ``word<TAB>level<TAB>noun<TAB>verb<TAB>adj<TAB>tags``.
    """
    out = {}
    for line in _table_text().splitlines():
        word, level, noun, verb, adj, tags = line.split("\t")
        out[word] = _Entry(int(level), (int(noun), int(verb), int(adj)), frozenset(tags.split(",")))
    return out


def _table_text() -> str:
    """The table file's text (written from cefrpy on first use)."""
    from fstbeam.files.cache import fill_file, read_text_checked, text_valid

    path = fill_file(_cache_path(), _write_table, valid=text_valid)  # locked, atomic, checksummed
    return read_text_checked(path) or ""


def forms_at(level: str) -> list[str]:
    """``words_at(level, inflections=False)``, sorted, read straight from the table's first two
    columns (one regular expression over the file: ~30x faster than building `_table`, which
    ``cefr=`` does not need)."""
    top = LEVELS.index(level) + 1
    return re.findall(rf"^([^\t\n]*)\t[1-{top}]\t", _table_text(), re.M)


def _write_table(path: Path) -> None:
    from fstbeam.files.cache import write_text_checked

    try:
        from cefrpy import CEFRAnalyzer
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise GrammarError("the cefr grammar needs the PyPI package 'cefrpy': pip install 'fstbeam[default]'") from exc
    rows: dict[str, list] = {}
    for word, pos, level in CEFRAnalyzer().yield_word_pos_level():
        v = int(level.value)
        row = rows.setdefault(word, [9, 9, 9, 9, set()])
        row[0] = min(row[0], v)
        row[4].add(pos.name)
        cls = _LEMMA_POS.get(pos.name)
        if cls is not None:
            i = 1 + _CLASSES.index(cls)
            row[i] = min(row[i], v)
    write_text_checked(path, "".join(
        f"{w}\t{r[0]}\t{r[1]}\t{r[2]}\t{r[3]}\t{','.join(sorted(r[4]))}\n" for w, r in sorted(rows.items())))


def words_at(level: str, *, inflections: bool = True) -> set[str]:
    """Every lowercase word form allowed at ``level`` (cumulative)."""
    top = LEVELS.index(level) + 1
    table = _table()
    allowed = {w for w, e in table.items() if e.level <= top}
    if inflections and top < len(LEVELS):
        irregular = inflection.read_irregular()
        for i, cls in enumerate(_CLASSES):
            lemmas = {w for w, e in table.items() if e.lemma[i] <= top}
            for tag in inflection.CLASS_TAGS[cls]:
                # Only forms cefrpy knows, with a fitting tag: the rules must not invent words.
                for form in inflection.forms(lemmas, tag, irregular):
                    entry = table.get(form)
                    if entry is not None and entry.pos & _FORM_POS[tag]:
                        allowed.add(form)
    return allowed


def build(
    level: Literal[CEFR_LEVELS] = "B1",  # type: ignore[valid-type]  # the levels as choices
    names: Path | None = None,
    inflections: bool = True,
    punctuation: bool = True,
    contractions: bool = True,
    digits: bool = True,
) -> pynini.Fst:
    """``level``: the highest CEFR level allowed. ``names``: a UTF-8 file of proper names, one
    per line (``#`` comments). ``inflections``: let allowed lemmas bring their inflected forms.
    ``punctuation``, ``contractions``, ``digits``: as in ``word_list_fst``."""
    words = sorted(words_at(level, inflections=inflections))
    if names is not None:
        words += [row.fields[0].strip() for row in read_lines(names, what="name")]
    return word_list_fst(words, punctuation=punctuation, contractions=contractions, digits=digits)
