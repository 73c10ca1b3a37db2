"""Rows in and out of a batch job: the input columns, the output columns, one row's checks.

Pure Python (no Ray, no torch) so the in-process path, the Ray actors and the tests share it.
A row that cannot be decoded becomes an output row with ``error`` set; it is never dropped.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from ..compiler.request import JSON_KEYS, ConstraintRequest
from ..validate import check_prompt

__all__ = ["INPUT_COLUMNS", "OUTPUT_COLUMNS", "RowRequest", "parse_row", "result_row", "error_row"]

#: Columns a batch input may have; ``prompt`` is required, the others optional: ``id`` and the keys
#: of a `ConstraintRequest`'s JSON form (phrases with nested lists for AnyOf, avoid, prefix,
#: ordered, sentence_case, a word list...), as in a JSONL input line.
INPUT_COLUMNS = ("id", "prompt", *JSON_KEYS)
#: Columns of every output row, in this order.
OUTPUT_COLUMNS = ("id", "prompt", "text", "satisfied", "phrases_met", "score", "logprob", "finish_reason", "error", "nbest",
                  "warnings")


@dataclass(frozen=True)
class RowRequest:
    """One input row, checked: the prompt and its constraint request, or why it is unusable."""

    id: Any
    prompt: Any
    request: ConstraintRequest | None = None
    error: str | None = None

    @property
    def has_request(self) -> bool:
        return self.request is not None and not self.request.is_empty

    @property
    def key(self) -> str:
        """The request's content (rows of a corpus often share their constraints)."""
        return json.dumps(self.request.to_json() if self.request is not None else {}, sort_keys=True)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _plain(value):
    """A column value as JSON would hold it (Ray batches give numpy / arrow arrays)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


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
        obj = {k: _plain(v) for k, v in row.items() if k in JSON_KEYS and not _missing(v)}
        where = f"row {rid!r:.40}" if rid is not None else "row"
        return RowRequest(rid, prompt, ConstraintRequest.from_json(obj, where=where, allow_paths=False))
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
        "nbest": [h.text for h in res.hypotheses] if len(res.hypotheses) > 1 else [],
        # why an output is empty or unsatisfied, without the decoder's "input N: " (a place in a chunk)
        "warnings": [re.sub(r"^input \d+: ", "", w) for w in res.warnings],
    }


def error_row(req: RowRequest, error: str) -> dict:
    """The output row of an input that could not be decoded (the one error shape,
    `GenerationResult.failed`, as a row)."""
    from ..runtime.results import GenerationResult

    return result_row(req, GenerationResult.failed(None, error))
