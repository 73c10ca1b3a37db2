"""The artifact manifest's schema, checked before any of its values is used.

An artifact is untrusted input (DESIGN.md): every field the loader reads is checked here for type
and range, the ``light`` entries' class is one of a fixed list (never an arbitrary ``getattr``),
roles agree with the spec, and the member table names only the members an artifact can have.
Any violation is an :class:`~fstbeam.errors.ArtifactCorruptError` naming the field.
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import ArtifactCorruptError

#: Light automaton classes an artifact may name (``light[i].class``).
LIGHT_CLASSES = ("LightAutomaton",)
ROLES = ("phrase", "avoid", "prefix")
#: dtypes an array member may have (no object, no structured dtypes).
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8")
MAX_WIDTH = 1 << 26  # token ids: far above any real vocabulary, small enough for int32 keys
MAX_LIGHT = 4096
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_MEMBER = re.compile(r"^(hard/[a-z_]+\.npy|light/\d{1,4}/[a-z_]+\.npy|token\.fst|char\.fst|char_state\.npy)$")


class _Checker:
    def __init__(self, path: object) -> None:
        self.path = path

    def fail(self, where: str, what: str) -> ArtifactCorruptError:
        return ArtifactCorruptError(f"{self.path}: manifest field {where} {what}; the artifact is damaged or "
                                    "was edited: recompile it with compile-constraints")

    def obj(self, v: Any, where: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(where, f"must be an object, not {type(v).__name__}")
        return v

    def key(self, d: dict[str, Any], k: str, where: str) -> Any:
        if k not in d:
            raise self.fail(f"{where}.{k}", "is missing")
        return d[k]

    def int_(self, v: Any, where: str, lo: int, hi: int) -> int:
        if type(v) is not int or not lo <= v <= hi:
            raise self.fail(where, f"must be an integer in [{lo}, {hi}] (got {v!r:.60})")
        return v

    def str_(self, v: Any, where: str, pattern: re.Pattern[str] | None = None) -> str:
        if not isinstance(v, str) or (pattern is not None and not pattern.match(v)):
            raise self.fail(where, f"must be {'a string' if pattern is None else 'of the form ' + pattern.pattern} "
                                   f"(got {v!r:.60})")
        return v

    def bool_(self, v: Any, where: str) -> bool:
        if type(v) is not bool:
            raise self.fail(where, f"must be true or false (got {v!r:.60})")
        return v


def check_manifest(m: Any, path: object, *, magic: str) -> dict[str, Any]:
    """Check the manifest's structure; returns it. Cross-checks against members are separate."""
    c = _Checker(path)
    m = c.obj(m, "(top level)")
    if m.get("magic") != magic:
        raise ArtifactCorruptError(f"{path} is not an fstbeam constraints artifact (no '{magic}' magic)")
    c.int_(c.key(m, "format_version", ""), "format_version", 0, 1 << 30)
    c.str_(c.key(m, "package_version", ""), "package_version")
    tok = c.obj(c.key(m, "tokenizer", ""), "tokenizer")
    c.str_(c.key(tok, "fingerprint", "tokenizer"), "tokenizer.fingerprint", _HEX64)
    c.str_(tok.get("name", ""), "tokenizer.name")
    c.str_(tok.get("kind", ""), "tokenizer.kind")
    width = c.int_(c.key(tok, "width", "tokenizer"), "tokenizer.width", 1, MAX_WIDTH)
    eos = c.key(tok, "eos_ids", "tokenizer")
    if not isinstance(eos, list) or not eos or len(eos) > 64:
        raise c.fail("tokenizer.eos_ids", "must be a non-empty list of token ids")
    for i, e in enumerate(eos):
        c.int_(e, f"tokenizer.eos_ids[{i}]", 0, width - 1)
    spec = c.obj(c.key(m, "spec", ""), "spec")
    c.str_(c.key(m, "spec_hash", ""), "spec_hash", _HEX64)
    c.obj(m.get("stats", {}), "stats")
    hard = c.key(m, "hard", "")
    if hard is not None:
        hard = c.obj(hard, "hard")
        c.int_(c.key(hard, "start", "hard"), "hard.start", 0, (1 << 31) - 1)
        if c.int_(c.key(hard, "width", "hard"), "hard.width", 1, MAX_WIDTH) != width:
            raise c.fail("hard.width", f"must equal tokenizer.width ({width})")
    light = c.key(m, "light", "")
    if not isinstance(light, list) or len(light) > MAX_LIGHT:
        raise c.fail("light", f"must be a list of at most {MAX_LIGHT} automata")
    for i, meta in enumerate(light):
        _check_light_meta(c, meta, f"light[{i}]", width)
    members = c.obj(c.key(m, "members", ""), "members")
    for name, info in members.items():
        _check_member(c, name, info)
    _check_spec_agrees(c, m, spec)
    return m  # type: ignore[no-any-return]  # checked to be an object above


_LIGHT_KEYS = {"class", "role", "kind", "text", "literal", "width", "start", "word_boundary", "case_sensitive",
               "source", "fingerprint", "max_progress", "items"}


def _check_light_meta(c: _Checker, meta: Any, where: str, width: int) -> None:
    meta = c.obj(meta, where)
    extra = set(meta) - _LIGHT_KEYS
    if extra:
        raise c.fail(where, f"has unexpected fields {sorted(extra)} (arrays are members, not manifest values)")
    cls = c.str_(c.key(meta, "class", where), f"{where}.class")
    if cls not in LIGHT_CLASSES:
        raise c.fail(f"{where}.class", f"names an unknown automaton class {cls!r} (known: {', '.join(LIGHT_CLASSES)})")
    role = c.key(meta, "role", where)
    if role not in ROLES:
        raise c.fail(f"{where}.role", f"must be one of {', '.join(ROLES)} (got {role!r:.40})")
    if meta.get("kind") != role:
        raise c.fail(f"{where}.kind", f"must equal its role {role!r} (got {meta.get('kind')!r:.40})")
    c.str_(c.key(meta, "text", where), f"{where}.text")
    lit = c.obj(c.key(meta, "literal", where), f"{where}.literal")
    hexs = c.str_(c.key(lit, "hex", f"{where}.literal"), f"{where}.literal.hex", re.compile(r"^([0-9a-f]{2})+$"))
    if len(hexs) > 2 << 20:
        raise c.fail(f"{where}.literal", "is longer than 1 MiB")
    if c.int_(c.key(meta, "width", where), f"{where}.width", 1, MAX_WIDTH) != width:
        raise c.fail(f"{where}.width", f"must equal tokenizer.width ({width})")
    c.int_(c.key(meta, "start", where), f"{where}.start", 0, (1 << 31) - 1)
    for flag in ("word_boundary", "case_sensitive"):
        c.bool_(c.key(meta, flag, where), f"{where}.{flag}")
    for s in ("source", "fingerprint", "items"):  # items: AnyOf / ordered automata (JSON)
        c.str_(meta.get(s, ""), f"{where}.{s}")
    c.int_(meta.get("max_progress", 0), f"{where}.max_progress", 0, (1 << 31) - 1)


def _check_member(c: _Checker, name: Any, info: Any) -> None:
    if not isinstance(name, str) or not _MEMBER.match(name):
        raise c.fail("members", f"names an unexpected member {name!r:.80}")
    info = c.obj(info, f"members[{name!r}]")
    c.str_(c.key(info, "sha256", name), f"members[{name!r}].sha256", _HEX64)
    c.int_(c.key(info, "bytes", name), f"members[{name!r}].bytes", 0, 1 << 40)
    if name.endswith(".npy"):
        shape = c.key(info, "shape", name)
        if not isinstance(shape, list) or len(shape) > 2:
            raise c.fail(f"members[{name!r}].shape", "must be a list of at most 2 sizes")
        for i, n in enumerate(shape):
            c.int_(n, f"members[{name!r}].shape[{i}]", 0, 1 << 40)
        if c.key(info, "dtype", name) not in DTYPES:
            raise c.fail(f"members[{name!r}].dtype", f"must be one of {', '.join(DTYPES)}")


def _texts(items: Any) -> list[Any]:
    if not isinstance(items, list):
        return [None]
    return [p.get("text") if isinstance(p, dict) else p for p in items]


def _spec_alternatives(items: Any) -> list[Any]:
    """The spec's must-include items, each as its list of alternative texts."""
    if not isinstance(items, list):
        return [None]
    out = []
    for p in items:
        alts = p.get("alternatives") if isinstance(p, dict) else None
        out.append(list(alts) if isinstance(alts, list) else [p.get("text") if isinstance(p, dict) else p])
    return out


def _light_alternatives(c: _Checker, metas: list[Any]) -> list[Any]:
    """The phrase automata's items, each as its list of alternatives: an AnyOf or ordered
    automaton stores its items as JSON (``items``), a plain one is its text."""
    import json

    out = []
    for meta in metas:
        if not meta.get("items"):
            out.append([meta["text"]])
            continue
        try:
            items = json.loads(meta["items"])["items"]
        except (ValueError, TypeError, KeyError):
            raise c.fail("light", "holds an automaton whose items are not valid JSON") from None
        if not isinstance(items, list) or not all(isinstance(i, list) for i in items):
            raise c.fail("light", "holds an automaton whose items are not lists of alternatives")
        out += items
    return out


def _check_spec_agrees(c: _Checker, m: dict[str, Any], spec: dict[str, Any]) -> None:
    """Roles and presence agree with the spec, so dropping or re-labelling an automaton is caught."""
    by_role = {r: [meta["text"] for meta in m["light"] if meta["role"] == r] for r in ROLES}
    phrase_metas = [meta for meta in m["light"] if meta["role"] == "phrase"]
    if _light_alternatives(c, phrase_metas) != _spec_alternatives(spec.get("phrases", [])):
        raise c.fail("light", "does not hold the spec's phrases in order (an automaton was dropped, added or re-labelled)")
    if by_role["avoid"] != _texts(spec.get("avoid", [])):
        raise c.fail("light", "does not hold the spec's avoid phrases in order (an automaton was dropped, added or re-labelled)")
    prefix = spec.get("prefix")
    if by_role["prefix"] != ([] if prefix is None else [prefix]):
        raise c.fail("light", "does not hold the spec's prefix")
    wants_hard = any(spec.get(k) for k in ("words", "cefr", "grammar", "regex", "choice", "json_schema"))
    if wants_hard != (m["hard"] is not None):
        raise c.fail("hard", "disagrees with the spec (a word list or grammar without its automaton, or the reverse)")
    hard_members = {n for n in m["members"] if n.startswith("hard/")}
    if (m["hard"] is None) != (not hard_members):
        raise c.fail("hard", "disagrees with the members (hard tables present without a hard automaton, or missing)")
