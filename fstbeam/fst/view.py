"""A read-only, cached view of an acceptor for the bounded queries of `fstbeam.fst.inspect`.

`View` reads each state's arcs from pynini once and finds the live (co-accessible) states only
when a query needs them, so a query on a 500k-state automaton costs what it visits. Also here:
how labels turn into text (byte labels 1..255 by default, token labels through a `LabelText`).
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Sequence

import pynini

from .labels import EPSILON

__all__ = [
    "NO_STATE",
    "LabelText",
    "View",
    "accessible",
    "byte_label_text",
    "coaccessible",
    "labels_to_text",
    "to_labels",
]

LabelText = Callable[[int], str]
"""Maps an arc label to the text it spells (e.g. ``lambda l: tokenizer.decode([l - 1])``)."""

NO_STATE = pynini.NO_STATE_ID


def byte_label_text(label: int) -> str:
    """Readable text of one byte label: printable ASCII as itself, anything else as ``\\xNN``."""
    if label == EPSILON:
        return "<eps>"
    if 0x20 <= label < 0x7F:
        return chr(label)
    return f"\\x{label:02x}"


def labels_to_text(labels: Sequence[int], label_text: LabelText | None) -> str:
    if label_text is not None:
        return "".join(label_text(lab) for lab in labels)
    return bytes(labels).decode("utf-8", errors="backslashreplace")


def to_labels(text: str | bytes | Sequence[int]) -> list[int]:
    if isinstance(text, str):
        text = text.encode("utf-8")
    return list(text)


class View:
    """Arcs per state read from pynini once, and the live (co-accessible) states on demand."""

    def __init__(self, fst: pynini.Fst):
        self.fst = fst
        self._zero = pynini.Weight.zero(fst.weight_type())
        self._arcs: dict[int, list[tuple[int, int]]] = {}
        self._live: set[int] | None = None
        # A trimmed automaton (e.g. anything `optimize` returned) has only live states.
        props = fst.properties(pynini.COACCESSIBLE, True)
        self._all_live = bool(props & pynini.COACCESSIBLE)

    @property
    def start(self) -> int:
        return self.fst.start()

    def arcs(self, state: int) -> list[tuple[int, int]]:
        got = self._arcs.get(state)
        if got is None:
            got = sorted((a.ilabel, a.nextstate) for a in self.fst.arcs(state))
            self._arcs[state] = got
        return got

    def final(self, state: int) -> bool:
        return self.fst.final(state) != self._zero

    def live(self, state: int) -> bool:
        if self._all_live:
            return True
        if self._live is None:
            self._live = coaccessible(self.fst)
        return state in self._live

    def closure(self, states: set[int]) -> set[int]:
        """``states`` and what epsilon arcs reach from them, live states only."""
        todo, seen = list(states), set(states)
        while todo:
            for label, nxt in self.arcs(todo.pop()):
                if label == EPSILON and nxt not in seen and self.live(nxt):
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def step(self, states: set[int], label: int) -> set[int]:
        nxt = {n for s in states for lab, n in self.arcs(s) if lab == label and self.live(n)}
        return self.closure(nxt) if nxt else set()

    def labels_from(self, states: set[int]) -> list[int]:
        return sorted(
            {lab for s in states for lab, n in self.arcs(s) if lab != EPSILON and self.live(n)}
        )

    def initial(self) -> set[int]:
        start = self.start
        if start == NO_STATE or not self.live(start):
            return set()
        return self.closure({start})


def accessible(fst: pynini.Fst) -> set[int]:
    start = fst.start()
    if start == NO_STATE:
        return set()
    seen, todo = {start}, [start]
    while todo:
        for arc in fst.arcs(todo.pop()):
            if arc.nextstate not in seen:
                seen.add(arc.nextstate)
                todo.append(arc.nextstate)
    return seen


def coaccessible(fst: pynini.Fst) -> set[int]:
    zero = pynini.Weight.zero(fst.weight_type())
    reverse: dict[int, list[int]] = collections.defaultdict(list)
    finals = []
    for s in fst.states():
        if fst.final(s) != zero:
            finals.append(s)
        for arc in fst.arcs(s):
            reverse[arc.nextstate].append(s)
    seen, todo = set(finals), list(finals)
    while todo:
        for prev in reverse[todo.pop()]:
            if prev not in seen:
                seen.add(prev)
                todo.append(prev)
    return seen
