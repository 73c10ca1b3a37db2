"""Must-include items beyond one literal, as the compiler sees them: which light automata a phrase
list becomes, and the compile-time satisfiability check for AnyOf, sentence case and order.

``phrases`` (user items, optionally ``ordered``) and grammar phrases (always independent) become
light automata as follows: a plain phrase keeps ``light.compile_phrase``; an ``AnyOf`` or a
sentence-case phrase is one automaton from :mod:`fstbeam.compiler.light.alternatives`; with
``ordered=True`` the user items together are ONE automaton (met when they occur in order without
overlapping), so DBA sees one progress value, the bytes matched in order.
"""
from __future__ import annotations

import numpy as np

from ...errors import UnsatisfiableConstraintError
from .. import char_dfa
from .alternatives import AnyOf, compile_items, is_general, items_char_dfa, stages_of
from .satisfy import reachable_pair

__all__ = ["check_items", "compile_must_include", "to_byte_dfa"]


def to_byte_dfa(dfa) -> char_dfa.CharDFA:
    """The symbol-class DFA of ``alternatives.items_char_dfa`` as a flat byte DFA (``satisfy``)."""
    nxt = dfa.delta[:, dfa.sym_of_byte].astype(np.int32)  # [Q, 256]
    nxt[:, 0] = -1
    return char_dfa.CharDFA(nxt, np.asarray(dfa.final, bool), int(dfa.start))


def _alts(item) -> list[str]:
    return list(item.alternatives) if isinstance(item, AnyOf) else [item.text]


def check_items(hard: char_dfa.CharDFA, base_name: str, items, *, ordered: bool, prefix: str | None) -> None:
    """Raise UnsatisfiableConstraintError if an AnyOf / sentence-case item, or the ordered
    sequence, cannot occur in any text of ``hard`` (starting with ``prefix``). Plain phrases of
    an unordered list are checked by the caller (``compile._check_request``)."""
    start = (prefix or "").encode("utf-8")
    after = " after the prefix" if prefix else ""
    singles = items if ordered else [i for i in items if is_general(i)]
    for item in singles:
        if not reachable_pair(hard, to_byte_dfa(items_char_dfa(stages_of([item]))), want_other_final=True, start_text=start):
            alts = _alts(item)
            what = f"phrase {alts[0]!r} cannot" if len(alts) == 1 else f"none of the alternatives {alts} can"
            raise UnsatisfiableConstraintError(
                f"{what} appear ({item.source}) in any text allowed by {base_name}{after}: "
                "add the words to the list or drop the constraint",
                tuple(alts),
            )
    if ordered and len(items) > 1:
        if not reachable_pair(hard, to_byte_dfa(items_char_dfa(stages_of(items))), want_other_final=True, start_text=start):
            texts = [i.text for i in items]
            raise UnsatisfiableConstraintError(
                f"the phrases {texts} cannot appear in this order, without overlapping, in any text allowed by "
                f"{base_name}{after} (ordered=True): reorder them, or drop ordered=True",
                tuple(texts),
            )


def compile_must_include(user, grammar, index, *, ordered: bool) -> tuple:
    """Light automata for the user's ``phrases`` and the grammar's, in that order."""
    from .memo import light_phrases

    def each(items) -> list:
        """AnyOf / sentence case one by one; the plain phrases together (`memo.light_phrases`)."""
        plain = iter(light_phrases([(p.text, p.word_boundary, p.case_sensitive) for p in items if not is_general(p)], index))
        return [compile_items([p], index, source=p.source) if is_general(p) else next(plain) for p in items]

    if ordered and len(user) > 1:
        return (compile_items(user, index, ordered=True, source="ordered phrases"), *each(grammar))
    return tuple(each([*user, *grammar]))

