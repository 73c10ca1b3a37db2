"""Objects and arrays of a schema node, and the free JSON value of a location.

Members are built as a sequence of pieces that each start with a marker label (`_MARK`, outside
the byte range): counting keywords (`minProperties`, `maxItems`, ...) intersect the sequence with
a count of markers, then one small transducer deletes the first marker and turns the others into
commas. So an optional member costs one `?` (no copies per "something came before" state), and
nested values hold no markers (theirs are already commas).
"""
from __future__ import annotations

import logging
from functools import cache, lru_cache
from typing import Any

import pynini

from ....fst.optimize import optimize, sigma_star
from ..regex import marker_fst
from .complements import plain_numbers
from .lexical import any_char, empty, free_string, lit, number_fst, repeat, string_of
from .lexical import union as union_of
from .location import Location, SchemaContext
from .refs import Unrolling
from .required_choices import NOTES, choice_rule, required_choices
from .unique import distinct_items

__all__ = ["object_value", "array_value", "any_value", "object_slots", "member_exclusions"]

log = logging.getLogger("fstbeam")
_MARK = 256  # before every member and item; a comma, or nothing right after { or [
_COUNTED = 257  # the same, while an object's or array's own members are being counted
_CONTAINS = 258  # an item that matches `contains`, while those are counted
_SLOT_BASE = 1000  # one marker per declared member, while dependencies are checked
MAX_PATTERN_PROPERTIES = 8
MAX_COUNT_STATES = 100_000


def _mark(label: int = _MARK) -> pynini.Fst:
    return marker_fst(label)


@cache
def _commas() -> pynini.Fst:
    """Markers to text: one right after `{` or `[` vanishes, any other becomes a comma. (A
    marker never follows a `{` or `[` inside a string: it follows a value's last byte, its
    whitespace, or the opening bracket of its own object or array.)"""
    f = pynini.Fst()
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    other, opened = f.add_state(), f.add_state()
    f.set_start(other)
    f.set_final(other)
    f.set_final(opened)
    for src in (other, opened):
        for b in range(1, 256):
            f.add_arc(src, pynini.Arc(b, b, one, opened if b in b"{[" else other))  # type: ignore[attr-defined]
        f.add_arc(src, pynini.Arc(_MARK, 0 if src == opened else ord(","), one, other))  # type: ignore[attr-defined]
    f.arcsort("ilabel")
    return f


def finish(doc: pynini.Fst) -> pynini.Fst:
    """The text of a marked document (markers resolved to commas); ``doc`` is arc-sorted in
    place (not copied: it is the largest automaton of a compile)."""
    text: pynini.Fst = pynini.compose(doc.arcsort("olabel"), _commas()).project("output")
    return text


def _labels(labels: set[int]) -> pynini.Fst:
    """One symbol of ``labels``."""
    f = pynini.Fst()
    a, b = f.add_state(), f.add_state()
    f.set_start(a)
    f.set_final(b)
    one = pynini.Weight.one(f.weight_type())  # type: ignore[attr-defined]
    for label in sorted(labels):
        f.add_arc(a, pynini.Arc(label, label, one, b))  # type: ignore[attr-defined]
    return f


def _count(lo: int, hi: int | None, own: set[int]) -> pynini.Fst:
    """Sequences with lo..hi markers of ``own`` (anything else in between, inner markers too)."""
    other = sigma_star()
    other.union(_mark()).closure()
    piece = _labels(own) + other
    reps = repeat(piece, lo, hi)
    return other + reps


def _requires(own: set[int], if_label: int, then_labels: list[int | None]) -> pynini.Fst:
    """Marked sequences in which ``if_label`` appears only together with every one of
    ``then_labels`` (None: a member that cannot appear, so neither can ``if_label``; none at
    all: any sequence, as `{"dependentRequired": {"a": []}}` asks nothing)."""
    rest = _labels(set(range(1, 257)) | own)
    without = _labels(set(range(1, 257)) | (own - {if_label})).closure()
    if any(t is None for t in then_labels):
        return without
    everything = rest.copy().closure()
    need = None
    for t in then_labels:
        assert t is not None
        has = everything + _labels({t}) + everything
        need = has if need is None else pynini.intersect(optimize(need, stage="json deps"),
                                                         optimize(has, stage="json deps"))
    return everything if need is None else without | need


def _needs_count(lo: int, hi: int | None, forced: int, most: int | None) -> bool:
    return lo > forced or (hi is not None and (most is None or most > hi))


def _resolve(c: SchemaContext, members: pynini.Fst, lo: int, hi: int | None, counted: bool,
             open_: str, close: str, path: str, own: set[int] | None = None,
             rules: list[pynini.Fst] | None = None) -> pynini.Fst:
    """Apply the count limits and dependency rules over the members' own markers (``own``;
    default: the one counted marker), turn them into plain markers, and wrap."""
    own = own or {_COUNTED}
    if counted:
        members = c.meet(members, c.opt(_count(lo, hi, own), path))
    for rule in rules or []:
        members = c.meet(members, c.opt(rule, path))
    if own != {_MARK}:
        pairs = [(label, _MARK) for label in own]
        members.relabel_pairs(ipairs=pairs, opairs=pairs)
    out = lit(open_)
    out.concat(members).concat(lit(close))
    if lo == 0 and c.ws.num_states() > 1 and _accepts(members, ""):
        out.union(lit(open_) + c.ws + lit(close))  # whitespace inside an empty one
    return out


def _key(name: str) -> pynini.Fst:
    return _key_cached(name).copy()


@lru_cache(maxsize=1024)  # bounded: a server compiles schema after schema in one process
def _key_cached(name: str) -> pynini.Fst:
    return string_of(lit(name), stage="json key")


def _piece(c: SchemaContext, key: pynini.Fst, value: pynini.Fst,
           label: int = _MARK) -> pynini.Fst:
    out = _mark(label)
    for part in (c.ws, key, c.ws, lit(":"), c.ws, value, c.ws):
        out.concat(part)
    return out


def _accepts(fst: pynini.Fst, text: str) -> bool:
    try:
        out = pynini.intersect(lit(text), fst)
    except pynini.FstOpError:  # type: ignore[attr-defined]
        return False
    out.connect()
    nonempty: bool = out.num_states() > 0
    return nonempty


def object_value(c: SchemaContext, node: dict[str, Any], path: str, loc: Location,
                 rdepth: Unrolling) -> pynini.Fst:
    outer, rdepth = rdepth, rdepth.inside()  # members are one instance level down
    props = node.get("properties") or {}
    required = [r for r in node.get("required") or [] if isinstance(r, str)]
    extra_schema = node.get("additionalProperties", True)
    patterns = node.get("patternProperties") or {}
    if len(patterns) > MAX_PATTERN_PROPERTIES:
        raise c.fail("patternProperties", f"{path}/patternProperties",
                     f"more than {MAX_PATTERN_PROPERTIES} patterns")
    from ..regex import regex_fst

    pats = {p: c.opt(regex_fst(p, where=f"{c.where} {path}/patternProperties", search=True),
                     path) for p in patterns}
    names_ok = None
    if "propertyNames" in node:
        names_ok = c.value(node["propertyNames"], f"{path}/propertyNames", loc.extra(), rdepth)
    slots = object_slots(node, loc)
    lo = int(node.get("minProperties", 0))
    hi = None if node.get("maxProperties") is None else int(node["maxProperties"])
    may_extra = extra_schema is not False or bool(patterns)
    counted = _needs_count(lo, hi, len(set(required)), None if may_extra else len(slots))
    deps = _list_dependencies(node)
    excl = member_exclusions(node, slots)
    choices = required_choices(node, slots)  # (their combinators left out by `json_schema`)
    # own markers: one label per slot where dependencies must see which member is which
    unique = bool(deps) or bool(excl) or bool(choices)
    label = _COUNTED if counted or unique else _MARK
    slot_label: dict[str, int] = {}
    members = lit("")
    for i, k in enumerate(slots):
        sub = f"{path}/properties/{k}"
        schemas = [props[k]] if k in props else []
        matched = [p for p in patterns if _accepts(pats[p], k)]
        schemas += [patterns[p] for p in matched]
        if k not in props and not matched:
            schemas.append(extra_schema)
        allowed = all(s is not False for s in schemas) and (
            names_ok is None or _accepts(names_ok, _quoted(k)))
        if not allowed:
            if k in required:
                return empty()
            continue
        child = loc.prop(k) if k in loc.keys else loc.extra()
        val = None
        for s in schemas:
            v = c.value(s, sub, child, outer.inside(k))
            val = v if val is None else c.meet(val, v)
        assert val is not None
        slot_label[k] = _SLOT_BASE + i if unique else label
        piece = _piece(c, _key(k), val, slot_label[k])
        if k not in required:
            piece.closure(0, 1)
        members.concat(piece)  # in place: a chain of concatenations copies each piece once
    extras = _extras(c, node, path, loc, rdepth, slots, extra_schema, pats, patterns, names_ok,
                     label)
    if extras is not None:
        members.concat(extras.closure())
    own = {label, *slot_label.values()}
    rules = [_requires(own, slot_label[a], [slot_label.get(b) for b in bs])
             for a, bs in deps if a in slot_label]
    rules += [_excludes(own, slot_label[a], [slot_label[b] for b in bs])
              for a, bs in excl.items() if a in slot_label and all(b in slot_label for b in bs)]
    rules += [choice_rule(kw, sets, slot_label, set(range(1, 257)) | own) for kw, sets in choices]
    return _resolve(c, members, lo, hi, counted, "{", "}", path, own=own, rules=rules)


def object_slots(node: dict[str, Any], loc: Location) -> list[str]:
    """The declared members of an object at ``loc``, in order: the location's keys, then the
    node's other properties and required names."""
    props = node.get("properties") or {}
    required = [r for r in node.get("required") or [] if isinstance(r, str)]
    slots = list(loc.keys) + [k for k in props if k not in loc.keys]
    return slots + [k for k in dict.fromkeys(required) if k not in slots]


def member_exclusions(node: dict[str, Any], slots: list[str]) -> dict[str, list[str]]:
    """Draft-7 `dependencies` of the form ``a: {"not": {"required": [b, ...]}}`` ("a excludes
    b"), between declared members: a rule over the members' markers, where the general form (an
    `if`/`then` over the whole object) takes complements of the object (28 s on the Chrome
    manifest schema). `json_schema` leaves these to `object_value`."""
    deps = node.get("dependencies")
    out: dict[str, list[str]] = {}
    if not isinstance(deps, dict):
        return out
    for a, sub in deps.items():
        if not (isinstance(sub, dict) and set(sub) - NOTES == {"not"}):
            continue
        inner = sub["not"]
        if not (isinstance(inner, dict) and set(inner) - NOTES == {"required"}):
            continue
        names = inner["required"]
        if (isinstance(names, list) and names and all(isinstance(b, str) for b in names)
                and a in slots and all(b in slots for b in names)):
            out[a] = list(names)
    return out


def _excludes(own: set[int], if_label: int, then_labels: list[int]) -> pynini.Fst:
    """Marked sequences in which ``if_label`` appears only without some of ``then_labels``."""
    everything = _labels(set(range(1, 257)) | own).closure()
    without = _labels(set(range(1, 257)) | (own - {if_label})).closure()
    has_all = None
    for t in then_labels:
        has = optimize(everything + _labels({t}) + everything, stage="json deps")
        has_all = has if has_all is None else optimize(pynini.intersect(has_all, has),
                                                       stage="json deps")
    assert has_all is not None
    return without | pynini.difference(optimize(everything, stage="json deps"), has_all)


def _list_dependencies(node: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """`dependentRequired` and the list form of draft-7 `dependencies`."""
    out = []
    for kw in ("dependentRequired", "dependencies"):
        deps = node.get(kw)
        if isinstance(deps, dict):
            out += [(a, [b for b in bs if isinstance(b, str)]) for a, bs in deps.items()
                    if isinstance(bs, list)]
    return out


def _quoted(name: str) -> str:
    import json

    return json.dumps(name, ensure_ascii=False)


def _extras(c: SchemaContext, node: dict[str, Any], path: str, loc: Location,
            rdepth: Unrolling,
            slots: list[str], extra_schema: Any, pats: dict[str, pynini.Fst],
            patterns: dict[str, Any], names_ok: pynini.Fst | None,
            label: int) -> pynini.Fst | None:
    """One undeclared member: a key outside the slots, its value per the patterns it matches or
    `additionalProperties`. None when no undeclared member is allowed."""
    if extra_schema is False and not patterns:
        return None
    child = loc.extra()
    pieces = []
    if not patterns:
        if extra_schema is False:
            return None
        keyf = _other_keys(tuple(slots))
        if names_ok is not None:
            keyf = c.meet(keyf, names_ok)
        return _piece(c, keyf, c.value(extra_schema, f"{path}/additionalProperties", child,
                                       rdepth), label)
    decoded_any = pynini.closure(any_char())
    known = union_of([lit(k) for k in slots])
    free_keys = c.opt(pynini.difference(c.opt(decoded_any, path), c.opt(known, path)), path)
    # split the free keys by the set of patterns they match (pruning empty parts)
    parts: list[tuple[pynini.Fst, list[str]]] = [(free_keys, [])]
    for p in patterns:
        nxt = []
        for keys, matched in parts:
            inside = c.opt(pynini.intersect(keys, pats[p]), path)
            outside = c.opt(pynini.difference(keys, pats[p]), path)
            for part, m in ((inside, [*matched, p]), (outside, matched)):
                if part.num_states():
                    nxt.append((part, m))
        parts = nxt
    for keys, matched in parts:
        schemas = [patterns[p] for p in matched] if matched else [extra_schema]
        if any(s is False for s in schemas):
            continue
        val = None
        for s in schemas:
            v = c.value(s, f"{path}/additionalProperties", child, rdepth)
            val = v if val is None else c.meet(val, v)
        assert val is not None
        keyf = string_of(keys, stage=f"{c.where} {path} keys")
        if names_ok is not None:
            keyf = c.meet(keyf, names_ok)
        pieces.append(_piece(c, keyf, val, label))
    return union_of(pieces) if pieces else None


def _other_keys(slots: tuple[str, ...]) -> pynini.Fst:
    return _other_keys_cached(slots).copy()


@lru_cache(maxsize=64)
def _other_keys_cached(slots: tuple[str, ...]) -> pynini.Fst:
    """Every JSON string spelling except those of ``slots``."""
    if not slots:
        return free_string()
    return optimize(pynini.difference(free_string(), optimize(union_of([_key(k) for k in slots]),
                                                              stage="json keys")),
                    stage="json keys")


def array_value(c: SchemaContext, node: dict[str, Any], path: str, loc: Location,
                rdepth: Unrolling) -> pynini.Fst:
    rdepth = rdepth.inside()  # items are one instance level down
    child = loc.items()
    items = node.get("items")
    prefix = node.get("prefixItems")
    rest: Any = True
    if isinstance(items, list):  # draft 4..7 tuple form
        prefix, rest = items, node.get("additionalItems", True)
    elif items is not None:
        rest = items
    prefix = prefix if isinstance(prefix, list) else []
    contains = None
    if "contains" in node:
        contains = c.opt(c.value(node["contains"], f"{path}/contains", child, rdepth), path)
    lo = int(node.get("minItems", 0))
    hi = None if node.get("maxItems") is None else int(node["maxItems"])
    rest_value = c.value(rest, f"{path}/items", child, rdepth) if rest is not False else None
    if rest_value is not None:
        # counting repeats the item automaton once per count: past a budget the count is not
        # enforced (a WARNING names it; docs/structured.md)
        size = rest_value.num_states() + 4
        for kw, n in (("minItems", lo), ("maxItems", hi)):
            if n is not None and n * size > MAX_COUNT_STATES:
                log.warning("%s: %s %d at %s is not enforced (%d copies of a %d-state item)",
                            c.where, kw, n, path or "/", n, size)
                lo, hi = (0, hi) if kw == "minItems" else (lo, None)
    counted = _needs_count(lo, hi, 0, len(prefix) if rest is False else None)
    label = _COUNTED if counted else _MARK

    def item(value: pynini.Fst) -> pynini.Fst:
        if contains is None:
            return _piece_item(c, value, label)
        # an item that matches `contains` carries its own marker, to be counted
        return _piece_item(c, c.meet(value, contains), _CONTAINS) | _piece_item(  # (a complement: `plain_numbers`)
            c, pynini.difference(plain_numbers(c, value), contains), label)

    tail = None
    if node.get("uniqueItems") is True:
        tail = distinct_items(c, rest, rest_value, item, bool(prefix), path, child,
                              MAX_COUNT_STATES)
    if tail is None:
        tail = pynini.closure(item(rest_value)) if rest_value is not None else lit("")
    for i in reversed(range(len(prefix))):
        v = c.value(prefix[i], f"{path}/prefixItems/{i}", child, rdepth)
        piece = item(v)
        piece.concat(tail)
        tail = piece.closure(0, 1)
    if contains is not None:
        least = int(node.get("minContains", 1))
        most = None if node.get("maxContains") is None else int(node["maxContains"])
        other = _labels(set(range(1, 258)) - {_CONTAINS}).closure()
        piece = _labels({_CONTAINS}) + other
        reps = repeat(piece, least, most)
        tail = c.meet(tail, c.opt(other + reps, path))
        tail.relabel_pairs(ipairs=[(_CONTAINS, label)], opairs=[(_CONTAINS, label)])
    return _resolve(c, tail, lo, hi, counted, "[", "]", path)


def _piece_item(c: SchemaContext, value: pynini.Fst, label: int = _MARK) -> pynini.Fst:
    out = _mark(label)
    for part in (c.ws, value, c.ws):
        out.concat(part)
    return out


@cache
def _starts_with(first: str) -> pynini.Fst:
    rest = sigma_star()
    rest.union(_mark()).closure()
    return optimize(lit(first) + rest, stage="json type filter")


def starts_with(first: str) -> pynini.Fst:
    """Values whose first byte is ``first`` (then anything): an exact type filter for objects
    and arrays, used where other parts say what they hold."""
    return _starts_with(first).copy()


def any_value(c: SchemaContext, loc: Location, depth: int,
              only: str | None = None) -> pynini.Fst:
    """Every JSON value at ``loc`` nesting at most ``depth`` arrays/objects (keys in the
    location's order, then any others)."""
    words = c.string_words
    text = free_string() if words is None else string_of(words, stage="json free text")
    scalars = union_of([lit("null"), lit("true"), lit("false"), number_fst(), text])
    if depth <= 0:
        return empty() if only else c.opt(scalars, "(any value)")
    inner = c.any_value(loc.items(), depth - 1)
    arr = _resolve(c, pynini.closure(_piece_item(c, inner)), 0, None, False, "[", "]",
                   "(any array)")
    members = lit("")
    for k in loc.keys:
        members.concat(_piece(c, _key(k), c.any_value(loc.prop(k), depth - 1)).closure(0, 1))
    extra = _piece(c, _other_keys(loc.keys), c.any_value(loc.extra(), depth - 1))
    members.concat(extra.closure())
    obj = _resolve(c, members, 0, None, False, "{", "}", "(any object)")
    if only:
        return c.opt(obj if only == "object" else arr, "(any value)")
    return c.opt(union_of([scalars, arr, obj]), "(any value)")
