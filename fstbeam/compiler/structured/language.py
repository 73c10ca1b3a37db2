"""A request's structured part (regex, choice, JSON Schema) as one hard language.

`StructuredSpec` holds what the request said, normalized (the schema as JSON text, key order
kept: it is the property order of the output), and builds the byte acceptor on demand, so a
disk-cache hit never compiles it. Several structured keys in one request intersect (a text that
is valid JSON *and* matches the regex). With a word list or CEFR level beside a JSON Schema the
words apply inside string values (`string_words`); beside a regex or a choice the whole text is
intersected with the word list's running text, like a grammar.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import pkgutil
import sys
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Callable

from ...errors import SpecError

__all__ = ["StructuredSpec", "load_schema", "schema_text"]


def schema_text(value: Any, where: str = "json_schema", *, allow_paths: bool = True) -> str:
    """A schema given as a dict / bool, JSON text or (``allow_paths``) a file path, as compact
    JSON text with its key order kept."""
    if isinstance(value, os.PathLike):
        if not allow_paths:
            raise SpecError(f"{where}: give the schema itself (a JSON object), not a file path")
        value = _read_schema_file(Path(value), where)
    elif isinstance(value, str):
        stripped = value.strip()
        if not stripped:
            raise SpecError(f"{where}: empty; give a JSON Schema (an object), JSON text or a file path")
        if stripped[0] not in "{[" and stripped not in ("true", "false"):
            if not allow_paths:
                raise SpecError(f"{where}: not JSON text ({stripped[:40]!r}); give the schema as a JSON object")
            value = _read_schema_file(Path(stripped), where)
        else:
            try:
                value = json.loads(stripped)
            except json.JSONDecodeError as err:
                raise SpecError(f"{where}: the schema is not valid JSON ({err})") from err
    if not isinstance(value, (dict, bool)):
        raise SpecError(f"{where}: a JSON Schema is an object (or true/false), not {type(value).__name__}")
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise SpecError(f"{where}: the schema is not JSON data ({err})") from err


def _read_schema_file(path: Path, where: str) -> Any:
    from ...files.textfile import read_utf8

    if not path.is_file():
        raise SpecError(f"{where}: {str(path)[:80]!r} is neither JSON text nor a file; give a schema object, "
                        "its JSON text or the path of a .json file")
    text = read_utf8(path, SpecError, what="JSON Schema file", expect="give a UTF-8 JSON file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(f"{where}: {path} is not valid JSON ({err})") from err


def load_schema(text: str) -> Any:
    """The schema object of `schema_text`'s output."""
    return json.loads(text)


@dataclass(frozen=True)
class StructuredSpec:
    regex: str | None = None
    choice: tuple[str, ...] | None = None
    json_schema: str | None = None  # schema_text(...)
    json_max_depth: int | None = None
    json_whitespace: str | None = None
    json_strict: bool | None = None

    def __bool__(self) -> bool:
        return self.regex is not None or self.choice is not None or self.json_schema is not None

    def describe(self) -> dict[str, Any]:
        """What the compiled constraints' spec records (the decode side checks JSON from it)."""
        out: dict[str, Any] = {}
        if self.regex is not None:
            out["regex"] = self.regex
        if self.choice is not None:
            out["choice"] = list(self.choice)
        if self.json_schema is not None:
            out["json_schema"] = self.json_schema
            out["json_options"] = self.json_options()
        return out

    def json_options(self) -> dict[str, Any]:
        from .json_schema.schema import JSON_SCHEMA_DEFAULTS

        # max_depth None: the default rule (docs/structured.md, Depth), not one number
        return {"max_depth": self.json_max_depth,
                "whitespace": self.json_whitespace or JSON_SCHEMA_DEFAULTS["whitespace"],
                "strict": bool(self.json_strict)}

    @property
    def name(self) -> str:
        """How messages name it: ``regex '[a-z]+'``, ``choice of 3 strings``, ``json_schema``."""
        parts = []
        if self.regex is not None:
            parts.append(f"regex {self.regex[:60]!r}")
        if self.choice is not None:
            parts.append(f"choice of {len(self.choice)} string{'s' * (len(self.choice) != 1)}")
        if self.json_schema is not None:
            parts.append(f"json_schema {self.json_schema[:60]}")
        return " and ".join(parts)

    def source_hash(self) -> str:
        """Content hash for the disk cache: what was said, the options, and the source of every
        module of this package (a change to the compiler is a new entry)."""
        from ...contract.disk_cache import source_fingerprint

        h = hashlib.sha256(json.dumps(self.describe(), sort_keys=False, ensure_ascii=False).encode())
        h.update(source_fingerprint(*_package_modules()).encode())
        return h.hexdigest()

    def language(self, string_words: Any = None) -> Any:
        """The byte acceptor (pynini) of the texts every given key allows."""
        import pynini

        from ...fst.optimize import optimize
        from .choice import choice_fst
        from .regex import regex_fst

        parts = []
        if self.regex is not None:
            parts.append(regex_fst(self.regex, where="regex"))
        if self.choice is not None:
            parts.append(choice_fst(self.choice, where="choice"))
        if self.json_schema is not None:
            from .json_schema.schema import json_schema_fst

            opts = self.json_options()
            parts.append(json_schema_fst(load_schema(self.json_schema), where="json_schema",
                                         max_depth=self.json_max_depth, whitespace=opts["whitespace"],
                                         string_words=string_words, strict=opts["strict"]))
        out = parts[0]
        for p in parts[1:]:
            out = optimize(pynini.intersect(out, p), stage="structured keys")
        return out

    @classmethod
    def of(cls, regex: Any, choice: Any, json_schema: Any, json_max_depth: Any, json_whitespace: Any,
           json_strict: Any = None) -> StructuredSpec:
        """From `compile_with`'s keywords (a request's: already checked; a schema may be a dict)."""
        if json_schema is not None and not isinstance(json_schema, str):
            json_schema = schema_text(json_schema)
        return cls(regex, tuple(choice) if choice is not None else None, json_schema, json_max_depth, json_whitespace,
                   json_strict)

    def join(self, wl: Any, g_lang: Any, g_desc: Any, g_hash: Any, *, case_variants: bool, digits: bool) -> tuple[Any, Any, str, str]:
        """(word list for the hard pipeline, language, description, content hash): this language
        joined to the grammar's (intersected). The language is a `LazyLanguage`, built only when
        the disk cache misses. A word list beside a JSON Schema goes into the schema's string values
        (``string_words``) and leaves the hard pipeline's running text (None is returned for it)."""
        import pynini

        words_fst = None
        if self.json_schema is not None and wl is not None:
            def words_fst() -> Any:
                from ...fst.wordlist.language import text_dfa_fst_bytes, word_list_dfa

                dfa = word_list_dfa(wl.words, case_variants=case_variants, digits=digits, leading_space=False)
                return pynini.Fst.read_from_string(text_dfa_fst_bytes(dfa))
        h = hashlib.sha256(self.source_hash().encode())
        if words_fst is not None:
            h.update(("\n".join(wl.words) + repr((case_variants, digits))).encode())
        from ..hard.automaton import LazyLanguage

        build = self.builder(words_fst)
        if g_lang is None:
            # a JSON Schema alone is its document, minimized where it is built (`json_schema_fst`)
            alone = self.json_schema is not None and self.regex is None and self.choice is None
            lazy = LazyLanguage(build, optimized=alone, empty_hint=self.empty_hint, size_hint=self.size_hint)
            return (None if words_fst is not None else wl), lazy, self.name, h.hexdigest()
        from ...fst.optimize import optimize

        def both() -> Any:
            grammar = optimize(g_lang, stage="grammar")
            return optimize(pynini.intersect(grammar, build()), stage="grammar & structured")
        h.update(str(g_hash).encode())
        lazy = LazyLanguage(both, empty_hint=self.empty_hint, size_hint=self.size_hint)
        return (None if words_fst is not None else wl), lazy, f"{g_desc} and {self.name}", h.hexdigest()

    @property
    def empty_hint(self) -> str:
        """What the "accepts no text" error adds: a JSON Schema's language is cut at its depth."""
        if self.json_schema is None:
            return ""
        return ("no document satisfies the schema within its json_max_depth (recursion and free nesting are cut "
                "there); if the schema recurses, a larger json_max_depth may allow one")

    @property
    def size_hint(self) -> str:
        """What the "too many token arcs" error adds: how to make the language smaller."""
        if self.json_schema is None:
            return "simplify the pattern or the choices"
        counted = _long_counted_strings(load_schema(self.json_schema))
        named = ""
        if counted:
            shown = ", ".join(f"{p} ({n})" for p, n in counted[:3])
            named = (f"; strings counted to a length hold every token at every position: {shown} "
                     f"(lower or drop maxLength there)")
        return ("lower json_max_depth (free nesting and recursion are unrolled to it) or simplify the "
                f"schema{named}")

    def builder(self, words_fst: Callable[[], Any] | None) -> Callable[[], Any]:
        """A thunk for the hard pipeline: builds the language when the disk cache misses.
        ``words_fst``: the word list's text automaton, for a JSON Schema's string values."""
        def build() -> Any:
            words = words_fst() if words_fst is not None and self.json_schema is not None else None
            return self.language(string_words=words)
        return build


def _long_counted_strings(schema: Any, least: int = 32) -> list[tuple[str, str]]:
    """(path, "maxLength N") of the schema's strings counted to at least ``least`` characters,
    the longest first: a common cause of a lift past `MAX_TOKEN_ARCS`. (Those whose maxLength is
    not enforced, `scalars.string`, are left out; a pattern or format is taken as unbounded.)"""
    from .json_schema.reading import schema_nodes
    from .json_schema.scalars import MAX_EXACT_LENGTH, MAX_PATTERNED_LENGTH

    found: list[tuple[int, str]] = []
    for node, path, _ in schema_nodes(schema):
        n = node.get("maxLength")
        cap = MAX_PATTERNED_LENGTH if "pattern" in node or "format" in node else MAX_EXACT_LENGTH
        if isinstance(n, int) and not isinstance(n, bool) and least <= n <= cap:
            found.append((n, path or "/"))
    return [(p, f"maxLength {n}") for n, p in sorted(found, key=lambda e: -e[0])]


@functools.lru_cache(maxsize=1)
def _package_modules() -> list[Any]:
    """This package and every module of it and its subpackages (`regex/`, `json_schema/`): the
    structured cache key's source fingerprint."""
    pkg = sys.modules[__package__ or "fstbeam.compiler.structured"]
    found = pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg.__name__}.")
    return [pkg] + [import_module(m.name) for m in sorted(found, key=lambda m: m.name)]
