"""Usage checks of the command lines, run right after parsing: before any model, tokenizer or
automaton is loaded, so a wrong combination of flags is reported in a fraction of a second.

Each ``check_*`` returns the message of the first problem, or None. The rules here are the
cross-flag ones (``--shortlist on`` needs ``--renormalize``), value ranges the search would
reject later, and files that must exist; nothing here imports torch, transformers or pynini
(the grammar lookup reads folder names only).
"""
from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["check_batch", "check_compile", "check_generate", "check_inspect", "check_search"]

_PROMPT_FORMATS = ("raw", "chat", "auto", "qa")


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


def _format(fmt: str) -> str | None:
    if fmt in _PROMPT_FORMATS or "{prompt}" in fmt:
        return None
    return (f"--format {fmt!r} is neither raw, chat, auto, qa nor a template: a template must contain "
            "{prompt} where the prompt goes (e.g. --format 'Question: {prompt}\\nAnswer:')")


def _shortlist(args) -> str | None:
    if getattr(args, "shortlist", "auto") == "on" and not getattr(args, "renormalize", False):
        return ("--shortlist on needs --renormalize: the full softmax (the default scoring) needs every "
                "logit; add --renormalize, or use --shortlist auto/off")
    return None


def _search_numbers(args) -> str | None:
    """The ranges SearchConfig checks, for the flags a command has (a flag it lacks is skipped)."""
    from ..runtime.config import SearchConfig

    beam = getattr(args, "beam_size", None) or SearchConfig().beam_size
    max_new = getattr(args, "max_new_tokens", None)
    min_new = getattr(args, "min_new_tokens", None)
    for flag, value, low in (("--beam", getattr(args, "beam_size", None), 1), ("--max-new-tokens", max_new, 1),
                             ("--batch-size", getattr(args, "batch_size", None), 1), ("--min-new-tokens", min_new, 0),
                             ("--no-repeat-ngram", getattr(args, "no_repeat_ngram", None), 0),
                             ("--target-length", getattr(args, "target_length", None), 1)):
        if value is not None and value < low:
            return f"{flag} must be at least {low} (got {value})"
    nbest = getattr(args, "nbest", None)
    nbest = 1 if nbest is None else nbest
    if not 1 <= nbest <= beam:
        return f"--nbest must be between 1 and --beam {beam} (got {nbest})"
    if min_new is not None and max_new is not None and min_new > max_new:
        return f"--min-new-tokens {min_new} exceeds --max-new-tokens {max_new}: lower it"
    for flag, value in (("--length-reward", getattr(args, "length_reward", None)),
                        ("--length-ratio", getattr(args, "length_ratio", None))):
        if value is not None and not (math.isfinite(value) and value >= 0):
            return f"{flag} must be a number >= 0 (got {value})"
    return None


def _constraint_values(args) -> str | None:
    """Values of the compile flags that a compile would reject only after loading a tokenizer."""
    if args.param and not args.grammar:
        return "--param sets a grammar parameter: give --grammar NAME too"
    if args.cefr:
        from ..compiler.hard.cefr import LEVELS

        if args.cefr.strip().upper() not in LEVELS:
            return f"unknown CEFR level {args.cefr!r}: use one of {', '.join(LEVELS)}"
    problem = _exists(args.words, "word list", "give a UTF-8 file with one word per line")
    schema = getattr(args, "json_schema", None)
    if not problem and schema and schema.strip()[:1] not in ("{", "[") and schema.strip() not in ("true", "false"):
        problem = _exists(schema, "JSON Schema file", "give a .json file or the schema's JSON text")
    if problem:
        return problem
    return _grammar(args.grammar)


def _grammar(name: str | None) -> str | None:
    if not name:
        return None
    from ..grammars.discovery import list_grammars

    names = list_grammars()
    if name in names:
        return None
    return (f"unknown grammar {name!r}; known grammars: {', '.join(names) or 'none'} "
            "(compile-constraints inspect --list-grammars)")


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
    return (_shortlist(args) or _search_numbers(args) or _format(args.format) or _constraint_values(args)
            or _exists(args.file, "prompt file", "give a file with one prompt per line ('-' = stdin)")
            or _exists(args.constraints, "artifact", "compile one with compile-constraints compile ... -o FILE"))


def check_batch(args) -> str | None:
    """``fstbeam batch``."""
    if not os.path.isfile(args.input):
        return f"input file {args.input!r} is not a file: give a .jsonl or .parquet file of prompts"
    if args.constraints and not os.path.isfile(args.constraints):
        return (f"no artifact at {args.constraints}: compile one with "
                f"`compile-constraints compile ... -o {args.constraints}`")
    return _shortlist(args) or _search_numbers(args) or _format(args.format)


def check_search(args) -> str | None:
    """The search flags and ``--format`` of a command (``fstbeam serve``: the defaults of requests)."""
    return _shortlist(args) or _search_numbers(args) or _format(args.format)


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
    if args.param and not args.grammar:
        return "--param sets a grammar parameter: give --grammar NAME too"
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
    return _grammar(args.grammar)
