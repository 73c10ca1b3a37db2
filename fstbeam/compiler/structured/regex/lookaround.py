"""Lookarounds as automaton operations: `(?=X)`, `(?!X)`, `(?<=X)`, `(?<!X)`, exactly.

A pattern with lookarounds still describes a regular language (regular languages are closed
under intersection and complement), and no token-mask engine compiles one. Each lookaround j is
a marker symbol in the pattern's automaton where it stands (inside a repeat, one marker per
pass); the text with its markers must then meet one rule per lookaround: after every marker j,
the rest of the *whole* text (markers ignored) starts with a match of X (`(?=X)`; `(?!X)`: does
not); before every marker j, the text so far ends with one (`(?<=X)`, `(?<!X)`). The rule is a
difference: every marked text minus those with a marker j whose rest breaks it
(``Γ* j h⁻¹(bad)``, ``h⁻¹`` letting markers through anywhere). The markers are then dropped.
A lookahead's last `$` pins X to the end of the text, a lookbehind's first `^` to its start.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pynini

from ....fst.optimize import optimize
from .parse import Node

__all__ = ["LOOK_BASE", "marker_fst", "with_lookarounds"]

LOOK_BASE = 300  # marker label of lookaround j: LOOK_BASE + j (bytes are 1..255, anchors 256, 257)


def with_lookarounds(marked: pynini.Fst, looks: list[tuple[Node, bool]], markers: list[int],
                     build: Callable[[Node], pynini.Fst], any_char: Callable[[], pynini.Fst],
                     max_states: int) -> pynini.Fst:
    """``marked`` (text with the markers ``markers``: every lookaround's, and the anchors' where
    they are still in it) meeting each lookaround's rule, its lookaround markers dropped.
    ``looks``: (node, whether a text may pass it more than once); ``build`` compiles a
    lookaround's inner node to a text acceptor."""
    one = pynini.Weight.one(marked.weight_type())  # type: ignore[attr-defined]
    text_star = optimize(any_char().closure(), stage="regex lookaround")
    every = _marked_text(any_char, markers)  # (the rules' universe: text with every marker anywhere between characters)
    out = marked
    for j, ((_, direction, negate, inner, pinned), repeated) in enumerate(looks):
        x = build(inner)
        if not pinned:
            x = pynini.concat(x, text_star) if direction == "ahead" else pynini.concat(text_star, x)
        x = optimize(x, stage="regex lookaround", max_states=max_states)
        bad = x if negate else pynini.difference(text_star, x)  # the rest (or the text so far) that breaks it
        # Where a text passes marker j once at most, the other texts around it hold no j: the
        # broken texts are then deterministic as written (a marker j in them would make their
        # determinization track every j met, one run of `bad` each: `(?=.{1,253}$)` counts to 253).
        others = markers if repeated else [m for m in markers if m != LOOK_BASE + j]
        gamma = every if repeated else _marked_text(any_char, others)
        rest = _let_through(optimize(bad, stage="regex lookaround", max_states=max_states), others, one)
        mark = marker_fst(LOOK_BASE + j)
        broken = pynini.concat(gamma, mark).concat(rest) if direction == "ahead" else pynini.concat(rest, mark).concat(gamma)
        rule = pynini.difference(every, optimize(broken, stage="regex lookaround", max_states=max_states))
        out = optimize(pynini.intersect(out.arcsort("olabel"), rule.arcsort("ilabel")),
                       stage="regex lookaround", max_states=max_states)
    drop = [(LOOK_BASE + j, 0) for j in range(len(looks))]
    out.relabel_pairs(ipairs=drop, opairs=drop)
    return out


def marker_fst(label: int) -> pynini.Fst:
    """An acceptor of the one label ``label`` (markers outside the byte range, removed later:
    the anchors', the lookarounds', a JSON object's member markers)."""
    f = pynini.Fst()
    a, b = f.add_state(), f.add_state()
    f.set_start(a)
    f.set_final(b)
    f.add_arc(a, pynini.Arc(label, label, pynini.Weight.one(f.weight_type()), b))  # type: ignore[attr-defined]
    return f


def _marked_text(any_char: Callable[[], pynini.Fst], markers: list[int]) -> pynini.Fst:
    """Text with any of ``markers`` between its characters, as a minimal DFA."""
    return optimize(pynini.union(any_char(), *(marker_fst(m) for m in markers)).closure(), stage="regex lookaround")


def _let_through(fst: pynini.Fst, markers: list[int], one: Any) -> pynini.Fst:
    """``fst`` with a loop on every marker at every state: the texts it accepts, with markers
    anywhere between their characters (loops inside a character too: never taken, as markers
    stand between characters)."""
    for s in fst.states():
        for m in markers:
            fst.add_arc(s, pynini.Arc(m, m, one, s))  # type: ignore[attr-defined]
    fst.arcsort("ilabel")
    return fst
