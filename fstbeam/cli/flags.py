"""Flags shared by the commands, each defined once.

- The search flags of ``fstbeam generate`` and ``fstbeam batch`` are built from the fields of
  `fstbeam.runtime.config.SearchConfig` that carry help text (:func:`add_search_flags`); a flag
  left out keeps the task preset's value (`fstbeam.runtime.presets`), so no default is written
  twice.
- The constraint flags of ``compile-constraints compile`` and ``fstbeam generate``
  (:func:`add_constraint_flags`) are read into one `ConstraintRequest` (``from_args``).
"""
from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from typing import Any, get_args

from ..errors import Error

__all__ = ["add_search_flags", "search_overrides", "search_config_for", "format_arg",
           "add_constraint_flags", "add_packed_weights_flag",
           "add_preset_flag", "nonempty", "utf8_text", "parse_params"]


def utf8_text(value: str) -> str:
    """argparse ``type``: text that can be encoded (an undecodable byte from the shell, such as
    ``$'\\xff'``, arrives as a lone surrogate and would fail later with a traceback)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not valid UTF-8 text (an undecodable byte from the shell): pass UTF-8 text") from None
    return value


def nonempty(value: str) -> str:
    """argparse ``type`` for flags whose empty value would silently mean "no constraint"
    (DESIGN.md, "never silent, also on the command line"): an empty value is a usage error."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty value: give the text, file or name (or leave the flag out)")
    return utf8_text(value)


def parse_params(items: list[str]) -> dict[str, str]:
    """``--param`` values as a dict (the grammar library's parser); a malformed one is a usage error."""
    from ..grammars.registry import parse_params as parse

    try:
        return parse(items)
    except Error as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _alternatives(value: str) -> list[str]:
    """``--any-of`` value: alternatives separated by ``|`` (an empty one is an error later)."""
    return nonempty(value).split("|")


# ---- search flags (from SearchConfig) ------------------------------------------------------------
def _number_type(kind, low: float | None):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if low is not None and v < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:g} (got {v})")
        return v
    return parse


def _flag_fields():
    from ..runtime.config import SearchConfig

    hints = typing.get_type_hints(SearchConfig)
    for f in dataclasses.fields(SearchConfig):
        if "help" in f.metadata:
            yield f, hints[f.name]


def add_search_flags(group) -> None:
    """One flag per `SearchConfig` setting that has help text, named after the field
    (``--max-new-tokens``; ``beam_size`` is ``--beam``). Every flag defaults to ``None``: "the
    preset's value", shown in the help."""
    from ..runtime.presets import PRESETS

    preset_keys = set().union(*PRESETS.values())
    for f, hint in _flag_fields():
        flag = f.metadata["flag"] or "--" + f.name.replace("_", "-")
        default = "the preset's" if f.name in preset_keys else repr(f.default)
        help_ = f.metadata["help"] if f.default is None and "default" in f.metadata["help"] else \
            f"{f.metadata['help']} (default: {default})"
        kind = hint
        if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None
            kind = next(a for a in get_args(hint) if a is not type(None))
        if kind == tuple[str, ...]:  # a repeatable text flag (--stop)
            group.add_argument(flag, dest=f.name, action="append", type=utf8_text, default=None,  # "\n" is a stop
                               metavar=f.metadata["metavar"] or "TEXT", help=f"{f.metadata['help']} (default: none)")
        elif kind is bool:
            group.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_)
        elif typing.get_origin(kind) is typing.Literal:
            group.add_argument(flag, dest=f.name, choices=get_args(kind), default=None, help=help_)
        elif kind in (int, float):  # ranges: cli/usage.py, right after parsing
            group.add_argument(flag, dest=f.name, type=_number_type(kind, None), default=None,
                               metavar=f.metadata["metavar"] or ("N" if kind is int else "X"), help=help_)
        else:  # pragma: no cover - a new kind of setting needs a case here
            raise TypeError(f"no flag type for SearchConfig.{f.name}: {hint}")
    group.add_argument("--stop-at-newline", dest="stop_at", action="store_const", const="line",
                       help="the same as --stop-at line")


def search_overrides(args) -> dict[str, Any]:
    """The search settings given on the command line (``None``: not given)."""
    return {f.name: getattr(args, f.name) for f, _ in _flag_fields() if getattr(args, f.name, None) is not None}


def search_config_for(args, continues_text: bool = True):
    """The `SearchConfig` of a command: its preset (``--preset``, else the one for ``--format``),
    then the search flags given. The same rule for ``generate``, ``batch`` and ``serve``; a bad
    value is `SearchConfig`'s own error (its check is the one check)."""
    from ..runtime.presets import preset_for_format, search_config

    preset = getattr(args, "preset", None) or preset_for_format(args.format, continues_text)
    return search_config(preset, search_overrides(args))


def flag_of(message: str) -> str:
    """`` (the flag --beam)`` for the first `SearchConfig` field a message names ("beam_size must
    ..."), so a command-line user sees which flag to change; "" if it names none."""
    import re

    flags = {f.name: f.metadata["flag"] or "--" + f.name.replace("_", "-") for f, _ in _flag_fields()}
    for name in re.findall(r"[a-z]+(?:_[a-z]+)*", message):
        if name in flags:
            return f" (the flag {flags[name]})"
    return ""


def format_arg(value: str) -> str:
    """argparse ``type`` of ``--format``: a known format or a template with ``{prompt}``."""
    from ..runtime.templates import check_format

    try:
        return check_format(nonempty(value))
    except Error as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_preset_flag(group) -> None:
    from ..runtime.presets import PRESETS

    group.add_argument("--preset", choices=tuple(PRESETS), default=None,
                       help="task preset of search settings (default: answer for --format qa and chat, "
                            "continuation otherwise; docs/decoding.md)")


def add_packed_weights_flag(group) -> None:
    """``--packed-weights`` (runtime/model/packed_model.py): a model option, given to the Decoder."""
    group.add_argument("--packed-weights", choices=("auto", "on", "off"), default="auto",
                       help="on CPU, keep a packed copy of the model's linear weights for MKL: faster steps for "
                            "more memory; auto (models up to 1 GB of linear weights, the default), on, off")


# ---- constraint flags (read by ConstraintRequest.from_args) ---------------------------------------
def add_constraint_flags(parser) -> None:
    """The constraint flags shared by ``compile-constraints compile`` and ``fstbeam generate``."""
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--words", type=nonempty, metavar="FILE", help="word list: UTF-8, one entry per line")
    src.add_argument("--cefr", type=nonempty, metavar="LEVEL", help="every English word form at or below a CEFR level (A1..C2)")
    parser.add_argument("--phrase", type=nonempty, action="append", default=[], metavar="TEXT", help="phrase that must appear (repeatable)")
    parser.add_argument("--any-of", action="append", dest="phrase", type=_alternatives, metavar="A|B|...",
                        help="must-include constraint met by any one of its |-separated alternatives (repeatable)")
    parser.add_argument("--ordered", action="store_true",
                        help="the --phrase/--any-of constraints must appear in the order given, without overlapping")
    parser.add_argument("--sentence-case", action="store_true",
                        help="phrases also match with a capital first letter where a sentence starts")
    parser.add_argument("--avoid", type=nonempty, action="append", default=[], metavar="TEXT",
                        help="phrase that must never appear (repeatable)")
    parser.add_argument("--prefix", type=nonempty, metavar="TEXT", help="the output must start with this text")
    parser.add_argument("--grammar", type=nonempty, metavar="NAME",
                        help="a registered grammar (compile-constraints inspect --list-grammars)")
    parser.add_argument("--param", type=nonempty, action="append", default=[], metavar="KEY=VALUE", help="grammar parameter (repeatable)")
    parser.add_argument("--canonical", action="store_true", help="only tokens the tokenizer itself uses for the listed words")
    parser.add_argument("--case-variants", action=argparse.BooleanOptionalAction, default=None,
                        help="also allow Title and UPPER forms of the listed words (default: yes)")
    parser.add_argument("--digits", action=argparse.BooleanOptionalAction, default=None,
                        help="also allow numbers written in digits between the words (default: yes)")
    # Structured outputs (docs/structured.md): hard languages like a grammar.
    parser.add_argument("--regex", type=nonempty, metavar="PATTERN",
                        help="the whole output matches this regular expression (ECMA-262 / JSON Schema syntax)")
    parser.add_argument("--choice", type=nonempty, action="append", default=[], metavar="TEXT",
                        help="the output is exactly one of the --choice texts (repeatable)")
    parser.add_argument("--json-schema", type=nonempty, metavar="FILE_OR_JSON",
                        help="the output is JSON valid against this JSON Schema (a .json file or the JSON text)")
    parser.add_argument("--json-max-depth", type=_number(0, 64), metavar="N",
                        help="nesting depth of free JSON and recursive $ref in --json-schema (default: docs/structured.md)")
    parser.add_argument("--json-whitespace", choices=("compact", "flexible"),
                        help="whitespace between JSON tokens: none (compact, the default) or some (flexible)")
    parser.add_argument("--json-strict", action="store_true", default=None,
                        help="objects and tuples in --json-schema take only the members and items they declare "
                             "(XGrammar's default; the specification allows others)")


def constraint_flags_given(args) -> bool:
    """Some constraint flag was given (``--param`` alone is not a constraint)."""
    return bool(args.words or args.cefr or args.phrase or args.avoid or args.prefix or args.grammar
                or args.regex or args.choice or args.json_schema)


def _number(low: int, high: int):
    def parse(text: str) -> int:
        v = _number_type(int, low)(text)
        if v > high:
            raise argparse.ArgumentTypeError(f"must be at most {high} (got {v})")
        return v
    return parse
