"""Small pure functions to look inside an acceptor: sizes, sample strings, where a text fails.

They work on byte automata (labels 1..255, the default) and on token automata (labels
``token_id + 1``) when given ``label_text``, a function from a label to the text it spells.
Nothing here modifies its argument or needs the automaton to be deterministic or epsilon-free.
Everything is bounded: on a 500k-state automaton a call costs what it visits, not the whole
automaton (except `stats`, `analyze`, `to_networkx`, which are whole-automaton by nature).

This module is the public face: the functions live in `view` (the cached view, label text),
`paths` (bounded language queries) and `analysis` (whole-automaton views); `report` puts them
together for ``compile-constraints inspect``.
"""
from __future__ import annotations

import pynini

from .analysis import analyze, stats, to_networkx
from .paths import (
    PrefixMatch,
    accepted_strings,
    accepts,
    explain_rejection,
    longest_accepted_prefix,
    shortest_string,
)
from .view import LabelText, byte_label_text

__all__ = [
    "LabelText",
    "PrefixMatch",
    "accepted_strings",
    "accepts",
    "analyze",
    "byte_label_text",
    "explain_rejection",
    "longest_accepted_prefix",
    "report",
    "shortest_string",
    "stats",
    "to_networkx",
]


def report(
    fst: pynini.Fst,
    *,
    sample: int = 10,
    label_text: LabelText | None = None,
    byte_labels: bool = True,
) -> str:
    """A multi-line summary for ``compile-constraints inspect``: sizes, findings, sample strings."""
    st = stats(fst)
    lines = [
        f"states {st['states']:,}  arcs {st['arcs']:,}  finals {st['finals']:,}  "
        f"labels {st['distinct_labels']} ({st['min_label']}..{st['max_label']})  "
        f"deterministic {st['deterministic']}  cyclic {st['cyclic']}"
    ]
    lines += analyze(fst, byte_labels=byte_labels and label_text is None)
    if sample > 0:
        strings = accepted_strings(fst, sample, label_text=label_text)
        lines.append(f"shortest accepted strings ({len(strings)}):")
        lines += [f"  {s!r}" for s in strings]
    return "\n".join(lines)
