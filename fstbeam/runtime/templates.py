"""Prompt templates by name, shared by the ``fstbeam generate`` and ``fstbeam batch`` commands."""
from __future__ import annotations

#: ``qa`` suits a base model answering a question.
TEMPLATES = {"qa": "Question: {prompt}\nAnswer:"}


def prompt_format(name: str) -> str:
    """The template called ``name``, or ``name`` itself (raw, chat, auto or a ``{prompt}`` template)."""
    return TEMPLATES.get(name, name)
