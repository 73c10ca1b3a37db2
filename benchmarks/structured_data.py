"""bench_structured's data side: the JSONSchemaBench sample, how each instance is serialized, and the
small statistics every engine's figures go through (no engine imported here).

Serialization (the same string for every engine): compact JSON (``separators=(",", ":")``,
``ensure_ascii=False``) with each object's keys in the order its schema declares them (fstbeam's
``order_instance``; where that is unavailable, :func:`ordered`: ``properties``, then those of
``allOf`` / ``anyOf`` / ``oneOf`` / ``then`` / ``else`` branches, ``$ref`` followed), then the
undeclared keys in the instance's own order.
"""
from __future__ import annotations

import json
import math
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

SERIALIZATION = ('compact JSON: json.dumps(separators=(",", ":"), ensure_ascii=False); object keys in the '
                 "schema's declared property order (fstbeam's json_location.order_instance, the order its automaton "
                 "writes them), then undeclared keys in the instance's order; the same text for every engine")


@dataclass
class Case:
    """One schema file: its name (source before ``---``), the schema and its test instances."""

    name: str
    schema: Any
    instances: list[tuple[bool, str]] = field(default_factory=list)  # (valid, serialized text)

    @property
    def source(self) -> str:
        return source_of(self.name)


def source_of(name: str) -> str:
    return name.split("---", 1)[0]


def stratified(names: Sequence[str], limit: int | None, seed: int = 0) -> list[str]:
    """``limit`` names drawn by source (the prefix before ``---``) in proportion to each source's
    share, at least one per source, seeded; all names (sorted) when ``limit`` is None or too big."""
    names = sorted(names)
    if limit is None or limit >= len(names):
        return names
    by: dict[str, list[str]] = defaultdict(list)
    for n in names:
        by[source_of(n)].append(n)
    quota = {s: max(1, math.floor(limit * len(v) / len(names))) for s, v in by.items()}
    # largest remainders first until the quotas add up to the limit (or down, if the minimum of one overshot)
    order = sorted(by, key=lambda s: -(limit * len(by[s]) / len(names) - quota[s]))
    i = 0
    while sum(quota.values()) < limit:
        s = order[i % len(order)]
        if quota[s] < len(by[s]):
            quota[s] += 1
        i += 1
    while sum(quota.values()) > limit:
        s = max(quota, key=lambda k: quota[k])
        quota[s] -= 1
    rng = random.Random(seed)
    picked = [n for s in sorted(by) for n in rng.sample(by[s], quota[s])]
    return sorted(picked)


def load_cases(data_dir: str | Path, limit: int | None = None, seed: int = 0) -> list[Case]:
    d = Path(data_dir)
    files = [p.name for p in d.glob("*.json")]
    if not files:
        raise SystemExit(f"no *.json schema files in {d}: pass the JSONSchemaBench sample folder (e.g. ../shared/data/jsonschemabench_dev)")
    cases = []
    for name in stratified(files, limit, seed):
        raw = json.loads((d / name).read_text())
        schema = raw["schema"]
        tests = [(bool(t["valid"]), serialize(t["data"], schema)) for t in raw.get("tests", [])]
        cases.append(Case(name.removesuffix(".json"), schema, tests))
    return cases


# ---- serialization in the schema's declared property order ------------------------------------
def _resolve(schema: Any, root: Any, seen: frozenset[str] = frozenset()) -> Any:
    """Follow a local ``$ref`` (``#/...`` JSON pointer); anything else is returned as is."""
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#"):
        ref = schema["$ref"]
        if ref in seen:
            return {}
        seen = seen | {ref}
        node: Any = root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return {}
        schema = node
    return schema


def _branches(schema: Any, root: Any, depth: int = 0) -> list[Mapping]:
    """The schema and, depth first, every sub-schema whose properties apply to the same object."""
    s = _resolve(schema, root)
    if not isinstance(s, Mapping) or depth > 20:
        return []
    out = [s]
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in s.get(key, []) if isinstance(s.get(key), list) else []:
            out += _branches(sub, root, depth + 1)
    for key in ("then", "else"):
        if key in s:
            out += _branches(s[key], root, depth + 1)
    return out


def declared_order(schema: Any, root: Any) -> list[str]:
    order: dict[str, None] = {}
    for s in _branches(schema, root):
        props = s.get("properties")
        if isinstance(props, Mapping):
            order.update(dict.fromkeys(props))
    return list(order)


def _property_schemas(key: str, schema: Any, root: Any) -> list[Any]:
    out = []
    for s in _branches(schema, root):
        props = s.get("properties")
        if isinstance(props, Mapping) and key in props:
            out.append(props[key])
            continue
        pats = s.get("patternProperties")
        hit = False
        if isinstance(pats, Mapping):
            for pat, sub in pats.items():
                try:
                    if re.search(pat, key):
                        out.append(sub)
                        hit = True
                except re.error:
                    pass
        if not hit and isinstance(s.get("additionalProperties"), Mapping):
            out.append(s["additionalProperties"])
    return out


def _item_schemas(i: int, schema: Any, root: Any) -> list[Any]:
    out = []
    for s in _branches(schema, root):
        prefix = s.get("prefixItems")
        items = s.get("items")
        if isinstance(prefix, list) and i < len(prefix):
            out.append(prefix[i])
        elif isinstance(items, list):  # draft 4-7 tuple form
            if i < len(items):
                out.append(items[i])
            elif isinstance(s.get("additionalItems"), Mapping):
                out.append(s["additionalItems"])
        elif isinstance(items, Mapping):
            out.append(items)
    return out


def ordered(value: Any, schemas: Iterable[Any], root: Any) -> Any:
    """``value`` with every object's keys reordered: declared ones first (in declared order)."""
    schemas = list(schemas)
    if isinstance(value, dict):
        decl: dict[str, None] = {}
        for s in schemas:
            decl.update(dict.fromkeys(declared_order(s, root)))
        keys = [k for k in decl if k in value] + [k for k in value if k not in decl]
        return {k: ordered(value[k], [p for s in schemas for p in _property_schemas(k, s, root)], root) for k in keys}
    if isinstance(value, list):
        return [ordered(v, [p for s in schemas for p in _item_schemas(i, s, root)], root) for i, v in enumerate(value)]
    return value


def serialize(value: Any, schema: Any) -> str:
    """The instance as every engine reads it: keys in fstbeam's order (``order_instance``, the order
    its JSON Schema automaton writes them) where fstbeam's compiler is importable and reads the
    schema, else this module's own reading of the declared order (:func:`ordered`); compact."""
    try:
        from fstbeam.compiler.structured.json_schema.location import order_instance

        value = order_instance(schema, value)
    except Exception:  # noqa: BLE001 - no structured compiler here, or a schema it cannot read
        value = ordered(value, [schema], schema)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ---- statistics -----------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's
    default); None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def share(num: int, den: int) -> float | None:
    return None if den == 0 else round(100.0 * num / den, 1)
