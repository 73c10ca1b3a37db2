"""An ECMA-262 regular expression as a minimal byte acceptor (UTF-8).

`regex_fst(pattern)` accepts exactly the texts the pattern matches as a whole (the `regex=`
constraint); `regex_fst(pattern, search=True)` accepts the texts that *contain* a match, which is
how JSON Schema reads `pattern` (ECMA-262 unanchored search), unless `^`/`$` anchor it.

Anchors anywhere (`^a|b$`, `(^x)`) are compiled exactly: `^` and `$` become two marker symbols
that the text is framed by (BOL text EOL); the pattern may consume them, and the markers are
removed at the end. A pattern that starts with `^` and ends with `$` and has no other anchor
takes the direct path (no markers). Counted repeats are unrolled into a chain: `x{m,n}` is m
copies of x and n-m optional copies, linear in n; the unrolled automaton may hold at most
`MAX_STATES` states before it is determinized (and the result at most as many), else the
pattern is refused with a SpecError naming the quantifier or the pattern.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pynini

from ....errors import SpecError
from ....fst.optimize import FstSizeError, optimize
from ....fst.vector_fst import vector_fst_bytes
from .lookaround import LOOK_BASE, marker_fst, with_lookarounds
from .parse import Node, parse_regex
from .utf8 import ANY_CHAR, codepoint_ranges_fst

__all__ = ["regex_fst", "marker_fst", "MAX_STATES"]

MAX_STATES = 1_000_000
_BOL, _EOL = 256, 257  # marker labels outside the byte range, removed before returning


def regex_fst(pattern: str, *, where: str = "regex", search: bool = False,
              max_states: int = MAX_STATES) -> pynini.Fst:
    """A minimal deterministic byte acceptor of the texts ``pattern`` matches (``search=False``:
    the whole text; ``search=True``: some part of it, as JSON Schema's ``pattern``).

    ``where`` names the pattern in errors (e.g. ``"json_schema /properties/id/pattern"``).
    Unsupported syntax, or a pattern whose automaton would pass ``max_states``, raises SpecError.
    """
    tree = parse_regex(pattern, where)
    lead, tree, trail = _strip_outer_anchors(tree)
    builder = _Builder(pattern, where, max_states)
    try:
        body = builder.build(tree)
        if not _has_anchor(tree):
            if search:
                if not lead:
                    body = _any_star().concat(body)
                if not trail:
                    body.concat(_any_star())
            if builder.looks:
                body = builder.with_lookarounds(body, [])
        else:
            body = _with_markers(body, search=search, lead=lead, trail=trail, builder=builder)
        return optimize(body, stage=f"{where} {pattern[:60]!r}", max_states=max_states)
    except FstSizeError as err:
        raise SpecError(
            f"{where}: the pattern {pattern!r} needs more than {max_states:,} automaton states "
            "(a deterministic automaton of it is too large); simplify it, e.g. smaller counted "
            "repeats"
        ) from err


def _strip_outer_anchors(tree: Node) -> tuple[bool, Node, bool]:
    """`^ ... $` at the top level: the anchors say "from the start" / "to the end" directly."""
    if tree[0] in ("bol", "eol"):
        return tree[0] == "bol", ("cat", []), tree[0] == "eol"
    if tree[0] != "cat" or not tree[1]:
        return False, tree, False
    items = list(tree[1])
    lead = bool(items) and items[0][0] == "bol"
    if lead:
        items = items[1:]
    trail = bool(items) and items[-1][0] == "eol"
    if trail:
        items = items[:-1]
    return lead, ("cat", items), trail


def _has_anchor(tree: Node) -> bool:
    kind = tree[0]
    if kind in ("bol", "eol"):
        return True
    if kind in ("cat", "alt"):
        return any(_has_anchor(t) for t in tree[1])
    if kind == "rep":
        return _has_anchor(tree[1])
    return False


def _with_markers(body: pynini.Fst, *, search: bool, lead: bool, trail: bool, builder: _Builder) -> pynini.Fst:
    """Frame the text by BOL ... EOL, let the pattern consume the markers it asserts, then
    drop them: exact for anchors anywhere in the pattern (and lookarounds: their rules read
    the framed text, `lookaround`)."""
    bol, eol = marker_fst(_BOL), marker_fst(_EOL)
    if lead:
        body = bol.copy().concat(body)
    if trail:
        body.concat(eol)
    gamma = pynini.union(_any_char(), bol, eol).closure()
    left = gamma if search and not lead else pynini.union(bol, pynini.accep(""))
    right = gamma if search and not trail else pynini.union(eol, pynini.accep(""))
    framed = pynini.concat(left, body).concat(right)
    # the text between its markers: as many as the pattern asserts there (`(^){2}`, `(^|a)+` assert
    # `^` more than once at the start), and on the empty text the two in any order (`$^`)
    frame = pynini.union(bol.copy().closure(1).concat(_any_star()).concat(eol.copy().closure(1)),
                         pynini.union(bol, eol).closure(1))
    framed = optimize(framed, stage="regex anchors")
    if builder.looks:
        framed = builder.with_lookarounds(framed, [_BOL, _EOL])
    out = pynini.intersect(frame.arcsort("olabel"), framed)
    out.relabel_pairs(ipairs=[(_BOL, 0), (_EOL, 0)], opairs=[(_BOL, 0), (_EOL, 0)])
    return out


class _Builder:
    def __init__(self, pattern: str, where: str, max_states: int):
        self.pattern, self.where, self.max_states = pattern, where, max_states
        self.looks: list[tuple[Node, bool]] = []  # the lookarounds met (j-th marked LOOK_BASE + j), and
        # whether a text may pass the j-th more than once (inside a repeat)
        self._repeats = 0  # repeats of more than one pass around the node being built

    def with_lookarounds(self, marked: pynini.Fst, anchors: list[int]) -> pynini.Fst:
        markers = anchors + [LOOK_BASE + j for j in range(len(self.looks))]
        return with_lookarounds(marked, self.looks, markers, self.build, _any_char, self.max_states)

    def build(self, node: Node) -> pynini.Fst:
        kind = node[0]
        if kind == "set":
            return _class_fst(tuple(node[1])).copy()
        if kind == "bol":
            return marker_fst(_BOL)
        if kind == "eol":
            return marker_fst(_EOL)
        if kind == "look":
            self.looks.append((node, self._repeats > 0))
            return marker_fst(LOOK_BASE + len(self.looks) - 1)
        if kind == "cat":
            out = pynini.accep("")
            for item in node[1]:
                out.concat(self.build(item))
            return out
        if kind == "alt":
            return pynini.union(*(self.build(b) for b in node[1]))
        return self.repeat(node)

    def repeat(self, node: Node) -> pynini.Fst:
        _, inner, lo, hi = node
        many = hi is None or hi > 1
        self._repeats += many
        unit = self.build(inner)
        self._repeats -= many
        unit = optimize(unit, stage="regex repeat") if unit.num_states() > 2 else unit
        copies = max(lo, hi if hi is not None else 1, 1)
        if unit.num_states() * copies > self.max_states:
            raise SpecError(
                f"{self.where}: a repeat of {copies:,} copies of a {unit.num_states():,}-state "
                f"part in the pattern {self.pattern!r} passes the limit of {self.max_states:,} "
                "automaton states; lower the count"
            )
        zero = pynini.Weight.zero(unit.weight_type())  # type: ignore[attr-defined]
        if unit.start() == pynini.NO_STATE_ID or unit.final(unit.start()) != zero:  # type: ignore[attr-defined]
            return _repeat_by_closure(unit, lo, hi)  # empty or accepts "": rare, small counts
        return _repeat_chain(unit, lo, hi)


def _repeat_by_closure(unit: pynini.Fst, lo: int, hi: int | None) -> pynini.Fst:
    out = pynini.accep("")
    for _ in range(lo):
        out.concat(unit)
    if hi is None:
        return out.concat(unit.copy().closure())
    optional = pynini.union(unit, pynini.accep(""))
    for _ in range(hi - lo):
        out.concat(optional)
    return out


def _repeat_chain(unit: pynini.Fst, lo: int, hi: int | None) -> pynini.Fst:
    """unit{lo,hi} built directly, without epsilon arcs: copy c+1 is entered by copying the
    start arcs of the unit onto the final states of copy c (exact when the unit does not accept
    the empty string; with ``lo`` 0, a start that arcs come back to is not made final itself).
    A deterministic unit whose final states have no arcs gives a deterministic chain, so the
    final optimize does not determinize a chain of thousands of optional copies (an epsilon
    chain made that quadratic: 500 copies of `x?` took 80 s)."""
    if hi == 0:
        return pynini.accep("")
    n = unit.num_states()
    zero = pynini.Weight.zero(unit.weight_type())  # type: ignore[attr-defined]
    src, lab, dst, finals = [], [], [], []
    for s in unit.states():
        if unit.final(s) != zero:
            finals.append(s)
        for arc in unit.arcs(s):
            src.append(s)
            lab.append(arc.ilabel)
            dst.append(arc.nextstate)
    start = unit.start()
    src_a, lab_a, dst_a = np.array(src, np.int64), np.array(lab, np.int64), np.array(dst, np.int64)
    from_start = src_a == start
    s_lab, s_dst = lab_a[from_start], dst_a[from_start]
    fin = np.array(finals, np.int64)
    k = hi if hi is not None else max(lo, 1)
    offs = np.arange(k, dtype=np.int64) * n
    # Arcs inside each copy, and bridges from copy c's finals into copy c+1 (the last copy of an
    # unbounded repeat bridges into itself).
    parts_src = [(src_a[None, :] + offs[:, None]).ravel()]
    parts_lab = [np.tile(lab_a, k)]
    parts_dst = [(dst_a[None, :] + offs[:, None]).ravel()]
    bridge_from = np.arange(k - 1 if hi is not None else k, dtype=np.int64)
    bridge_to = np.minimum(bridge_from + 1, k - 1)
    if len(bridge_from) and len(fin) and len(s_lab):
        bf = (fin[None, :, None] + bridge_from[:, None, None] * n).repeat(len(s_lab), axis=2)
        bl = np.broadcast_to(s_lab[None, None, :], bf.shape)
        bd = s_dst[None, None, :] + bridge_to[:, None, None] * n
        bd = np.broadcast_to(bd, bf.shape)
        parts_src.append(bf.ravel())
        parts_lab.append(bl.ravel())
        parts_dst.append(bd.ravel())
    size = k * n
    if lo == 0 and (dst_a == start).any():
        # zero repeats: the start is final. A unit that comes back to its start (`x*c`) may not
        # stop there, so a new start takes the unit's start arcs ((x*c)* accepted "cx")
        parts_src.append(np.full(len(s_lab), size, np.int64))
        parts_lab.append(s_lab)
        parts_dst.append(s_dst)
        start, size = size, size + 1
    a_src, a_lab, a_dst = (np.concatenate(p) for p in (parts_src, parts_lab, parts_dst))
    order = np.argsort(a_src, kind="stable")
    final = np.zeros(size, bool)
    done = np.arange(k) + 1 >= max(lo, 1)  # copies 0..c make c+1 repeats
    final[(fin[None, :] + offs[done][:, None]).ravel()] = True
    if lo == 0:
        final[start] = True
    data = vector_fst_bytes(size, start, final, a_src[order], a_lab[order], a_dst[order])
    out = pynini.Fst.read_from_string(data)
    out.connect()
    return out


@cache
def _class_fst(ranges: tuple[tuple[int, int], ...]) -> pynini.Fst:
    return codepoint_ranges_fst(ranges)


def _any_char() -> pynini.Fst:
    return _class_fst(tuple(ANY_CHAR)).copy()


@cache
def _any_star_cached() -> pynini.Fst:
    return optimize(_any_char().closure(), stage="any text")


def _any_star() -> pynini.Fst:
    """Any valid UTF-8 text (without NUL). A fresh copy: pynini methods mutate in place."""
    return _any_star_cached().copy()
