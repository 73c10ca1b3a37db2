"""Request bodies of the OpenAI-compatible routes (pydantic), checked before anything runs.

Every field of OpenAI's API is either honoured or refused with a 400 naming it and what to use
instead (:mod:`.options`); any other unknown field is a 400 naming it (a misspelt ``constraint``
must not silently decode without constraints). The beam search fields ride in the same body (the
``openai`` client's ``extra_body``): every `SearchConfig` field by its name, ``preset`` and
``constraints`` (see :mod:`.constraints`).
"""
from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from .options import OPENAI_OPTIONAL, SEARCH_FIELDS, STRUCTURED_FIELDS

__all__ = ["CompletionBody", "ChatBody", "ChatMessage", "ConstraintsBody", "param_of"]

def _loose(names) -> dict:
    return {name: (Any, None) for name in names}


# Search settings (every SearchConfig field) and the OpenAI fields that options.py honours or
# refuses: typed loosely here, checked there (SearchConfig's own checks and messages).
_Fields = create_model("_Fields", __config__=ConfigDict(extra="forbid"),
                       **_loose(SEARCH_FIELDS), **_loose(STRUCTURED_FIELDS), **_loose(OPENAI_OPTIONAL))


class _Common(_Fields):  # type: ignore[misc, valid-type]
    model: str | None = None
    max_tokens: Any = None  # -> max_new_tokens
    max_completion_tokens: Any = None
    n: Any = None  # -> nbest
    preset: Any = None
    stop: Union[str, list[str], None] = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    user: str | None = Field(default=None, max_length=256)
    constraints: dict[str, Any] | None = None
    logprobs: Union[bool, int, None] = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    seed: int | None = None  # honoured: every seed gives the same output
    best_of: Any = None

    @field_validator("stop")
    @classmethod
    def _stop(cls, v):
        if isinstance(v, str):
            v = [v]
        if v is not None and (len(v) > 4 or any(not s for s in v)):
            raise ValueError("stop takes up to 4 non-empty strings")
        return v


class CompletionBody(_Common):
    prompt: Union[str, list[str]]
    echo: bool = False

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, v):
        items = [v] if isinstance(v, str) else v
        if not items or len(items) > 64:
            raise ValueError("prompt must be a string or a list of 1 to 64 strings")
        if any(not p.strip() for p in items):
            raise ValueError("prompt must be non-empty text")
        return v


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: Union[str, list[dict[str, Any]], None] = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return self.content or ""


class ChatBody(_Common):
    messages: list[ChatMessage] = Field(min_length=1, max_length=256)


class ConstraintsBody(BaseModel):
    """``POST /v1/constraints``: a ``constraints`` object (any of its keys) to compile and store."""

    model_config = ConfigDict(extra="allow")


def param_of(loc) -> str:
    """A pydantic error location as a field path: ``("body", "constraints", "phrases", 0)`` ->
    ``constraints.phrases[0]``."""
    out = ""
    for part in loc:
        if part == "body" and not out:
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "list[str]", "function-after[_stop(), union[str,list[str]]]"):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "body"
