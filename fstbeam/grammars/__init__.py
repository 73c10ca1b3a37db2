"""The grammar library: one folder per grammar, found automatically.

    >>> from fstbeam import grammars
    >>> grammars.list_grammars()
    ['cefr', 'dates', 'inflection', 'numbers', 'terminology']
    >>> g = grammars.get("cefr")
    >>> built = g.build(level="A2")          # -> GrammarBuild
    >>> built.language, built.phrases, built.avoid, built.source_hash

A grammar folder holds ``grammar.py`` (one public ``build(**params)``), ``data/*.tsv`` and
``cases.tsv`` (golden accept/reject cases). See docs/grammar_authoring.md.
"""
from __future__ import annotations

from .registry import (
    Grammar,
    GrammarBuild,
    GrammarParts,
    Param,
    build,
    combine,
    get,
    grammar_dirs,
    list_grammars,
    parse_params,
)

__all__ = [
    "Grammar",
    "GrammarBuild",
    "GrammarParts",
    "Param",
    "build",
    "check_text",
    "combine",
    "get",
    "grammar_dirs",
    "inspect_grammar",
    "list_grammars",
    "list_text",
    "parse_params",
    "run_cases",
]


def __getattr__(name: str):
    # The golden-case and report helpers load on first use (they pull in fstbeam.fst.inspect).
    if name in ("check_text", "run_cases", "read_cases", "check_case"):
        from . import cases

        return getattr(cases, name)
    if name in ("inspect_grammar", "list_text"):
        from . import describe

        return getattr(describe, name)
    raise AttributeError(f"module 'fstbeam.grammars' has no attribute {name!r}")
