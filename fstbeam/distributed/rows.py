"""Rows in and out of a batch job: the input columns, the output columns, one row's checks.

Pure Python (no Ray, no torch) so the in-process path, the Ray actors and the tests share it.
A row that cannot be decoded becomes an output row with ``error`` set; it is never dropped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..validate import check_prompt

__all__ = ["INPUT_COLUMNS", "OUTPUT_COLUMNS", "RowRequest", "parse_row", "result_row", "error_row"]

#: Columns a batch input may have; ``prompt`` is required, the others optional.
INPUT_COLUMNS = ("id", "prompt", "phrases", "avoid", "prefix")
#: Columns of every output row, in this order.
OUTPUT_COLUMNS = ("id", "prompt", "text", "satisfied", "phrases_met", "score", "logprob", "finish_reason", "error")


@dataclass(frozen=True)
class RowRequest:
    """One input row, checked: the prompt and its per-row constraints, or why it is unusable."""

    id: Any
    prompt: Any
    phrases: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()
    prefix: str | None = None
    error: str | None = None

    @property
    def has_request(self) -> bool:
        return bool(self.phrases or self.avoid or self.prefix is not None)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _texts(value, name: str) -> tuple[str, ...]:
    """A phrase column's value: a list of strings, one string, or nothing."""
    if _missing(value):
        return ()
    if isinstance(value, str):
        return (value,)
    if hasattr(value, "tolist"):  # numpy / arrow arrays from Ray batches
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"column {name!r} must be a list of strings (got {type(value).__name__}: {value!r:.60})")
    return tuple(value)


def parse_row(row: dict, default_id=None) -> RowRequest:
    """Check one input row; a bad row comes back with ``error`` set instead of raising."""
    rid = row.get("id", default_id)
    rid = default_id if _missing(rid) else rid
    prompt = row.get("prompt")
    try:
        if not isinstance(prompt, str):
            kind = "no 'prompt'" if _missing(prompt) else f"a prompt of type {type(prompt).__name__}"
            raise ValueError(f"{kind}: every row needs a 'prompt' string")
        if not prompt.strip():
            raise ValueError("empty prompt: give the text to continue or answer")
        check_prompt(prompt, "column 'prompt'")  # valid Unicode (no lone surrogate)
        prefix = row.get("prefix")
        if _missing(prefix):
            prefix = None
        elif not isinstance(prefix, str) or not prefix:
            raise ValueError(f"column 'prefix' must be non-empty text (got {prefix!r:.60})")
        return RowRequest(rid, prompt, _texts(row.get("phrases"), "phrases"), _texts(row.get("avoid"), "avoid"), prefix)
    except ValueError as exc:
        return RowRequest(rid, prompt if isinstance(prompt, str) else None, error=str(exc))


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def result_row(req: RowRequest, res) -> dict:
    """The output row of a decoded :class:`fstbeam.GenerationResult`."""
    return {
        "id": req.id, "prompt": req.prompt, "text": res.text, "satisfied": bool(res.satisfied),
        "phrases_met": [bool(m) for m in res.phrases_met], "score": _finite(res.score),
        "logprob": _finite(res.logprob), "finish_reason": res.finish_reason, "error": res.error,
    }


def error_row(req: RowRequest, error: str) -> dict:
    """The output row of an input that could not be decoded."""
    return {
        "id": req.id, "prompt": req.prompt, "text": "", "satisfied": False, "phrases_met": [], "score": None,
        "logprob": None, "finish_reason": "error", "error": error,
    }
