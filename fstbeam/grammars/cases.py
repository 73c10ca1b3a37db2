"""Golden cases: ``cases.tsv`` files of texts a grammar must accept or reject.

Format (UTF-8, one case per line)::

    # a comment
    # params: level=A1 names=data/names.txt
    I like cats.<TAB>accept
    The ubiquitous cat.<TAB>reject<TAB>ubiquitous is C2

- ``text<TAB>accept|reject`` with an optional third column, a note shown on failure.
- ``# params: key=value ...`` sets the grammar parameters for the cases below it (until the next
  ``# params:`` line; an empty one goes back to the defaults). Values may be quoted
  (``names="my names.txt"``); relative paths are relative to the folder of ``cases.tsv``.
- In the text, ``\\t``, ``\\n`` and ``\\\\`` stand for a tab, a newline and a backslash; every
  other character, spaces at either end included, is taken as it is.

A text is accepted when the grammar's language accepts it, every phrase of the grammar occurs
in it and no avoided phrase does (at word boundaries, as the compiler matches them; see
`fstbeam.grammars.lib.phrases`).
"""
from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GrammarError
from ..files.textfile import read_utf8
from ..fst.inspect import explain_rejection, longest_accepted_prefix
from .lib.phrases import occurs
from .registry import Grammar, GrammarBuild, get, parse_params

__all__ = ["GoldenCase", "check_case", "check_text", "read_cases", "run_cases"]

_VERDICTS = {"accept": True, "reject": False}


@dataclass(frozen=True)
class GoldenCase:
    grammar: str
    text: str
    expect: bool
    params: Mapping[str, str] = field(default_factory=dict)
    path: Path = Path("cases.tsv")
    line: int = 0
    note: str = ""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def id(self) -> str:
        return f"{self.grammar}:{self.line}"


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "tn\\":
                out.append({"t": "\t", "n": "\n", "\\": "\\"}[nxt])
                i += 2
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _parse_params(spec: str, where: str) -> dict[str, str]:
    try:
        return parse_params(shlex.split(spec))
    except ValueError as exc:  # shlex: an unclosed quote
        raise GrammarError(f"{where}: cannot read the parameters {spec!r}: {exc}") from None
    except GrammarError as exc:
        raise GrammarError(f"{where}: {exc}") from None


def read_cases(path: str | os.PathLike, grammar: str) -> list[GoldenCase]:
    """Every case in ``path`` (a ``cases.tsv``) for the grammar called ``grammar``."""
    path = Path(path)
    text = read_utf8(path, GrammarError, what="golden cases", expect="give a UTF-8 cases.tsv file")
    cases: list[GoldenCase] = []
    params: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        where = f"{path}:{number}"
        if line.startswith("#"):
            body = line[1:].strip()
            if body.lower().startswith("params:"):
                params = _parse_params(body[len("params:"):], where)
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3):
            raise GrammarError(
                f"{where}: expected text<TAB>accept|reject[<TAB>note], found {len(fields)} "
                f"tab-separated fields: {line[:80]!r}"
            )
        verdict = fields[1].strip().lower()
        if verdict not in _VERDICTS:
            raise GrammarError(f"{where}: second column must be accept or reject, not {fields[1]!r}")
        cases.append(
            GoldenCase(
                grammar=grammar,
                text=_unescape(fields[0]),
                expect=_VERDICTS[verdict],
                params=dict(params),
                path=path,
                line=number,
                note=fields[2].strip() if len(fields) == 3 else "",
            )
        )
    return cases


def check_text(build: GrammarBuild, text: str) -> str | None:
    """None if ``build`` accepts ``text``, else why not (the first reason found)."""
    if build.language is not None:
        reason = explain_rejection(build.language, text)
        if reason is not None:
            return reason
    for phrase in build.phrases:
        alts = phrase if isinstance(phrase, tuple) else (phrase,)  # a tuple: any one form
        if not any(occurs(text, p) for p in alts):
            return f"the required phrase {phrase!r} does not occur"
    for phrase in build.avoid:
        if occurs(text, phrase):
            return f"the avoided phrase {phrase!r} occurs"
    return None


def build_for(case: GoldenCase, grammar: Grammar | None = None) -> GrammarBuild:
    """The grammar built with the case's parameters (cached per parameter set)."""
    grammar = grammar or get(case.grammar)
    values = grammar.normalize_params(case.params, base=case.path.parent)
    return grammar.build(**values)


def check_case(case: GoldenCase, grammar: Grammar | None = None) -> str | None:
    """None if the case passes, else a message with the grammar, file:line, and the longest
    accepted prefix of the text."""
    build = build_for(case, grammar)
    reason = check_text(build, case.text)
    accepted = reason is None
    if accepted == case.expect:
        return None
    lines = [
        f"grammar {build.describe()}, {case.where}: expected "
        f"{'accept' if case.expect else 'reject'}, got {'accept' if accepted else 'reject'} "
        f"for {case.text!r}"
    ]
    if case.note:
        lines.append(f"  note: {case.note}")
    if reason is not None:
        lines.append(f"  why: {reason}")
    if build.language is not None:
        match = longest_accepted_prefix(build.language, case.text)
        shown = ", ".join(repr(n) for n in match.next_possible[:20])
        lines.append(f"  longest accepted prefix: {match.prefix!r}; next possible: {shown or 'nothing'}")
    return "\n".join(lines)


def run_cases(name: str) -> tuple[int, list[str]]:
    """Check every golden case of grammar ``name``: (number of cases, failure messages)."""
    grammar = get(name)
    if not grammar.cases_path.is_file():
        return 0, []
    cases = read_cases(grammar.cases_path, name)
    failures = [msg for case in cases if (msg := check_case(case, grammar)) is not None]
    return len(cases), failures
