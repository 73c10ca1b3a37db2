"""Usage checks of the command lines, run right after parsing: before any model, tokenizer or
automaton is loaded, so a wrong combination of flags is reported in a fraction of a second.

Each ``check_*`` returns the message of the first problem, or None. A rule has one owner, and
the checks here call it on the parsed flags instead of restating it: `SearchConfig` (the search
flags, through the command's preset), `ConstraintRequest` (the constraint flags: levels, grammar
names and parameters, limits), `validate.check_prompt_format` (``--format``, at parse time).
What is left here is which flags go together in one command and the files that must exist.
Nothing here imports torch, transformers or pynini (a grammar's name is looked up among folders).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["check_batch", "check_compile", "check_generate", "check_inspect", "check_search"]


def _constraint_flags(args) -> bool:
    from .flags import constraint_flags_given

    return constraint_flags_given(args)


def _exists(path: str | None, what: str, fix: str) -> str | None:
    if path is None or path == "-":
        return None
    if "\x00" in path:
        return f"{what} path {path!r} contains a NUL byte, which no file name can hold: give the file's real path"
    if os.path.exists(path):  # pipes (/dev/fd/N) exist too
        return None
    return f"{what} {path!r} does not exist: {fix}"


def _search(args) -> str | None:
    """The search flags, checked by the one owner of their rules: the command's `SearchConfig` is
    built from them (its preset, then the flags), as the command itself will build it."""
    from ..errors import DecodeError
    from .flags import flag_of, search_config_for

    try:
        search_config_for(args)
    except DecodeError as exc:
        return f"{exc}{flag_of(str(exc))}"
    return None


def _constraint_values(args) -> str | None:
    """The constraint flags, checked by the one owner of their rules (`ConstraintRequest`), and the
    files they name, before a tokenizer is loaded."""
    problem = _exists(args.words, "word list", "give a UTF-8 file with one word per line")
    schema = getattr(args, "json_schema", None)
    if not problem and schema and schema.strip()[:1] not in ("{", "[") and schema.strip() not in ("true", "false"):
        problem = _exists(schema, "JSON Schema file", "give a .json file or the schema's JSON text")
    return problem or _request(args)


def _request(args) -> str | None:
    """The constraint flags as a `ConstraintRequest`: the one owner of their rules."""
    from ..compiler.request import ConstraintRequest
    from ..errors import GrammarError, SpecError

    try:
        ConstraintRequest.from_args(args)
    except (SpecError, GrammarError) as exc:
        name = next((k for k in _FLAG_OF_KEY if f": {k}" in str(exc)), None)
        return f"{exc} (the flag {_FLAG_OF_KEY[name]})" if name else str(exc)
    return None


# Request keys whose command-line flag is not ``--`` + the key (a message names the key).
_FLAG_OF_KEY = {"grammar_params": "--param", "phrases": "--phrase", "cefr": "--cefr", "grammar": "--grammar",
                "words": "--words", "avoid": "--avoid", "prefix": "--prefix"}


def check_generate(args) -> str | None:
    """``fstbeam generate``."""
    flags = _constraint_flags(args)
    if args.constraints and flags:
        return "give either --constraints ARTIFACT or constraint flags (--words/--cefr/--phrase/...), not both"
    if args.leading_space and args.constraints:
        return ("--leading-space applies when compiling a word list or grammar here; an artifact keeps the choice "
                "it was compiled with (compile-constraints compile --leading-space)")
    if args.leading_space and not (args.words or args.cefr or args.grammar):
        return "--leading-space applies to a word list or grammar (--words, --cefr or --grammar)"
    if not args.prompts and not args.file:
        return "no prompts (give PROMPT arguments or --file FILE)"
    return (_search(args) or _constraint_values(args)
            or _exists(args.file, "prompt file", "give a file with one prompt per line ('-' = stdin)")
            or _exists(args.constraints, "artifact", "compile one with compile-constraints compile ... -o FILE"))


def check_batch(args) -> str | None:
    """``fstbeam batch``."""
    if not os.path.isfile(args.input):
        return f"input file {args.input!r} is not a file: give a .jsonl or .parquet file of prompts"
    if args.constraints and not os.path.isfile(args.constraints):
        return (f"no artifact at {args.constraints}: compile one with "
                f"`compile-constraints compile ... -o {args.constraints}`")
    return _search(args)


def check_search(args) -> str | None:
    """The search flags of a command (``fstbeam serve``: the defaults of requests)."""
    return _search(args)


def check_compile(args) -> str | None:
    """``compile-constraints compile``."""
    given = _constraint_flags(args)
    if not given and not args.any:
        return ("no constraint given: the artifact would allow any text; give --words, --cefr, --grammar, --regex, "
                "--choice, --json-schema, --phrase, --avoid or --prefix (or --any if that is really what you want)")
    if given and args.any:
        return "--any means no constraint: leave it out when giving constraint flags"
    parent = Path(args.output).parent
    if not parent.is_dir():
        return f"cannot write {args.output!r}: the folder {str(parent)!r} does not exist"
    return _constraint_values(args)


_DRAW_SUFFIXES = (".svg", ".png", ".dot", ".gv")


def check_inspect(args) -> str | None:
    """``compile-constraints inspect``."""
    if args.list_grammars:
        return None
    if not args.artifact and not args.grammar:
        return "give an artifact file, --grammar NAME or --list-grammars"
    if args.artifact and args.grammar:
        return "give an artifact file or --grammar NAME, not both"
    problem = _request(args)  # --param needs --grammar; the grammar's name
    if problem:
        return problem
    if args.artifact:
        for flag, used in (("--check", args.check), ("--cases", args.cases)):
            if used:
                return f"{flag} checks a grammar: give --grammar NAME (for an artifact, --after TEXT lists what may follow)"
        # a missing or bad artifact is an artifact error (exit 1), found at once by its reader
    elif args.after is not None:
        return "--after lists the tokens allowed in an artifact: give the artifact file (for a grammar, use --check TEXT)"
    if args.max_draw_states < 1:
        return f"--max-draw-states must be at least 1 (got {args.max_draw_states})"
    if args.draw_after is not None and not args.draw:
        return "--draw-after TEXT says where a drawing starts: give --draw FILE too"
    if args.draw and Path(args.draw).suffix.lower() not in _DRAW_SUFFIXES:
        return f"cannot draw to {args.draw!r}: use one of {', '.join(_DRAW_SUFFIXES)}"
    return None
