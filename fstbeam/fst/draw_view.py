"""What a drawing shows: a window of at most ``max_states`` states of an automaton, laid out.

A large automaton (a 150,000-state vocabulary) is not a picture, but its neighbourhood is: the
window is the first ``max_states`` states in breadth-first order from the start, or from the
state reached after a prefix text (``after``). Arcs that leave the window end in one box that
says how many states are not drawn. Parallel arcs between two states are merged into one edge
whose label is a compact byte set (``a-z``, ``0-9``, ``␣``): word classes collapse by themselves.

The layout needs no Graphviz: a state's column is its breadth-first depth, its row its place in
that column; the writers (`draw_svg`) draw straight edges between neighbouring columns and bent
ones elsewhere.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

import pynini

from ..errors import Error
from .inspect import LabelText
from .labels import EPSILON

__all__ = ["Edge", "View", "byte_name", "edge_label", "window"]

#: The id of the box standing for every state that is not drawn.
REST = -1


def byte_name(label: int) -> str:
    if label == 0x20:
        return "␣"
    if label == 0x0A:
        return "\\n"
    if 0x21 <= label < 0x7F:
        return chr(label)
    return f"\\x{label:02x}"


def _byte_ranges(labels: list[int]) -> str:
    """``[97..122, 32]`` -> ``'a-z ␣'``: runs of three or more consecutive bytes collapse."""
    parts: list[str] = []
    i = 0
    while i < len(labels):
        j = i
        while j + 1 < len(labels) and labels[j + 1] == labels[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{byte_name(labels[i])}-{byte_name(labels[j])}")
        else:
            parts.extend(byte_name(lab) for lab in labels[i : j + 1])
        i = j + 1
    return " ".join(parts)


def edge_label(labels: list[int], label_text: LabelText | None, max_items: int = 12) -> str:
    eps = EPSILON in labels
    labels = sorted({lab for lab in labels if lab != EPSILON})
    if label_text is None and len(labels) > 128:  # "any byte but a digit": name the few missing
        missing = sorted(set(range(1, 256)) - set(labels))
        text = f"any but {_byte_ranges(missing)}" if missing else "any byte"
        if len(text) > 40:
            text = text[:37] + f"... ({len(labels)} bytes)"
    elif label_text is None:
        text = _byte_ranges(labels)
        if len(text) > 40:
            text = text[:37] + f"... ({len(labels)} bytes)"
    else:
        shown = [repr(label_text(lab)) for lab in labels[:max_items]]
        if len(labels) > max_items:
            shown.append(f"... ({len(labels)} labels)")
        text = " ".join(shown)
    if eps:
        text = ("ε " + text).strip()
    return text


@dataclass(frozen=True)
class Edge:
    src: int
    dst: int  # REST: into the states not drawn
    label: str


@dataclass
class View:
    """The states drawn (in breadth-first order), their depth, finals, the edges, and a note."""

    states: list[int]
    depth: dict[int, int]
    final: set[int]
    start: int | None
    edges: list[Edge]
    hidden: int = 0  # states of the automaton not drawn
    note: str = ""
    title: str | None = None
    column: dict[int, list[int]] = field(default_factory=dict)
    entry: str = ""  # the label of the arrow into the first state (the prefix drawn from)


def _start_after(fst: pynini.Fst, after: str) -> int:
    """The state reached from the start by the bytes of ``after`` (one arc per byte)."""
    state = fst.start()
    for i, b in enumerate(after.encode("utf-8")):
        nxt = [arc.nextstate for arc in fst.arcs(state) if arc.ilabel == b]
        if not nxt:
            raise Error(f"cannot draw after {after!r}: the automaton allows no {byte_name(b)!r} after "
                        f"{after.encode('utf-8')[:i].decode('utf-8', 'replace')!r}")
        state = nxt[0]
    return state


def window(fst: pynini.Fst, max_states: int, *, label_text: LabelText | None = None,
           after: str | None = None, title: str | None = None) -> View:
    """The first ``max_states`` states breadth-first from the start (or from the state after
    ``after``), with every arc between them and, merged per source, the arcs that leave them."""
    zero = pynini.Weight.zero(fst.weight_type())
    start = fst.start()
    if start == pynini.NO_STATE_ID:
        return View([], {}, set(), None, [], title=title, note="the automaton is empty")
    root = _start_after(fst, after) if after else start
    depth = {root: 0}
    order = [root]
    queue = collections.deque([root])
    while queue and len(order) < max_states:
        s = queue.popleft()
        for arc in fst.arcs(s):
            if arc.nextstate not in depth and len(order) < max_states:
                depth[arc.nextstate] = depth[s] + 1
                order.append(arc.nextstate)
                queue.append(arc.nextstate)
    drawn = set(order)
    edges: list[Edge] = []
    for s in order:
        grouped: dict[int, list[int]] = collections.defaultdict(list)
        for arc in fst.arcs(s):
            grouped[arc.nextstate if arc.nextstate in drawn else REST].append(arc.ilabel)
        for dst, labels in sorted(grouped.items()):
            edges.append(Edge(s, dst, edge_label(labels, label_text)))
    total = fst.num_states()
    hidden = total - len(order)
    where = f"after {after!r}" if after else "from the start"
    note = ""
    if hidden > 0 or after:
        note = f"{len(order):,} of {total:,} states, breadth-first {where}"
        if hidden > 0:
            note += f"; the box stands for the other {hidden:,}"
    column: dict[int, list[int]] = collections.defaultdict(list)
    for s in order:
        column[depth[s]].append(s)
    finals = {s for s in order if fst.final(s) != zero}
    return View(order, depth, finals, root, edges, hidden, note, title, dict(column), f"after {after!r}" if after else "")
