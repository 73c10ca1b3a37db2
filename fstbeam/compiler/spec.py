"""Constraint specifications: frozen, hashable, and remembering where each item came from."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..errors import SpecError
from ..files.textfile import read_utf8
from ..validate import LIMITS


@dataclass(frozen=True)
class Phrase:
    """A phrase that must appear (or, in ``avoid``, must never appear) in the output.

    ``word_boundary``: match only where the phrase is not glued to a word character on either side
    (letters, digits, ``'`` and ``-``: "jump's" and "fenced-in" do not contain "jump", "fenced").
    ``case_sensitive=False`` folds ASCII case. ``sentence_case=True``: also met with its first
    letter capitalized where a sentence starts ("the hero" -> "The hero" at the start of the
    output or after ``.``/``!``/``?``); see docs/terminology.md.
    """

    text: str
    word_boundary: bool = True
    case_sensitive: bool = True
    source: str = "argument"
    sentence_case: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise SpecError(f"empty phrase ({self.source}): give the text that must appear")
        if "\x00" in self.text:
            raise SpecError(f"phrase {self.text!r} ({self.source}) contains a NUL byte, which no token can spell")


def as_phrases(items, what: str, *, flatten: bool = False) -> tuple:
    """``Phrase`` items from strings, ``Phrase`` objects, ``AnyOf`` objects and nested lists (a
    list item is an ``AnyOf`` of its texts). ``flatten``: alternatives become separate phrases
    (for avoid lists: avoiding any of them means avoiding each)."""
    from .light.alternatives import AnyOf

    if items is None:
        return ()
    if isinstance(items, (str, Phrase, AnyOf)):
        items = [items]
    if isinstance(items, (bytes, bytearray, dict)) or not hasattr(items, "__iter__"):
        raise SpecError(f"{what}= must be a phrase (str) or a list of phrases, not {type(items).__name__}")
    out: list = []
    for i, p in enumerate(items):
        where = f"{what}[{i}]"
        if isinstance(p, (list, tuple)):
            p = AnyOf(*p, source=where)
        if not isinstance(p, (str, Phrase, AnyOf)):
            raise SpecError(f"{what}[{i}] is {type(p).__name__} {p!r}: give the phrase as a str")
        if isinstance(p, AnyOf) and flatten:
            out += [Phrase(t, p.word_boundary, p.case_sensitive, p.source) for t in p.alternatives]
        elif isinstance(p, AnyOf) and len(p.alternatives) == 1 and not p.sentence_case:
            out.append(Phrase(p.alternatives[0], p.word_boundary, p.case_sensitive, p.source))
        else:
            out.append(p if isinstance(p, (Phrase, AnyOf)) else Phrase(p, source=where))
    return tuple(out)


@dataclass(frozen=True)
class WordList:
    words: tuple[str, ...]
    source: str  # file path, "cefr:A1", or "argument"


def read_word_file(path: str | os.PathLike) -> WordList:
    """One entry per line, UTF-8; blank lines and ``#`` comments skipped."""
    p = Path(path)
    text = read_utf8(p, SpecError, what="word list", expect="give a UTF-8 text file with one word per line")
    from .limits import check_words

    lines = [(n, w.strip()) for n, w in enumerate(text.splitlines(), 1)]
    long = next(((n, w) for n, w in lines if len(w) > LIMITS["word_chars"]), None)
    if long is not None:  # name the line: the entry index of check_words would skip comments
        raise SpecError(f"word list {p}, line {long[0]}: an entry of {len(long[1]):,} characters, over the limit of "
                        f"{LIMITS['word_chars']:,} (word_chars, docs/trust.md): one word or short term per line")
    words = tuple(w for _, w in lines if w and not w.startswith("#"))
    if not words:
        raise SpecError(f"word list {p} has no words: give at least one entry, one per line")
    check_words(words, str(p))
    return WordList(words, str(p))


@dataclass(frozen=True)
class ConstraintSpec:
    words: WordList | None = None
    cefr: str | None = None
    phrases: tuple[Phrase, ...] = ()
    avoid: tuple[Phrase, ...] = ()
    prefix: str | None = None
    grammar: str | None = None  # description: registered name + params, or "custom:<hash>"
    grammar_hash: str | None = None
    canonical: bool = False
    extra: dict = field(default_factory=dict, hash=False, compare=False)  # word-list options

    def describe(self) -> dict:
        d = asdict(replace(self, words=None))  # asdict would deep-copy every word of the list
        if self.words is not None:
            d["words"] = {"source": self.words.source, "count": len(self.words.words)}
        d.update(d.pop("extra", {}))
        return d

    def spec_hash(self) -> str:
        h = hashlib.sha256(json.dumps(self.describe(), sort_keys=True, default=str).encode())
        if self.words is not None:
            h.update("\n".join(self.words.words).encode())
        return h.hexdigest()
