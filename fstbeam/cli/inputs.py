"""Per-input constraints from a JSON Lines file (``fstbeam generate --file inputs.jsonl``).

One JSON object per line::

    {"prompt": "Translate ...", "phrases": ["Vertrag", ["Haus", "Hauses", "Häuser"]],
     "avoid": ["Kontrakt"], "prefix": "Der", "ordered": false, "sentence_case": true}

Only ``prompt`` is required; the other keys are those of a `ConstraintRequest` (its JSON form,
docs/request.schema.json). A nested list in ``phrases`` is an ``AnyOf`` (in ``avoid``: each of
its texts is avoided). The line's constraints are added to the command's shared word list or
grammar by the request's merge rule (each phrase once). A bad line -- not JSON, a wrong key or type, or constraints
that cannot be met -- becomes an error naming ``file:line``; the other lines still decode.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Error, SpecError
from ..validate import check_prompt

__all__ = ["Inputs", "is_jsonl", "read_inputs"]


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


def read_inputs(path: str, base, vocab, continues_text: bool = True) -> Inputs:
    """Read ``path`` and compile each line's constraints on top of ``base`` (a
    ``CompiledConstraints`` or ``None``) for ``vocab``; ``continues_text``: the decoder's prompt
    format continues text (a line's own word list then allows a leading space, unless it says)."""
    from ..files.textfile import read_utf8

    text = read_utf8(Path(path), SpecError, what="input file", expect="give a UTF-8 JSON Lines file")
    out = Inputs()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            prompt, request = _parse(line, where)
            cc = _compile(request.for_prompt_format(continues_text), base, vocab, where)
        except (Error, ValueError) as exc:
            out.errors.append(str(exc) if str(exc).startswith(where) else f"{where}: {exc}")
            out.error_lines.append(number)
            continue
        out.prompts.append(prompt)
        out.constraints.append(cc)
        out.lines.append(number)
    return out


def _parse(line: str, where: str):
    """(prompt, the line's ConstraintRequest) of one line."""
    from ..compiler.request import ConstraintRequest

    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}): write one JSON object per line") from None
    if not isinstance(obj, dict):
        raise SpecError(f"{where}: expected a JSON object such as {{\"prompt\": \"...\"}}, got {type(obj).__name__}")
    prompt = obj.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise SpecError(f"{where}: \"prompt\" must be non-empty text")
    check_prompt(prompt, f"{where}: \"prompt\"", error=SpecError)  # valid Unicode: no lone surrogate
    return prompt, ConstraintRequest.from_json(obj, where=where, extra=("prompt", "id"))  # id: as in batch rows


def _compile(request, base, vocab, where: str):
    """The line's constraints: its request added to the command's (the merge rule of
    `ConstraintRequest`), or the command's own when the line adds nothing."""
    if request.is_empty:
        return base
    from ..compiler.compiler import compiler_for

    return compiler_for(base.vocab if base is not None else vocab).compile_request(request, base=base)
