"""Request bodies of the OpenAI-compatible routes (pydantic), checked before anything runs.

Fields of OpenAI's API that beam search has no use for (``temperature``, ``top_p``, ...) are
accepted and ignored, so existing clients work unchanged; any other unknown field is a 400
naming it (a misspelt ``constraint`` must not silently decode without constraints). The beam
search fields ride in the same body (the ``openai`` client's ``extra_body``): ``beam_size`` and
``constraints`` (see :mod:`.constraints`).
"""
from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["CompletionBody", "ChatBody", "ChatMessage", "ConstraintsBody", "param_of"]

class _Common(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: int = Field(default=1, ge=1)
    stop: Union[str, list[str], None] = None
    stream: bool = False
    user: str | None = Field(default=None, max_length=256)
    beam_size: int | None = Field(default=None, ge=1)
    constraints: dict[str, Any] | None = None
    # accepted for compatibility, not used by beam search
    temperature: Any = None
    top_p: Any = None
    presence_penalty: Any = None
    frequency_penalty: Any = None
    seed: Any = None
    logit_bias: Any = None
    logprobs: Any = None
    top_logprobs: Any = None
    stream_options: Any = None
    best_of: Any = None
    response_format: Any = None
    tools: Any = None
    tool_choice: Any = None
    parallel_tool_calls: Any = None
    service_tier: Any = None
    store: Any = None
    metadata: Any = None

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
    suffix: Any = None

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
