"""A list of allowed answers (`choice=[...]`): the text is exactly one of the strings."""
from __future__ import annotations

from collections.abc import Sequence

import pynini

from ...errors import SpecError
from ...fst.optimize import optimize

__all__ = ["choice_fst"]


def choice_fst(choices: Sequence[str], *, where: str = "choice") -> pynini.Fst:
    """A minimal byte acceptor of exactly the UTF-8 encodings of ``choices``.

    Refused (SpecError naming ``where`` and the item): no choices, a non-string item, an empty
    string (the output would be empty: use `regex` for an optional answer), a NUL character.
    """
    if isinstance(choices, (str, bytes)) or not isinstance(choices, Sequence):
        raise SpecError(f"{where}: give a list of strings, got {type(choices).__name__}")
    if not choices:
        raise SpecError(f"{where}: the list of choices is empty; give at least one string")
    for i, c in enumerate(choices):
        if not isinstance(c, str):
            raise SpecError(f"{where}[{i}]: a choice must be a string, got {type(c).__name__}")
        if not c:
            raise SpecError(f"{where}[{i}]: a choice is the empty string; an output cannot be empty")
        if "\x00" in c:
            raise SpecError(f"{where}[{i}]: a choice contains a NUL character, which no output can spell")
    fst = pynini.union(*(pynini.accep(pynini.escape(c), token_type="byte") for c in dict.fromkeys(choices)))
    return optimize(fst, stage=f"{where} ({len(choices)} strings)")
