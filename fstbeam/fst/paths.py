"""Bounded questions about an acceptor's language: sample strings, membership, where a text
fails. Each call costs what it visits (see `View`), never the whole automaton; they work on
byte automata and, given ``label_text``, on token automata (labels ``token_id + 1``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import pynini

from .labels import EPSILON
from .view import NO_STATE, LabelText, View, byte_label_text, labels_to_text, to_labels

__all__ = [
    "END",
    "PrefixMatch",
    "accepted_strings",
    "accepts",
    "explain_rejection",
    "longest_accepted_prefix",
    "shortest_string",
]

END = "<end>"
"""Entry of `PrefixMatch.next_possible` meaning "the text may stop here"."""


def accepted_strings(
    fst: pynini.Fst,
    limit: int = 10,
    *,
    label_text: LabelText | None = None,
    max_length: int = 200,
    max_expansions: int = 100_000,
) -> list[str]:
    """Up to ``limit`` accepted strings, shortest first.

    Breadth first (byte labels: readable bytes first, control bytes last; token labels in label
    order) while the search stays under ``max_expansions`` partial paths
    (ties come out in label order); past that, e.g. for 9,000 years x 365 days of ISO dates,
    OpenFst's n-shortest-paths finds the shortest strings directly (ties in no set order).
    Paths longer than ``max_length`` labels are not listed. Label paths that spell the same
    text are reported once.
    """
    view = View(fst)
    if limit <= 0 or not view.initial():
        return []
    found = _breadth_first(view, limit, label_text, max_length, max_expansions)
    if found is None:
        found = _n_shortest(fst, limit, label_text, max_length)
    return found


def _breadth_first(
    view: View, limit: int, label_text: LabelText | None, max_length: int, max_expansions: int
) -> list[str] | None:
    """Level by level (one level per label length), or None when the levels grow too wide."""
    out: list[str] = []
    seen_text: set[str] = set()
    level: list[tuple[int, tuple[int, ...]]] = [(s, ()) for s in sorted(view.initial())]
    expansions = 0
    for _length in range(max_length + 1):
        if not level:
            break
        next_level: list[tuple[int, tuple[int, ...]]] = []
        for state, path in level:
            expansions += 1
            if view.final(state):
                text = labels_to_text(path, label_text)
                if text not in seen_text:
                    seen_text.add(text)
                    out.append(text)
                    if len(out) >= limit:
                        return out
            if expansions > max_expansions or len(next_level) > max_expansions:
                return None
            for label, nxt in view.arcs(state):
                if label != EPSILON and view.live(nxt):
                    for target in sorted(view.closure({nxt})):
                        next_level.append((target, path + (label,)))
        # within a length: for byte labels, readable texts first (letters and digits, punctuation,
        # space, other UTF-8), control bytes last, so a grammar that allows any text shows "0", "A", ...
        # rather than "\x01", "\x02"; token labels in label order
        next_level.sort(key=lambda item: tuple(map(_byte_rank, item[1])) if label_text is None else item[1])
        level = next_level
    return out


def _byte_rank(label: int) -> tuple[int, int]:
    if 0 < label < 128 and chr(label).isalnum():
        return (0, label)
    if 0x21 <= label <= 0x7E:
        return (1, label)
    if label == 0x20:
        return (2, label)
    if label >= 0x80:
        return (3, label)
    return (4, label)


def _n_shortest(fst: pynini.Fst, limit: int, label_text: LabelText | None, max_length: int) -> list[str]:
    # Every arc costs 1, so the n best paths are the n shortest strings.
    weighted = pynini.arcmap(fst, map_type="rmweight")
    weighted = pynini.arcmap(weighted, map_type="times", weight=pynini.Weight(weighted.weight_type(), 1.0))
    best = pynini.shortestpath(weighted, nshortest=limit, unique=True)
    paths: list[tuple[int, ...]] = []
    it = best.paths()
    while not it.done():
        paths.append(tuple(lab for lab in it.ilabels() if lab != EPSILON))
        it.next()
    paths.sort(key=lambda p: (len(p), p))
    out: list[str] = []
    for path in paths:
        text = labels_to_text(path, label_text)
        if len(path) <= max_length and text not in out:
            out.append(text)
    return out


def shortest_string(fst: pynini.Fst, *, label_text: LabelText | None = None) -> str | None:
    """The shortest accepted string, or None if the language is empty."""
    found = accepted_strings(fst, 1, label_text=label_text, max_length=100_000)
    return found[0] if found else None


def accepts(fst: pynini.Fst, text: str | bytes | Sequence[int]) -> bool:
    """Does ``fst`` accept ``text``? A str is taken as its UTF-8 bytes; a list of ints as labels."""
    view = View(fst)
    current = view.initial()
    for label in to_labels(text):
        if not current:
            return False
        current = view.step(current, label)
    return any(view.final(s) for s in current)


class PrefixMatch(NamedTuple):
    """Where a text leaves the language (see `longest_accepted_prefix`)."""

    prefix: str
    """The longest prefix of the text that is a prefix of some accepted string."""
    next_possible: tuple[str, ...]
    """What could come next after ``prefix``; ``"<end>"`` first if the prefix is accepted."""


def longest_accepted_prefix(
    fst: pynini.Fst,
    text: str | bytes | Sequence[int],
    *,
    label_text: LabelText | None = None,
) -> PrefixMatch:
    """The longest prefix of ``text`` that can still be completed, and what could follow it.

    For byte automata ``next_possible`` lists whole UTF-8 characters (``'é'``, not ``'\\xc3'``);
    with ``label_text`` it lists the text of each possible next label. Dead branches (that can
    never reach a final state) are not offered.
    """
    view = View(fst)
    labels = to_labels(text)
    current = view.initial()
    consumed = 0
    if current:
        for label in labels:
            nxt = view.step(current, label)
            if not nxt:
                break
            current = nxt
            consumed += 1
    if label_text is None:
        nexts = _next_chars(view, current)
    else:
        nexts = tuple(label_text(lab) for lab in view.labels_from(current))
    if any(view.final(s) for s in current):
        nexts = (END,) + nexts
    return PrefixMatch(labels_to_text(labels[:consumed], label_text), nexts)


def _utf8_length(lead: int) -> int:
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 1  # ASCII, or a byte that cannot start a character: shown on its own


def _next_chars(view: View, states: set[int], per_lead: int = 32) -> tuple[str, ...]:
    """Characters that can follow ``states``: whole UTF-8 characters where the automaton spells
    them out (at most ``per_lead`` per lead byte, else the lead byte and ``...``)."""
    out: list[str] = []
    for lead in view.labels_from(states):
        need = _utf8_length(lead)
        if need == 1:
            out.append(byte_label_text(lead))
            continue
        found: list[str] = []
        todo = [((lead,), view.step(states, lead))]  # depth first: whole characters come fast
        while todo and len(found) <= per_lead:
            seq, cur = todo.pop()
            if len(seq) == need:
                found.append(bytes(seq).decode("utf-8", errors="backslashreplace"))
                continue
            for lab in reversed(view.labels_from(cur)):
                if 0x80 <= lab <= 0xBF:
                    todo.append((seq + (lab,), view.step(cur, lab)))
        if found and len(found) <= per_lead:
            out.extend(found)
        else:
            out.append(byte_label_text(lead) + "...")
    return tuple(out)


def explain_rejection(
    fst: pynini.Fst,
    text: str | bytes | Sequence[int],
    *,
    label_text: LabelText | None = None,
    max_next: int = 20,
) -> str | None:
    """None if ``text`` is accepted, else one line: where it goes wrong and what could follow."""
    if accepts(fst, text):
        return None
    labels = to_labels(text)
    match = longest_accepted_prefix(fst, labels, label_text=label_text)
    shown = ", ".join(repr(n) for n in match.next_possible[:max_next])
    if len(match.next_possible) > max_next:
        shown += f", ... ({len(match.next_possible)} in all)"
    full = labels_to_text(labels, label_text)
    if not fst.num_states() or fst.start() == NO_STATE:
        return "the automaton accepts nothing (its language is empty)"
    if match.prefix == full:
        return f"the whole text is only the start of accepted strings; it could go on with: {shown}"
    rest = full[len(match.prefix):] if full.startswith(match.prefix) else full
    return (
        f"accepted up to {match.prefix!r} ({len(match.prefix)} chars), then {rest[:20]!r} is not "
        f"allowed; allowed next: {shown or 'nothing'}"
    )
