"""Per-input constraints from a JSON Lines file (``fstbeam generate --file inputs.jsonl``).

One JSON object per line::

    {"prompt": "Translate ...", "phrases": ["Vertrag", ["Haus", "Hauses", "Häuser"]],
     "avoid": ["Kontrakt"], "prefix": "Der", "ordered": false, "sentence_case": true}

Only ``prompt`` is required. A nested list in ``phrases`` is an ``AnyOf`` (in ``avoid``: each of
its texts is avoided). The line's constraints are added to the command's shared word list or
grammar (``fstbeam.with_request``). A bad line -- not JSON, a wrong key or type, or constraints
that cannot be met -- becomes an error naming ``file:line``; the other lines still decode.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import Error, SpecError
from ..validate import check_prompt

__all__ = ["Inputs", "is_jsonl", "read_inputs"]

_KEYS = {"prompt", "phrases", "avoid", "prefix", "ordered", "sentence_case"}


def is_jsonl(path: str) -> bool:
    """``--file`` holds JSON objects (by its name: ``.jsonl`` or ``.ndjson``)."""
    return path != "-" and Path(path).suffix.lower() in (".jsonl", ".ndjson")


@dataclass
class Inputs:
    """The good lines (prompt, constraints, line number) and one message per bad line."""

    prompts: list[str] = field(default_factory=list)
    constraints: list = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_lines: list[int] = field(default_factory=list)  # the line of each message in ``errors``


def read_inputs(path: str, base, vocab) -> Inputs:
    """Read ``path`` and compile each line's constraints on top of ``base`` (a
    ``CompiledConstraints`` or ``None``) for ``vocab``."""
    from ..files.textfile import read_utf8

    text = read_utf8(Path(path), SpecError, what="input file", expect="give a UTF-8 JSON Lines file")
    out = Inputs()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            prompt, request = _parse(line, where)
            cc = _compile(request, base, vocab, where)
        except (Error, ValueError) as exc:
            out.errors.append(str(exc) if str(exc).startswith(where) else f"{where}: {exc}")
            out.error_lines.append(number)
            continue
        out.prompts.append(prompt)
        out.constraints.append(cc)
        out.lines.append(number)
    return out


def _parse(line: str, where: str) -> tuple[str, dict]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}): write one JSON object per line")
    if not isinstance(obj, dict):
        raise SpecError(f"{where}: expected a JSON object such as {{\"prompt\": \"...\"}}, got {type(obj).__name__}")
    unknown = sorted(set(obj) - _KEYS)
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(_KEYS))}")
    prompt = obj.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise SpecError(f"{where}: \"prompt\" must be non-empty text")
    check_prompt(prompt, f"{where}: \"prompt\"", error=SpecError)  # valid Unicode: no lone surrogate
    request = {
        "phrases": _items(obj.get("phrases", []), "phrases", where),
        "avoid": _items(obj.get("avoid", []), "avoid", where),
        "prefix": obj.get("prefix"),
        "ordered": obj.get("ordered", False),
        "sentence_case": obj.get("sentence_case", False),
    }
    if request["prefix"] is not None and (not isinstance(request["prefix"], str) or not request["prefix"]):
        raise SpecError(f"{where}: \"prefix\" must be non-empty text or null")
    for key in ("ordered", "sentence_case"):
        if not isinstance(request[key], bool):
            raise SpecError(f"{where}: \"{key}\" must be true or false, not {request[key]!r}")
    return prompt, request


def _items(value, key: str, where: str) -> list:
    if not isinstance(value, list):
        raise SpecError(f"{where}: \"{key}\" must be a list of texts (a nested list: any one of its texts)")
    for item in value:
        texts = item if isinstance(item, list) else [item]
        if isinstance(item, list) and not item:
            raise SpecError(f"{where}: an empty list in \"{key}\": give at least one alternative")
        if not all(isinstance(t, str) for t in texts):
            raise SpecError(f"{where}: \"{key}\" entries must be texts or lists of texts, not {item!r}")
    return value


def _compile(request: dict, base, vocab, where: str):
    from ..compiler.light.alternatives import AnyOf
    from ..compiler.compile import compile_constraints, with_request
    from ..compiler.spec import Phrase

    def item(i, p):
        src = f"{where} phrases[{i}]"
        if isinstance(p, list):
            return AnyOf(*p, sentence_case=request["sentence_case"], source=src)
        return Phrase(p, sentence_case=request["sentence_case"], source=src)

    phrases = [item(i, p) for i, p in enumerate(request["phrases"])]
    avoid, prefix, ordered = request["avoid"], request["prefix"], request["ordered"]
    if not phrases and not avoid and prefix is None:
        return base
    if base is None:
        return compile_constraints(tokenizer=vocab, phrases=phrases, avoid=avoid, prefix=prefix, ordered=ordered)
    if prefix is not None and base.prefix is not None:
        raise SpecError(f"{where}: a prefix on the command line and one in the line: give only one")
    cc = with_request(base, phrases=phrases, avoid=avoid, prefix=prefix, ordered=ordered)
    # with_request replaces the request part: keep the command's own phrases, avoid and prefix too
    return replace(cc, phrases=cc.phrases + base.phrases, avoid=cc.avoid + base.avoid,
                   prefix=cc.prefix if cc.prefix is not None else base.prefix)
