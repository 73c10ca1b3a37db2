"""Whole-automaton views of an acceptor: sizes (`stats`), a networkx graph (`to_networkx`) and
human-readable findings (`analyze`: empty language, unreachable or dead states, loops, ...).
"""
from __future__ import annotations

import pynini

from .labels import EPSILON, MAX_BYTE_LABEL, MIN_BYTE_LABEL
from .view import NO_STATE, LabelText, View, accessible, byte_label_text, coaccessible

__all__ = ["analyze", "stats", "to_networkx"]


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
        "start": None if fst.start() == NO_STATE else fst.start(),
        "epsilon_arcs": n_eps,
        "distinct_labels": len(labels),
        "min_label": min(labels) if labels else None,
        "max_label": max(labels) if labels else None,
        "max_out_degree": max_out,
        "acceptor": bool(props & pynini.ACCEPTOR),
        "deterministic": bool(props & pynini.I_DETERMINISTIC),
        "cyclic": bool(props & pynini.CYCLIC),
        "weighted": bool(props & pynini.WEIGHTED),
        "empty": not View(fst).initial(),
    }


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
    if n == 0 or fst.start() == NO_STATE:
        return ["warning: the automaton has no start state: its language is empty"]
    out: list[str] = []
    acc, coacc = accessible(fst), coaccessible(fst)
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
