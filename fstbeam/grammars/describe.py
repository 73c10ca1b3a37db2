"""Text reports about grammars, for ``compile-constraints inspect --grammar`` / ``--list-grammars``.

Each function returns the text to print and an exit code, so the command line only parses
arguments and prints; nothing here touches a tokenizer.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from ..fst.inspect import report
from .cases import check_text, run_cases
from .registry import get, list_grammars, parse_params

__all__ = ["inspect_grammar", "list_text"]


def list_text() -> str:
    """Every grammar with its description and parameters (``--list-grammars``)."""
    return "\n".join(get(name).usage() for name in list_grammars())


def inspect_grammar(
    name: str,
    params: Mapping[str, object] | Iterable[str] | None = None,
    *,
    sample: int = 10,
    check: Iterable[str] = (),
    cases: bool = False,
    draw: str | os.PathLike | None = None,
    max_draw_states: int = 200,
    draw_after: str | None = None,
) -> tuple[str, int]:
    """Build grammar ``name`` and describe it: parameters, sizes, warnings, ``sample`` shortest
    texts, phrases/avoid, a verdict for each ``check`` text, the golden cases (``cases``), and a
    drawing written to ``draw`` (at most ``max_draw_states`` states, from the start or from the
    state after ``draw_after``). ``params`` is a mapping or ``["key=value", ...]``.

    Returns (text, exit code): 1 if a checked text is rejected, a golden case fails or the drawing
    cannot be written (the report still holds every check), else 0. Errors of the grammar itself
    (unknown grammar, bad parameter, ...) are raised as fstbeam errors.
    """
    if params is not None and not isinstance(params, Mapping):
        params = parse_params(list(params))
    grammar = get(name)
    built = grammar.build(**dict(params or {}))
    lines = [f"grammar     {built.describe()}", f"source      {grammar.path}", f"hash        {built.source_hash[:16]}"]
    code = 0
    if built.language is not None:
        lines.append(report(built.language, sample=sample))
    else:
        lines.append("language    none (phrases and avoid only)")
    for phrase in built.phrases:
        lines.append(f"phrase      {phrase!r}")
    for phrase in built.avoid:
        lines.append(f"avoid       {phrase!r}")
    for text in check:
        why = check_text(built, text)
        if why is None:
            lines.append(f"check       {text!r}: accepted")
        else:
            lines.append(f"check       {text!r}: rejected: {why}")
            code = 1
    if cases:
        n, failures = run_cases(name)
        lines.append(f"cases       {n - len(failures)}/{n} golden cases pass ({grammar.cases_path})")
        lines += failures
        code = code or (1 if failures else 0)
    if draw is not None:
        if built.language is None:
            lines.append("draw        nothing to draw: this grammar has no language")
            code = 1
        else:
            from ..errors import Error
            from ..fst.draw import describe_drawing
            from ..fst.draw import draw as draw_fst

            try:  # a drawing that fails costs the drawing only, never the checks above
                path = draw_fst(built.language, draw, max_states=max_draw_states, title=built.describe(),
                                after=draw_after)
                lines.append(f"drew        {describe_drawing(built.language, path, max_draw_states, draw_after)}")
            except (Error, OSError, ValueError) as exc:
                lines.append(f"draw        failed: {exc}")
                code = 1
    return "\n".join(lines), code
