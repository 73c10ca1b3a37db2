"""The schema's negative parts: `not`, a `oneOf` with a branch every value matches, `if`/`else`,
and the numbers they may read (also in `oneOf`'s `exactly_one` and the items that miss `contains`).

A complement is taken within the JSON values to `max_depth` at its place (docs/structured.md,
Depth). It also keeps numbers written with an exponent out (`plain_numbers`): the compiler
reads `integer`, an `enum`'s numbers and numeric bounds without exponents (`1e3` is no integer
there, though the specification counts it as one), so a complement of them would take `1e3` in
as "not an integer", and a `oneOf` of `integer` and `number` would take it as matching one
branch. Without exponents every number automaton holds every spelling of its values (`1`, `1.0`,
`-0`), so the complements are exact on what they accept.
"""
from __future__ import annotations

from functools import cache
from typing import Any

import pynini

from . import branches as jb
from .lexical import empty, union
from .location import Location, SchemaContext
from .refs import Unrolling

__all__ = ["plain_numbers", "none_of", "not_value", "if_then_else", "if_inside"]

# The labels a finished value holds besides bytes: the member marks of `containers` (a marked
# object turns them into commas only at the document's end).
_MARKS = (256, 257, 258)


@cache
def _plain() -> pynini.Fst:
    """JSON texts in which no digit outside a string is followed by ``e`` or ``E``."""
    f = pynini.Fst()
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    out, digit, text, escape = (f.add_state() for _ in range(4))
    f.set_start(out)
    f.set_final(out)
    f.set_final(digit)
    for src in (out, digit):
        for b in range(1, 256):
            if src == digit and b in b"eE":
                continue
            f.add_arc(src, pynini.Arc(b, b, one, text if b == ord('"') else digit if 0x30 <= b <= 0x39 else out))  # type: ignore[attr-defined]
        for m in _MARKS:
            f.add_arc(src, pynini.Arc(m, m, one, out))  # type: ignore[attr-defined]
    for b in range(1, 256):
        f.add_arc(text, pynini.Arc(b, b, one, out if b == ord('"') else escape if b == ord("\\") else text))  # type: ignore[attr-defined]
        f.add_arc(escape, pynini.Arc(b, b, one, text))  # type: ignore[attr-defined]
    f.arcsort("ilabel")
    return f


def plain_numbers(c: SchemaContext, fst: pynini.Fst) -> pynini.Fst:
    """``fst``'s texts whose numbers are written without an exponent."""
    return c.meet(fst, _plain())


def _universe(c: SchemaContext, loc: Location, rdepth: Unrolling) -> pynini.Fst:
    """Every value to `max_depth` here, numbers without an exponent: what a complement is taken in."""
    return plain_numbers(c, c.any_value(loc, rdepth.free_depth(c.max_depth)))


def none_of(c: SchemaContext, subs: list[Any], free: int, path: str, loc: Location, rdepth: Unrolling) -> pynini.Fst:
    """The values no branch of ``subs`` but ``free`` (one every value matches) matches: a
    `oneOf` with a free branch (read as that branch's "no", another branch's depth cut let deeper
    values through: Github_easy o2231's `{"#ref": ...}`)."""
    every = _universe(c, loc, rdepth)
    some = [c.value(s, f"{path}/{i}", loc, rdepth) for i, s in enumerate(subs) if i != free]
    return pynini.difference(every, c.det(union(some), path)) if some else every


def not_value(c: SchemaContext, banned: pynini.Fst, path: str, loc: Location, rdepth: Unrolling) -> pynini.Fst:
    """`not`: the values to `max_depth` here that ``banned`` does not hold."""
    return pynini.difference(_universe(c, loc, rdepth), c.det(banned, path))


def if_then_else(c: SchemaContext, node: dict[str, Any], path: str, loc: Location, rdepth: Unrolling) -> pynini.Fst:
    """(if ∩ then) ∪ (not-if ∩ else), not-if within the values to `max_depth` here."""
    cond = c.det(c.value(node["if"], f"{path}/if", loc, rdepth), path)
    yes = c.value(node.get("then", True), f"{path}/then", loc, rdepth)
    no = c.value(node.get("else", True), f"{path}/else", loc, rdepth)
    return c.meet(cond, yes) | c.meet(pynini.difference(_universe(c, loc, rdepth), cond), no)


def if_inside(c: SchemaContext, node: dict[str, Any], own: pynini.Fst | None, cond: Any, then: Any, other: Any,
              path: str, loc: Location, rdepth: Unrolling) -> pynini.Fst:
    """if/then/else (and `not X` as if X then false) inside ``node``'s own object ``own``:
    each branch merged with the node's object keywords (`branches`)."""
    def within(subs: list[Any], where: str) -> pynini.Fst:
        m = jb.merged(node, subs)
        if m is None:  # the same combinator in two branches: each merged alone, then met
            return c.meet(within([subs[0]], where), within(subs[1:], where))
        return c.value(c.synth(m), where, loc, rdepth) if isinstance(m, dict) else empty()

    assert own is not None  # (an object node with object keywords: its own object is built)
    holds = c.det(within([cond], f"{path}/if"), path)
    rest = own if other is True else within([other], f"{path}/else")
    return within([cond, then], f"{path}/then") | pynini.difference(plain_numbers(c, rest), holds)
