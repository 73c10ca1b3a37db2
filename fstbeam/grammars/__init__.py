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

from .._lazy import lazy_exports as _lazy_exports
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


# The golden-case and report helpers load on first use (they pull in fstbeam.fst.inspect).
_LAZY = {
    **{name: (".cases", name) for name in ("check_text", "run_cases", "read_cases", "check_case")},
    **{name: (".describe", name) for name in ("inspect_grammar", "list_text")},
}

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
