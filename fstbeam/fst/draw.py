"""Draw a small automaton with Graphviz ``dot`` (SVG, PNG, or the DOT text itself).

Parallel arcs between two states are merged into one edge labelled with a compact set
(``a-z``, ``0-9``, ``␣`` for a space, ``\\xc3`` for a non-ASCII byte), so a word-list automaton
stays readable. Drawing refuses automata above ``max_states`` (layout time grows fast) and stops
``dot`` after ``timeout_s`` seconds: it never hangs.
"""
from __future__ import annotations

import collections
import os
import shutil
import subprocess
from pathlib import Path

import pynini

from ..errors import Error
from .inspect import LabelText
from .labels import EPSILON
from .optimize import FstSizeError

__all__ = ["DrawError", "draw", "to_dot"]

_FORMATS = {".svg": "svg", ".png": "png", ".dot": None, ".gv": None}


class DrawError(Error, OSError):
    """Graphviz is missing, failed, or took too long."""


def _byte_name(label: int) -> str:
    if label == 0x20:
        return "␣"
    if 0x21 <= label < 0x7F:
        return chr(label)
    return f"\\x{label:02x}"


def _byte_ranges(labels: list[int]) -> str:
    """``[97..122, 32]`` -> ``'a-z ␣'``: consecutive alphanumerics collapse into ranges."""
    parts: list[str] = []
    i = 0
    while i < len(labels):
        j = i
        while j + 1 < len(labels) and labels[j + 1] == labels[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{_byte_name(labels[i])}-{_byte_name(labels[j])}")
        else:
            parts.extend(_byte_name(lab) for lab in labels[i : j + 1])
        i = j + 1
    return " ".join(parts)


def _edge_label(labels: list[int], label_text: LabelText | None, max_items: int = 12) -> str:
    eps = EPSILON in labels
    labels = sorted(lab for lab in labels if lab != EPSILON)
    if label_text is None:
        text = _byte_ranges(labels)
        if len(text) > 60:
            text = text[:57] + f"... ({len(labels)} bytes)"
    else:
        shown = [repr(label_text(lab)) for lab in labels[:max_items]]
        if len(labels) > max_items:
            shown.append(f"... ({len(labels)} labels)")
        text = " ".join(shown)
    if eps:
        text = ("ε " + text).strip()
    return text


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(fst: pynini.Fst, *, label_text: LabelText | None = None, title: str | None = None) -> str:
    """The DOT source for ``fst`` (no size limit: callers decide what is drawable)."""
    zero = pynini.Weight.zero(fst.weight_type())
    lines = [
        "digraph fst {",
        "  rankdir=LR;",
        '  node [shape=circle, fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    if title:
        lines.append(f"  label={_quote(title)}; labelloc=t;")
    start = fst.start()
    if start != pynini.NO_STATE_ID:
        lines.append('  __start [shape=point, width=0.05, label=""];')
        lines.append(f"  __start -> {start};")
    for s in fst.states():
        shape = "doublecircle" if fst.final(s) != zero else "circle"
        lines.append(f"  {s} [shape={shape}, label={s}];")
    for s in fst.states():
        grouped: dict[int, list[int]] = collections.defaultdict(list)
        for arc in fst.arcs(s):
            grouped[arc.nextstate].append(arc.ilabel)
        for dst, labels in sorted(grouped.items()):
            lines.append(f"  {s} -> {dst} [label={_quote(_edge_label(labels, label_text))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw(
    fst: pynini.Fst,
    path: str | os.PathLike,
    *,
    max_states: int = 200,
    label_text: LabelText | None = None,
    title: str | None = None,
    timeout_s: float = 60.0,
) -> Path:
    """Render ``fst`` to ``path``; the format follows the suffix (``.svg``, ``.png``, ``.dot``).

    Raises `FstSizeError` (with the automaton's size) above ``max_states`` states, ValueError for
    an unknown suffix, `DrawError` when ``dot`` is missing, fails or runs past ``timeout_s``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in _FORMATS:
        raise ValueError(
            f"cannot draw to {str(path)!r}: use one of {', '.join(sorted(_FORMATS))}"
        )
    n = fst.num_states()
    if n > max_states:
        arcs = sum(fst.num_arcs(s) for s in fst.states())
        raise FstSizeError(
            f"refusing to draw an automaton with {n:,} states and {arcs:,} arcs (limit "
            f"{max_states:,}): draw a smaller grammar or a sub-automaton, or raise max_states",
            stage="draw",
            states=n,
            limit=max_states,
        )
    source = to_dot(fst, label_text=label_text, title=title)
    fmt = _FORMATS[suffix]
    if fmt is None:
        path.write_text(source, encoding="utf-8")
        return path
    dot = shutil.which("dot")
    if dot is None:
        raise DrawError(
            "Graphviz 'dot' is not installed (Debian/Ubuntu: apt-get install graphviz; "
            f"macOS: brew install graphviz); or draw to {path.with_suffix('.dot')} instead"
        )
    # Write next to the target first, so a failed or killed run never leaves half a file.
    tmp_path = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        proc = subprocess.run(
            [dot, f"-T{fmt}", "-o", str(tmp_path)],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=timeout_s,
        )
        if proc.returncode != 0:
            raise DrawError(
                f"dot failed with exit status {proc.returncode}: "
                f"{proc.stderr.decode('utf-8', 'replace').strip()[:500]}"
            )
        os.replace(tmp_path, path)
    except subprocess.TimeoutExpired as exc:
        raise DrawError(
            f"dot took more than {timeout_s:g} s to lay out {n} states; draw a smaller automaton"
        ) from exc
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
    return path
