"""One constraint request for every door: API keywords, command-line flags, a JSONL line, a batch
row, an HTTP body.

    comp = fstbeam.Compiler(tokenizer)
    req = ConstraintRequest.from_json({"cefr": "A2", "phrases": ["the weather", ["rain", "rains"]]})
    cc = comp.compile_request(req)                                           # or, on a compiled base:
    cc = comp.compile_request(ConstraintRequest.from_json(line), base=base_cc)

A request has a *hard* part (a word list, a CEFR level, a grammar or a structured language, with
their options) and a *light* part (must-include items, avoid phrases, a prefix). The one merge
rule (:meth:`ConstraintRequest.added_to`, which `Compiler.compile_request` applies with ``base=``
at every door) joins a compiled base (a command's flags, an artifact, a job's shared set) and a
per-input request:

- the hard part comes from the base; a per-input request may give one only when there is no
  base or the base constrains nothing (its automata are built for their own hard part);
- must-include items and avoid phrases: the base's, then the input's; an item equal to one
  already there (same text or alternatives, same options) is kept once;
- at most one prefix (the same text twice is one);
- ``ordered`` applies to the items of the request that says it: the base's ordered items stay in
  their order, the input's in theirs (kept whole, even where the base has some of them); two
  ordered lists, one in the base and one in the input, are an error (their relative order is
  not said).

The JSON form (``docs/request.schema.json``) has the field names as keys; a nested list in
``phrases`` is an ``AnyOf``. Every text is checked by `fstbeam.validate` before any compile.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, TypeVar

from ..errors import GrammarError, SpecError
from ..validate import check_cefr, check_flag, check_text, check_texts
from .light.alternatives import AnyOf
from .limits import check_request_limits
from .request_schema import json_schema
from .spec import Phrase

__all__ = ["ConstraintRequest", "HARD_KEYS", "STRUCTURED_KEYS", "LIGHT_KEYS", "OPTION_KEYS", "JSON_KEYS", "json_schema"]

HARD_KEYS = ("words", "cefr", "grammar", "grammar_params", "regex", "choice", "json_schema")
STRUCTURED_KEYS = ("regex", "choice", "json_schema")  # docs/structured.md
LIGHT_KEYS = ("phrases", "avoid", "prefix", "ordered", "sentence_case")
OPTION_KEYS = ("case_variants", "digits", "leading_space", "canonical", "json_max_depth", "json_whitespace", "json_strict")
JSON_KEYS = HARD_KEYS + LIGHT_KEYS + OPTION_KEYS

Item = Phrase | AnyOf
ItemT = TypeVar("ItemT", Phrase, AnyOf, Item)


def _at(where: str, name: str) -> str:
    """How an error names a field: ``phrases[2]`` for API keywords, ``file.jsonl:3: phrases[2]``
    for a door that has a place of its own."""
    return f"{where}: {name}" if where else name


def _item_key(item: Item) -> tuple[Any, ...]:
    """What makes two must-include items the same constraint (not where they came from)."""
    d = {f.name: getattr(item, f.name) for f in dataclasses.fields(item) if f.name != "source"}
    return tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in d.items()))


def _spec_key(d: Mapping[str, Any]) -> tuple[Any, ...]:
    """:func:`_item_key` of an item as a compiled artifact's spec records it (a dict)."""
    return tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in d.items() if k != "source"))


def _unique(items: Iterable[ItemT], seen: set[tuple[Any, ...]] | None = None) -> tuple[ItemT, ...]:
    seen = set() if seen is None else seen
    out = []
    for it in items:
        k = _item_key(it)
        if k not in seen:
            seen.add(k)
            out.append(it)
    return tuple(out)


def _listed(value: Any, where: str, hint: str) -> list[Any]:
    """``phrases=`` / ``avoid=`` as a list: nothing, one phrase, or a list of them."""
    if value is None:
        return []
    if isinstance(value, (str, Phrase, AnyOf)):
        return [value]
    if isinstance(value, (bytes, bytearray, dict)) or not hasattr(value, "__iter__"):
        raise SpecError(f"{where} must be a list of phrases{hint}, not {type(value).__name__}")
    return list(value)


def _items(value: Any, where: str, sentence_case: bool) -> tuple[Item, ...]:
    """Must-include items: texts, nested lists (AnyOf), `Phrase` and `AnyOf` objects."""
    out: list[Item] = []
    for i, v in enumerate(_listed(value, where, " (a nested list: any one of its texts)")):
        at = f"{where}[{i}]"
        if isinstance(v, AnyOf) and len(v.alternatives) == 1 and not v.sentence_case:  # one text: a phrase
            out.append(Phrase(v.alternatives[0], v.word_boundary, v.case_sensitive, v.source))
        elif isinstance(v, (Phrase, AnyOf)):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            if not v:
                raise SpecError(f"{at} is an empty list: give at least one alternative")
            alts = check_texts(v, at)
            out.append(AnyOf(*alts, sentence_case=sentence_case, source=at) if len(set(alts)) > 1
                       else Phrase(alts[0], sentence_case=sentence_case, source=at))
        else:
            out.append(Phrase(check_text(v, at), sentence_case=sentence_case, source=at))
    return _unique(out)


def _avoid(value: Any, where: str) -> tuple[Phrase, ...]:
    """Avoid phrases: texts or `Phrase` objects; a nested list or `AnyOf` avoids each of its texts."""
    out: list[Phrase] = []
    for i, v in enumerate(_listed(value, where, "")):
        at = f"{where}[{i}]"
        if isinstance(v, Phrase):
            out.append(v)
        elif isinstance(v, AnyOf):
            out += [Phrase(t, v.word_boundary, v.case_sensitive, v.source) for t in v.alternatives]
        elif isinstance(v, (list, tuple)):
            out += [Phrase(t, source=at) for t in check_texts(v, at)]
        else:
            out.append(Phrase(check_text(v, at), source=at))
    return _unique(out)


def _words(value: Any, where: str) -> str | os.PathLike[str] | tuple[str, ...] | None:
    """A word list: a file path (``str`` / ``PathLike``) or a list of words."""
    if value is None or isinstance(value, os.PathLike):
        return value
    if isinstance(value, str):
        return check_text(value, f"{where} (a word-list file)")
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise SpecError(f"{where} got bytes: pass a file path (str or Path) or a list of words (str), "
                        "e.g. words=['cat'] or words=data.decode('utf-8').split()")
    if isinstance(value, dict) or not hasattr(value, "__iter__"):
        raise SpecError(f"{where} must be a file path or a list of words, not {type(value).__name__} {value!r:.40}")
    words = check_texts(list(value), where, limit="word_chars")
    if not words:
        raise SpecError(f"{where} is empty: give at least one word")
    return words


def _params(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise GrammarError(f"{where} must be a dict (a JSON object) of parameter names and values such as "
                           f"{{'level': 'A1'}}, not {type(value).__name__} {value!r:.40}")
    out = []
    for k, v in value.items():
        check_text(k, f"{where} key")
        if isinstance(v, os.PathLike):  # a grammar's data file, from the API
            v = os.fspath(v)
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise SpecError(f"{where}[{k!r}] must be text, a number or a path, not {v!r:.60}")
        out.append((k, v if isinstance(v, str) else str(v)))
    return tuple(sorted(out))


@dataclass(frozen=True)
class ConstraintRequest:
    """Everything a request may say (docs/api.md, "One request"). Build it with
    :meth:`from_kwargs`, :meth:`from_json` or :meth:`from_args`; it is checked when built."""

    words: Any = None  # a file path, or a tuple of words
    cefr: str | None = None
    grammar: Any = field(default=None, compare=False)  # a registered name, or a pynini/built grammar
    grammar_params: tuple[tuple[str, str], ...] = ()
    phrases: tuple[Item, ...] = ()
    avoid: tuple[Phrase, ...] = ()
    prefix: str | None = None
    ordered: bool = False
    sentence_case: bool = False  # applies to the texts of ``phrases`` given as plain strings
    case_variants: bool = True
    digits: bool = True
    leading_space: bool | str = False
    canonical: bool = False
    regex: str | None = None  # the whole output matches (ECMA-262 syntax)
    choice: tuple[str, ...] | None = None  # the output is one of these
    json_schema: str | None = None  # the schema as compact JSON text (key order kept)
    json_max_depth: int | None = None  # None: the compiler's default (docs/structured.md)
    json_whitespace: str | None = None  # "compact" (default) or "flexible"
    json_strict: bool | None = None  # only declared members and items (docs/structured.md); None: as the schema says
    where: str = field(default="", compare=False)  # the place of the request in its door (file:line)

    def __post_init__(self) -> None:
        w = self.where
        for name in ("ordered", "sentence_case", "case_variants", "digits", "canonical"):
            check_flag(getattr(self, name), _at(w, name))
        if self.leading_space != "auto":
            check_flag(self.leading_space, _at(w, "leading_space (true, false or \"auto\")"))
        if self.cefr is not None and check_cefr(self.cefr, _at(w, "cefr")) != self.cefr:
            object.__setattr__(self, "cefr", check_cefr(self.cefr))  # one spelling: "a1 " is "A1"
        if self.words is not None and self.cefr is not None:
            raise SpecError(f"{_at(w, 'words')}: give either words= or cefr=, not both (a CEFR level is a word list)")
        if isinstance(self.grammar, str):
            check_text(self.grammar, _at(w, "grammar"))
        if self.grammar_params and self.grammar is None:  # the one check of this rule (every door)
            raise SpecError(f"{_at(w, 'grammar_params')}: grammar_params= sets parameters of a grammar: give grammar= too")
        if self.grammar_params and not isinstance(self.grammar, str):
            raise SpecError(f"{_at(w, 'grammar_params')}: grammar_params= applies to one grammar given by name, not to a "
                            "pynini automaton or built grammars (build those with their parameters)")
        if isinstance(self.grammar, str):
            from ..grammars.discovery import check_grammar_name

            check_grammar_name(self.grammar, _at(w, "grammar"))
        for name, kinds in (("phrases", (Phrase, AnyOf)), ("avoid", (Phrase,))):
            if not all(isinstance(p, kinds) for p in getattr(self, name)):
                raise SpecError(f"{_at(w, name)}: build the request with ConstraintRequest.from_kwargs or from_json "
                                "(they turn texts and nested lists into phrases)")
        self._check_structured()
        check_request_limits(self.phrases, self.avoid, self.prefix, w)  # the one check of the limits

    def _check_structured(self) -> None:
        w = self.where
        if self.regex is not None:
            check_text(self.regex, _at(w, "regex"), blank_ok=True)  # (" +" and " " are patterns)
        if self.choice is not None:
            if not self.choice:
                raise SpecError(f"{_at(w, 'choice')} is empty: give at least one allowed output")
            check_texts(self.choice, _at(w, "choice"), blank_ok=True)
        if self.json_schema is not None and not isinstance(self.json_schema, str):
            raise SpecError(f"{_at(w, 'json_schema')}: build the request with ConstraintRequest.from_kwargs or from_json")
        if self.json_max_depth is not None and (isinstance(self.json_max_depth, bool) or not isinstance(self.json_max_depth, int)
                                                or not 0 <= self.json_max_depth <= 64):
            raise SpecError(f"{_at(w, 'json_max_depth')} must be an integer from 0 to 64, not {self.json_max_depth!r:.40}")
        if self.json_whitespace is not None and self.json_whitespace not in ("compact", "flexible"):
            raise SpecError(f"{_at(w, 'json_whitespace')} must be \"compact\" or \"flexible\", not {self.json_whitespace!r:.40}")
        if self.json_strict is not None and not isinstance(self.json_strict, bool):
            raise SpecError(f"{_at(w, 'json_strict')} must be true or false, not {self.json_strict!r:.40}")
        if (self.json_max_depth is not None or self.json_whitespace is not None or self.json_strict is not None) \
                and self.json_schema is None:
            raise SpecError(f"{_at(w, 'json_max_depth')}: the json_* options apply to a JSON Schema: give json_schema too")

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_kwargs(cls, *, where: str = "", **kw: Any) -> ConstraintRequest:
        """From the keywords of `fstbeam.compile_constraints` (``phrases`` may hold `Phrase`,
        `AnyOf` and nested lists; ``grammar`` a name, a pynini acceptor or built grammars)."""
        unknown = sorted(set(kw) - set(JSON_KEYS))
        if unknown:
            raise SpecError(f"unknown constraint option {unknown[0]!r}; the options are: {', '.join(JSON_KEYS)}")
        sc = kw.get("sentence_case", False)
        check_flag(sc, _at(where, "sentence_case"))
        out = dict(kw)
        out["phrases"] = _items(kw.get("phrases"), _at(where, "phrases"), sc)
        out["avoid"] = _avoid(kw.get("avoid"), _at(where, "avoid"))
        out["words"] = _words(kw.get("words"), _at(where, "words"))
        out["grammar_params"] = _params(kw.get("grammar_params"), _at(where, "grammar_params"))
        if kw.get("cefr") is not None:
            out["cefr"] = check_cefr(kw["cefr"], _at(where, "cefr"))
        if kw.get("choice") is not None:
            c = kw["choice"]
            if isinstance(c, (str, bytes, dict)) or not hasattr(c, "__iter__"):
                raise SpecError(f"{_at(where, 'choice')} must be a list of texts (the allowed outputs), not {type(c).__name__}")
            out["choice"] = tuple(dict.fromkeys(check_texts(list(c), _at(where, "choice"), blank_ok=True)))
        if kw.get("json_schema") is not None:
            from .structured.language import schema_text

            out["json_schema"] = schema_text(kw["json_schema"], _at(where, "json_schema"))
        return cls(where=where, **out)

    @classmethod
    def from_json(cls, obj: Any, *, where: str = "request", extra: Iterable[str] = (),
                  allow_paths: bool = True) -> "ConstraintRequest":
        """From a JSON object (a JSONL line, a batch row, an HTTP body's ``constraints``).
        ``extra``: other keys the door reads itself (``prompt``, ``id``) and that are ignored
        here; ``allow_paths=False``: ``words`` must be a list (a server never opens a file named
        by a client)."""
        if not isinstance(obj, Mapping):
            raise SpecError(f"{where}: expected a JSON object such as {{\"phrases\": [\"...\"]}}, got {type(obj).__name__}")
        unknown = sorted(set(obj) - set(JSON_KEYS) - set(extra))
        if unknown:
            raise SpecError(f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(set(JSON_KEYS) | set(extra)))}")
        kw = {k: v for k, v in obj.items() if k in JSON_KEYS and v is not None}
        kw.setdefault("leading_space", "auto")  # the default of every JSON door: the prompt format's (for_prompt_format)
        if "grammar" in kw and not isinstance(kw["grammar"], str):
            raise SpecError(f"{where}: grammar must be a registered grammar's name (text)")
        if "words" in kw and isinstance(kw["words"], str) and not allow_paths:
            raise SpecError(f"{where}: words must be a list of words here (a file path is not read)")
        if "words" in kw and not isinstance(kw["words"], (str, list)):
            raise SpecError(f"{where}: words must be a list of words or a file path, not {type(kw['words']).__name__}")
        if "json_schema" in kw:
            from .structured.language import schema_text

            kw["json_schema"] = schema_text(kw["json_schema"], _at(where, "json_schema"), allow_paths=allow_paths)
        for key in ("phrases", "avoid"):
            if isinstance(kw.get(key), str):  # one phrase
                kw[key] = [kw[key]]
            if key in kw and not isinstance(kw[key], list):
                raise SpecError(f"{where}: {key} must be a list of texts (a nested list: any one of its texts)")
        return cls.from_kwargs(where=where, **kw)

    @classmethod
    def from_args(cls, args: Any, *, where: str = "command line") -> ConstraintRequest:
        """From the flags of `fstbeam.cli.flags.add_constraint_flags` (``--phrase``, ``--any-of``,
        ``--avoid``, ``--prefix``, ``--words``/``--cefr``, ``--grammar``/``--param``, ...)."""
        from ..grammars.registry import parse_params

        def g(name: str, default: Any = None) -> Any:  # the doors differ in their flags
            return getattr(args, name, default)

        params = parse_params(g("param", []) or []) or None
        kw = dict(words=g("words"), cefr=g("cefr"), grammar=g("grammar"), grammar_params=params,
                  phrases=g("phrase", []), avoid=g("avoid", []), prefix=g("prefix"), ordered=g("ordered", False),
                  sentence_case=g("sentence_case", False), canonical=g("canonical", False), regex=g("regex"),
                  choice=g("choice") or None, json_schema=g("json_schema"), json_max_depth=g("json_max_depth"),
                  json_whitespace=g("json_whitespace"), json_strict=g("json_strict"))
        for name in ("leading_space", "case_variants", "digits"):  # not given: the request's default
            if g(name) is not None:
                kw[name] = g(name)
        return cls.from_kwargs(where=where, **kw)

    def for_prompt_format(self, continues_text: bool) -> ConstraintRequest:
        """``leading_space="auto"`` resolved by a door's prompt format (the one rule of every door
        with a decoder: a JSONL line, a batch row, an HTTP body, ``fstbeam generate``'s flags): the
        output may start with a space where the prompt is continued as text and the request has a
        word list or grammar."""
        if self.leading_space != "auto":
            return self
        return dataclasses.replace(self, leading_space=bool(continues_text) and self.has_hard)

    # ------------------------------------------------------------------ queries
    @property
    def has_hard(self) -> bool:
        return self.words is not None or self.cefr is not None or self.grammar is not None or self.has_structured

    @property
    def has_structured(self) -> bool:
        return self.regex is not None or self.choice is not None or self.json_schema is not None

    @property
    def has_light(self) -> bool:
        return bool(self.phrases or self.avoid or self.prefix is not None)

    @property
    def is_empty(self) -> bool:
        return not self.has_hard and not self.has_light

    def to_json(self) -> dict[str, Any]:
        """The JSON form (``from_json(r.to_json()) == r`` for requests that JSON can hold)."""
        if self.grammar is not None and not isinstance(self.grammar, str):
            raise SpecError("a request with a pynini or built grammar has no JSON form: register the grammar by name")

        def item(p: Item) -> str | list[str]:
            if isinstance(p, AnyOf):
                return list(p.alternatives)
            return p.text

        out: dict[str, Any] = {}
        if self.words is not None:
            out["words"] = list(self.words) if isinstance(self.words, tuple) else os.fspath(self.words)
        for k in ("cefr", "grammar", "prefix", "regex", "json_max_depth", "json_whitespace", "json_strict"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.choice is not None:
            out["choice"] = list(self.choice)
        if self.json_schema is not None:
            import json

            out["json_schema"] = json.loads(self.json_schema)
        if self.grammar_params:
            out["grammar_params"] = dict(self.grammar_params)
        if self.phrases:
            out["phrases"] = [item(p) for p in self.phrases]
        if self.avoid:
            out["avoid"] = [p.text for p in self.avoid]
        for k in ("ordered", "sentence_case", "canonical"):
            if getattr(self, k):
                out[k] = True
        for k in ("case_variants", "digits"):
            if not getattr(self, k):
                out[k] = False
        if self.leading_space != "auto":  # (absent from a JSON request: "auto", the doors' default)
            out["leading_space"] = self.leading_space
        return out

    # ------------------------------------------------------------------ the merge rule
    def added_to(self, base: Any) -> ConstraintRequest:
        """The one merge rule of every door (the module's docstring; docs/api.md): what this
        per-input request adds to ``base``, constraints compiled already (a command's flags, an
        artifact, a job's shared set; ``None``: none).

        The result holds what is new: the request's items and avoid phrases that ``base`` has not
        got (an ordered list is kept whole: its order is the new constraint), its prefix where
        ``base`` has none, and ``ordered`` for its own items. With no base, or an empty one, it
        is the request itself, its word list or grammar included."""
        if base is None or _is_empty(base):
            return self
        at = self.where or "request"  # (a door's place: "in.jsonl:3", "row 7", "constraints")
        if self.has_hard:
            what = "with their word list or grammar" if base.hard is not None else "with their phrases"
            raise SpecError(f"{at}: the base constraints are compiled already ({what}); a per-input request adds "
                            "phrases, avoid phrases and a prefix: give the word list, CEFR level or grammar with the "
                            "base, or give every constraint per input")
        spec = base.spec or {}
        own_order = self.ordered and len(self.phrases) > 1
        if own_order and spec.get("ordered"):
            raise SpecError(f"{at}: ordered applies to one list of phrases, and the base has its own ordered phrases: "
                            "give the ordered phrases in one place")
        phrases = self.phrases if own_order else _unique(self.phrases, {_spec_key(d) for d in spec.get("phrases", [])})
        avoid = _unique(self.avoid, {_spec_key(d) for d in spec.get("avoid", [])})
        base_prefix = base.prefix.text if base.prefix is not None else None
        prefix = _one_prefix(base_prefix, self.prefix, self.where)
        return dataclasses.replace(self, phrases=phrases, avoid=avoid, prefix=prefix if base_prefix is None else None,
                                   ordered=own_order)


def _is_empty(base: Any) -> bool:
    """Compiled constraints that constrain nothing (a job's stand-in where it has no shared set)."""
    return base.hard is None and not base.phrases and not base.avoid and base.prefix is None


def _one_prefix(a: str | None, b: str | None, where: str) -> str | None:
    if a is not None and b is not None and a != b:
        raise SpecError(f"{_at(where, 'prefix')}: the base constraints already have the prefix {a!r}, and this request "
                        f"gives {b!r}: an output has one prefix (compile the base without one to give one per request)")
    return a if a is not None else b
