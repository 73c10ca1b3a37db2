"""Read the plain-text data files of a grammar, with errors that name the file and line.

The format is pynini's ``string_file`` format (UTF-8, one entry per line, columns separated by
one TAB) plus two conveniences for people editing by hand: blank lines are skipped and a line
whose first character is ``#`` is a comment. Fields are taken verbatim (no trimming) except
that a Windows line ending (``\\r\\n``) is accepted.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pynini

from ...errors import GrammarError
from ...files.textfile import read_utf8

__all__ = ["Row", "read_tsv", "read_lines", "tsv_acceptor", "tsv_transducer"]


@dataclass(frozen=True)
class Row:
    """One data line: its fields and where it came from."""

    fields: tuple[str, ...]
    path: Path
    line: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def read_tsv(
    path: str | os.PathLike,
    *,
    columns: int | tuple[int, int],
    names: tuple[str, ...] = (),
    allow_empty_fields: bool = False,
) -> list[Row]:
    """Every data row of ``path``. ``columns`` is an exact count or a (min, max) range.

    ``names`` (e.g. ``("term", "avoid")``) only improves error messages. Raises GrammarError
    naming the file and line for a wrong column count or an empty field, and the byte offset
    for a file that is not UTF-8.
    """
    path = Path(path)
    lo, hi = (columns, columns) if isinstance(columns, int) else columns
    text = read_utf8(path, GrammarError, what="data file", expect="give a UTF-8 TSV file")
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark some editors write
    layout = "<TAB>".join(names) if names else f"{lo} columns"
    rows: list[Row] = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip() or line.startswith("#"):
            continue
        fields = tuple(line.split("\t"))
        if not lo <= len(fields) <= hi:
            want = f"{lo}" if lo == hi else f"{lo} to {hi}"
            raise GrammarError(
                f"{path}:{number}: expected {want} tab-separated columns ({layout}), "
                f"found {len(fields)}: {line[:80]!r}"
            )
        if not allow_empty_fields:
            for i, value in enumerate(fields):
                if value == "" and i < lo:
                    col = names[i] if i < len(names) else f"column {i + 1}"
                    raise GrammarError(f"{path}:{number}: {col} is empty: {line[:80]!r}")
        if "\x00" in line:
            raise GrammarError(f"{path}:{number}: contains a NUL byte, which no text can spell")
        rows.append(Row(fields, path, number))
    return rows


def read_lines(path: str | os.PathLike, *, what: str = "list") -> list[Row]:
    """One entry per line (a one-column TSV), e.g. a list of names."""
    rows = read_tsv(path, columns=1, names=(what,))
    return rows


def _escaped(strings: Iterable[str]) -> list[str]:
    return [pynini.escape(s) for s in strings]


def tsv_acceptor(path: str | os.PathLike, *, column: int = 0, columns: int | tuple[int, int] = 1) -> pynini.Fst:
    """The strings of one column of ``path`` as an acceptor over bytes."""
    rows = read_tsv(path, columns=columns)
    if not rows:
        raise GrammarError(f"{path} has no entries")
    strings = sorted({r.fields[column] for r in rows})
    return pynini.string_map(_escaped(strings)).optimize()


def tsv_transducer(path: str | os.PathLike, *, columns: int | tuple[int, int] = 2) -> pynini.Fst:
    """Column 1 -> column 2 of ``path`` as a byte transducer (pynini ``string_file`` semantics)."""
    rows = read_tsv(path, columns=columns)
    if not rows:
        raise GrammarError(f"{path} has no entries")
    pairs = [(pynini.escape(r.fields[0]), pynini.escape(r.fields[1])) for r in rows]
    return pynini.string_map(pairs).optimize()
