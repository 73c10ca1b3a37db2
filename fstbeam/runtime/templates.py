"""Prompt formats by name, shared by every door (the API's ``Decoder(prompt_format=...)``, the
commands, the server).

``raw`` continues the prompt as text, ``chat`` applies the tokenizer's chat template, ``auto`` is
chat when the tokenizer has a template and raw otherwise, ``qa`` is the template below; any other
format is a template with ``{prompt}``.
"""
from __future__ import annotations

from ..validate import PROMPT_FORMATS, check_prompt_format

__all__ = ["TEMPLATES", "NAMED", "prompt_format", "check_format"]

#: ``qa`` suits a base model answering a question.
TEMPLATES = {"qa": "Question: {prompt}\nAnswer:"}
NAMED = PROMPT_FORMATS
assert set(TEMPLATES) <= set(NAMED)


def check_format(name: str) -> str:
    """``name`` if it is a known format or a template with ``{prompt}`` (`validate.check_prompt_format`)."""
    return check_prompt_format(name, "prompt_format")


def prompt_format(name: str) -> str:
    """The template called ``name``, or ``name`` itself (raw, chat, auto or a ``{prompt}`` template)."""
    return TEMPLATES.get(check_format(name), name)
