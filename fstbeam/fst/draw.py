"""Draw an automaton to SVG, PNG or DOT, without Graphviz.

SVG is written by fstbeam itself (`draw_svg`), PNG through matplotlib, DOT as text for those who
have Graphviz. A large automaton is never refused: the drawing shows its first ``max_states``
states breadth-first from the start, or from the state reached after a prefix (``after=``), and
one box for the rest (`draw_view`). Parallel arcs are merged into one edge labelled with a
compact byte set (``a-z``, ``0-9``, ``␣`` for a space, ``\\xc3`` for a non-ASCII byte).
"""
from __future__ import annotations

import os
from pathlib import Path

import pynini

from ..errors import Error
from .draw_view import REST, View, edge_label, window
from .inspect import LabelText

__all__ = ["DrawError", "describe_drawing", "draw", "edge_label", "to_dot"]

_FORMATS = (".svg", ".png", ".dot", ".gv")


class DrawError(Error, OSError):
    """The picture cannot be written (e.g. PNG without matplotlib)."""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dot(view: View) -> str:
    lines = [
        "digraph fst {",
        "  rankdir=LR;",
        '  node [shape=circle, fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    title = "\n".join(t for t in (view.title, view.note) if t)
    if title:
        lines.append(f"  label={_quote(title)}; labelloc=t;")
    if view.start is not None:
        lines.append('  __start [shape=point, width=0.05, label=""];')
        lines.append(f"  __start -> {view.start}{' [label=' + _quote(view.entry) + ']' if view.entry else ''};")
    for s in view.states:
        lines.append(f"  {s} [shape={'doublecircle' if s in view.final else 'circle'}, label={s}];")
    if view.hidden:
        lines.append(f'  rest [shape=box, style=dashed, label="{view.hidden:,} more states"];')
    for e in view.edges:
        dst = "rest" if e.dst == REST else str(e.dst)
        lines.append(f"  {e.src} -> {dst} [label={_quote(e.label)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_dot(fst: pynini.Fst, *, label_text: LabelText | None = None, title: str | None = None,
           max_states: int | None = None, after: str | None = None) -> str:
    """The DOT source for ``fst`` (every state unless ``max_states`` is given)."""
    return _dot(window(fst, max_states or max(fst.num_states(), 1), label_text=label_text, after=after, title=title))


def draw(
    fst: pynini.Fst,
    path: str | os.PathLike,
    *,
    max_states: int = 200,
    label_text: LabelText | None = None,
    title: str | None = None,
    after: str | None = None,
    timeout_s: float | None = None,
) -> Path:
    """Draw ``fst`` to ``path``; the format follows the suffix (``.svg``, ``.png``, ``.dot``/``.gv``).

    At most ``max_states`` states are drawn (breadth-first from the start, or from the state
    after the text ``after``); arcs to the others end in one box that counts them. ValueError
    for an unknown suffix, `DrawError` for a PNG without matplotlib; the file is written under
    a temporary name and renamed, so a failed drawing never leaves half a file.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in _FORMATS:
        raise ValueError(f"cannot draw to {str(path)!r}: use one of {', '.join(_FORMATS)}")
    if max_states < 1:
        raise ValueError(f"max_states must be at least 1 (got {max_states})")
    view = window(fst, max_states, label_text=label_text, after=after, title=title)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if suffix == ".svg":
            from .draw_svg import svg_text

            tmp.write_text(svg_text(view), encoding="utf-8")
        elif suffix == ".png":
            from .draw_svg import write_png

            try:
                write_png(view, tmp)
            except ImportError as exc:
                raise DrawError(f"drawing {path.name} needs matplotlib (pip install matplotlib); "
                                f"or draw to {path.with_suffix('.svg').name}, which needs nothing") from exc
        else:
            tmp.write_text(_dot(view), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def describe_drawing(fst: pynini.Fst, path: Path, max_states: int, after: str | None = None) -> str:
    """One line for a report: what was drawn where."""
    n = fst.num_states()
    if n <= max_states and not after:
        return f"{path} ({n:,} states)"
    shown = min(n, max_states)
    where = f" after {after!r}" if after else ""
    return f"{path} (the first {shown:,} of {n:,} states{where}; --max-draw-states N draws more)"

