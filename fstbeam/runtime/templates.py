"""Prompt formats by name, shared by every door (the API's ``Decoder(prompt_format=...)``, the
commands, the server).

``raw`` continues the prompt as text, ``chat`` applies the tokenizer's chat template, ``auto`` is
chat when the tokenizer has a template and raw otherwise, ``qa`` is the template below; any other
format is a template with ``{prompt}``.
"""
from __future__ import annotations

from ..errors import DecodeError

__all__ = ["TEMPLATES", "NAMED", "prompt_format", "check_format"]

#: ``qa`` suits a base model answering a question.
TEMPLATES = {"qa": "Question: {prompt}\nAnswer:"}
NAMED = ("raw", "chat", "auto", *TEMPLATES)


def check_format(name: str) -> str:
    """``name`` if it is a known format or a template with ``{prompt}``; else a DecodeError."""
    if not isinstance(name, str) or (name not in NAMED and "{prompt}" not in name):
        raise DecodeError(f"prompt_format {name!r}: use {', '.join(NAMED)}, or a template: a template must contain "
                          "{prompt} where the prompt goes (e.g. 'Question: {prompt}\\nAnswer:')")
    return name


def prompt_format(name: str) -> str:
    """The template called ``name``, or ``name`` itself (raw, chat, auto or a ``{prompt}`` template)."""
    return TEMPLATES.get(check_format(name), name)
