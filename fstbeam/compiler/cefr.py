"""CEFR word levels from the PyPI package ``cefrpy``, cached as a small TSV.

``cefrpy`` takes ~1.5 s to iterate its database; the first call writes ``word<TAB>level`` once
under fstbeam's cache dir (keyed by the cefrpy version) and later calls read that.
A word's level is the lowest level of any of its parts of speech; ``A1`` means every form at
or below A1 (levels are cumulative).
"""
from __future__ import annotations

import os
import tempfile
from functools import lru_cache

from ..errors import SpecError

LEVELS = ("A1", "A2", "B1", "B2", "C1", "C2")


def parse_level(level: str) -> int:
    norm = str(level).strip().upper()
    if norm not in LEVELS:
        raise SpecError(f"unknown CEFR level {level!r}: use one of {', '.join(LEVELS)}")
    return LEVELS.index(norm) + 1


@lru_cache(maxsize=1)
def _all_levels() -> dict[str, int]:
    try:
        import cefrpy
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise SpecError("CEFR word lists need the PyPI package 'cefrpy': pip install 'fstbeam[default]'") from exc
    from ..default_model import cache_dir

    path = cache_dir() / f"cefr-{getattr(cefrpy, '__version__', 'x')}.tsv"
    if path.exists():
        out = {}
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                w, _, lv = line.rstrip("\n").partition("\t")
                out[w] = int(lv)
        return out
    best: dict[str, int] = {}
    for word, _pos, level in cefrpy.CEFRAnalyzer().yield_word_pos_level():
        v = int(level.value)
        if v < best.get(word, 99):
            best[word] = v
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.writelines(f"{w}\t{v}\n" for w, v in sorted(best.items()))
    os.replace(tmp, path)
    return best


def cefr_words(level: str) -> list[str]:
    """Every word form at or below ``level`` (e.g. ``"A1"``), sorted."""
    top = parse_level(level)
    return sorted(w for w, v in _all_levels().items() if v <= top)
