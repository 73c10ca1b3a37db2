"""Structured constraints (regular expressions, choices, JSON Schema) as byte automata.

Each compiles to a character (UTF-8 byte) acceptor with pynini; the hard pipeline lifts it to
tokens like a grammar (docs/structured.md). Compile side only: never imports torch.
"""
from __future__ import annotations

from .choice import choice_fst
from .regex import regex_fst
from .regex.utf8 import ANY_CHAR, codepoint_ranges_fst

__all__ = ["ANY_CHAR", "codepoint_ranges_fst", "regex_fst", "choice_fst"]
