"""Small pure functions to look inside an acceptor: sizes, sample strings, where a text fails.

They work on byte automata (labels 1..255, the default) and on token automata (labels
``token_id + 1``) when given ``label_text``, a function from a label to the text it spells.
Nothing here modifies its argument or needs the automaton to be deterministic or epsilon-free.
Everything is bounded: on a 500k-state automaton a call costs what it visits, not the whole
automaton (except `stats`, `analyze`, `to_networkx`, which are whole-automaton by nature).
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import NamedTuple

import pynini

from .labels import EPSILON, MAX_BYTE_LABEL, MIN_BYTE_LABEL

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

LabelText = Callable[[int], str]
"""Maps an arc label to the text it spells (e.g. ``lambda l: tokenizer.decode([l - 1])``)."""

_NO_STATE = pynini.NO_STATE_ID
END = "<end>"
"""Entry of `PrefixMatch.next_possible` meaning "the text may stop here"."""


def byte_label_text(label: int) -> str:
    """Readable text of one byte label: printable ASCII as itself, anything else as ``\\xNN``."""
    if label == EPSILON:
        return "<eps>"
    if 0x20 <= label < 0x7F:
        return chr(label)
    return f"\\x{label:02x}"


# --------------------------------------------------------------------------- a cached view


class _View:
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
            self._live = _coaccessible(self.fst)
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
        if start == _NO_STATE or not self.live(start):
            return set()
        return self.closure({start})


def _accessible(fst: pynini.Fst) -> set[int]:
    start = fst.start()
    if start == _NO_STATE:
        return set()
    seen, todo = {start}, [start]
    while todo:
        for arc in fst.arcs(todo.pop()):
            if arc.nextstate not in seen:
                seen.add(arc.nextstate)
                todo.append(arc.nextstate)
    return seen


def _coaccessible(fst: pynini.Fst) -> set[int]:
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


# --------------------------------------------------------------------------- sizes


def stats(fst: pynini.Fst) -> dict:
    """Sizes and properties: states, arcs, finals, epsilon arcs, labels, determinism, cycles."""
    zero = pynini.Weight.zero(fst.weight_type())
    n_arcs = n_eps = max_out = finals = 0
    labels: set[int] = set()
    for s in fst.states():
        k = fst.num_arcs(s)
        n_arcs += k
        max_out = max(max_out, k)
        if fst.final(s) != zero:
            finals += 1
        for arc in fst.arcs(s):
            if arc.ilabel == EPSILON:
                n_eps += 1
            else:
                labels.add(arc.ilabel)
    props = fst.properties(
        pynini.ACCEPTOR | pynini.I_DETERMINISTIC | pynini.CYCLIC | pynini.WEIGHTED, True
    )
    return {
        "states": fst.num_states(),
        "arcs": n_arcs,
        "finals": finals,
        "start": None if fst.start() == _NO_STATE else fst.start(),
        "epsilon_arcs": n_eps,
        "distinct_labels": len(labels),
        "min_label": min(labels) if labels else None,
        "max_label": max(labels) if labels else None,
        "max_out_degree": max_out,
        "acceptor": bool(props & pynini.ACCEPTOR),
        "deterministic": bool(props & pynini.I_DETERMINISTIC),
        "cyclic": bool(props & pynini.CYCLIC),
        "weighted": bool(props & pynini.WEIGHTED),
        "empty": not _View(fst).initial(),
    }


# --------------------------------------------------------------------------- languages


def _labels_to_text(labels: Sequence[int], label_text: LabelText | None) -> str:
    if label_text is not None:
        return "".join(label_text(lab) for lab in labels)
    return bytes(labels).decode("utf-8", errors="backslashreplace")


def _to_labels(text: str | bytes | Sequence[int]) -> list[int]:
    if isinstance(text, str):
        text = text.encode("utf-8")
    return list(text)


def accepted_strings(
    fst: pynini.Fst,
    limit: int = 10,
    *,
    label_text: LabelText | None = None,
    max_length: int = 200,
    max_expansions: int = 100_000,
) -> list[str]:
    """Up to ``limit`` accepted strings, shortest first.

    Breadth first in label order while the search stays under ``max_expansions`` partial paths
    (ties come out in label order); past that, e.g. for 9,000 years x 365 days of ISO dates,
    OpenFst's n-shortest-paths finds the shortest strings directly (ties in no set order).
    Paths longer than ``max_length`` labels are not listed. Label paths that spell the same
    text are reported once.
    """
    view = _View(fst)
    if limit <= 0 or not view.initial():
        return []
    found = _breadth_first(view, limit, label_text, max_length, max_expansions)
    if found is None:
        found = _n_shortest(fst, limit, label_text, max_length)
    return found


def _breadth_first(
    view: _View, limit: int, label_text: LabelText | None, max_length: int, max_expansions: int
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
                text = _labels_to_text(path, label_text)
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
        next_level.sort(key=lambda item: item[1])  # label order within a length
        level = next_level
    return out


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
        text = _labels_to_text(path, label_text)
        if len(path) <= max_length and text not in out:
            out.append(text)
    return out


def shortest_string(fst: pynini.Fst, *, label_text: LabelText | None = None) -> str | None:
    """The shortest accepted string, or None if the language is empty."""
    found = accepted_strings(fst, 1, label_text=label_text, max_length=100_000)
    return found[0] if found else None


def accepts(fst: pynini.Fst, text: str | bytes | Sequence[int]) -> bool:
    """Does ``fst`` accept ``text``? A str is taken as its UTF-8 bytes; a list of ints as labels."""
    view = _View(fst)
    current = view.initial()
    for label in _to_labels(text):
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
    view = _View(fst)
    labels = _to_labels(text)
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
    return PrefixMatch(_labels_to_text(labels[:consumed], label_text), nexts)


def _utf8_length(lead: int) -> int:
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 1  # ASCII, or a byte that cannot start a character: shown on its own


def _next_chars(view: _View, states: set[int], per_lead: int = 32) -> tuple[str, ...]:
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
    labels = _to_labels(text)
    match = longest_accepted_prefix(fst, labels, label_text=label_text)
    shown = ", ".join(repr(n) for n in match.next_possible[:max_next])
    if len(match.next_possible) > max_next:
        shown += f", ... ({len(match.next_possible)} in all)"
    full = _labels_to_text(labels, label_text)
    if not fst.num_states() or fst.start() == _NO_STATE:
        return "the automaton accepts nothing (its language is empty)"
    if match.prefix == full:
        return f"the whole text is only the start of accepted strings; it could go on with: {shown}"
    rest = full[len(match.prefix):] if full.startswith(match.prefix) else full
    return (
        f"accepted up to {match.prefix!r} ({len(match.prefix)} chars), then {rest[:20]!r} is not "
        f"allowed; allowed next: {shown or 'nothing'}"
    )


# --------------------------------------------------------------------------- graph views


def to_networkx(fst: pynini.Fst, *, label_text: LabelText | None = None):
    """A ``networkx.MultiDiGraph``: nodes are states (attrs ``start``, ``final``), one edge per
    arc (attrs ``label``, ``olabel``, ``text``, ``weight``)."""
    import networkx as nx

    render = label_text or byte_label_text
    zero = pynini.Weight.zero(fst.weight_type())
    g = nx.MultiDiGraph()
    start = fst.start()
    for s in fst.states():
        g.add_node(s, start=(s == start), final=fst.final(s) != zero)
    for s in fst.states():
        for arc in fst.arcs(s):
            g.add_edge(
                s,
                arc.nextstate,
                label=arc.ilabel,
                olabel=arc.olabel,
                text="" if arc.ilabel == EPSILON else render(arc.ilabel),
                weight=str(arc.weight),
            )
    return g


def analyze(fst: pynini.Fst, *, byte_labels: bool = True) -> list[str]:
    """Human-readable findings, each line starting with ``warning:`` or ``info:``.

    Warnings: empty language, unreachable states, dead states (no path to a final state), epsilon
    arcs, non-determinism, transducer arcs, labels outside the byte range (when ``byte_labels``).
    Info: the strongly connected components (loops) and whether the language is finite.
    """
    import networkx as nx

    n = fst.num_states()
    if n == 0 or fst.start() == _NO_STATE:
        return ["warning: the automaton has no start state: its language is empty"]
    out: list[str] = []
    acc, coacc = _accessible(fst), _coaccessible(fst)
    useful = acc & coacc
    if fst.start() not in coacc:
        out.append("warning: no final state is reachable from the start: the language is empty")
    if n - len(acc):
        out.append(f"warning: {n - len(acc)} of {n} states are unreachable from the start")
    if len(acc - coacc):
        out.append(
            f"warning: {len(acc - coacc)} reachable states are dead (no path to a final state)"
        )
    st = stats(fst)
    if st["epsilon_arcs"]:
        out.append(f"warning: {st['epsilon_arcs']} epsilon arcs (run fstbeam.fst.optimize)")
    if not st["acceptor"]:
        out.append("warning: not an acceptor (input and output labels differ on some arc)")
    elif not st["deterministic"]:
        out.append("warning: not deterministic (run fstbeam.fst.optimize)")
    if byte_labels and st["max_label"] is not None and (
        st["max_label"] > MAX_BYTE_LABEL or st["min_label"] < MIN_BYTE_LABEL
    ):
        out.append(
            f"warning: labels {st['min_label']}..{st['max_label']} fall outside the byte range "
            f"{MIN_BYTE_LABEL}..{MAX_BYTE_LABEL}; was a string compiled with token_type='utf8'?"
        )
    # Loops, over the useful part only (unreachable and dead states were reported above).
    g = nx.DiGraph()
    g.add_nodes_from(useful)
    for s in useful:
        for arc in fst.arcs(s):
            if arc.nextstate in useful:
                g.add_edge(s, arc.nextstate)
    loops = [
        c for c in nx.strongly_connected_components(g)
        if len(c) > 1 or g.has_edge(next(iter(c)), next(iter(c)))
    ]
    if not loops:
        out.append("info: no loops: the language is finite")
    else:
        out.append(
            f"info: {len(loops)} loop components (largest {max(len(c) for c in loops)} of "
            f"{len(useful)} useful states): the language is infinite"
        )
    return out


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
