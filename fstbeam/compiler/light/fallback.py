"""Lifting a must-include automaton with *fallback* states (AnyOf, ordered, sentence case).

An AnyOf of N alternatives has a state per partial match (~ the alternatives' total length), and
a token that starts an alternative (" cat" for "cat food") leaves every state for the same
partial match, whatever was matched before: with one exception list per state those start
transitions were stored once per state, N x N entries (18 million for 1,000 two-word
alternatives: 10 s and 2.4 GB to build).

Here a state with partial matches names a *fallback*: the state with the same stage and boundary
flags and no partial match (``alternatives._items_char_dfa``). A token that extends none of the
state's partial matches acts exactly as from the fallback (its partial matches die at the first
byte they cannot take, and none of them completes), so the state stores only the tokens whose
result differs from its fallback's, and a lookup that misses its own exceptions tries the
fallback's before the class default (docs/tables.md, "Fallback states"). The trie walk of
`lift.trie_exceptions` runs each state beside its fallback and stops a branch as soon as the
two coincide, so the work follows the partial matches, not states x start tokens.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...contract.layout import INF_DIST
from ...contract.light import LightAutomaton, light_distances
from ...errors import UnsatisfiableConstraintError
from .arrays import read_only
from .lift import trie_exceptions
from .phrase_dfa import PhraseDFA
from .token_index import TokenIndex

__all__ = ["lift_with_fallback"]


def _usable(fallback: np.ndarray, default: np.ndarray) -> np.ndarray:
    """``fallback`` with -1 wherever the table contract would be broken: a fallback must have no
    fallback of its own and the same class defaults (a lookup that misses both exception lists
    takes the state's own default row)."""
    fb = np.asarray(fallback, np.int64).copy()
    has = fb >= 0
    bad = has & ((fb[np.maximum(fb, 0)] >= 0) | (default[np.maximum(fb, 0)] != default).any(axis=1))
    fb[bad] = -1
    return fb


def lift_with_fallback(text: str, literal: bytes, dfa: PhraseDFA, fallback: np.ndarray, index: TokenIndex,
                       cands: np.ndarray, source: str) -> LightAutomaton:
    """The must-include light automaton of ``dfa`` (every character state kept, numbered as in
    ``dfa``) with fallback states. Raises UnsatisfiableConstraintError when no final state can be
    reached from the start."""
    V = index.width
    default = dfa.class_defaults().astype(np.int64)
    fb = _usable(fallback, default)
    cls = index.token_class[cands].astype(np.int64)
    eq, ek, en = trie_exceptions(dfa.delta, dfa.sym_of_byte, index.padded[cands], index.lengths[cands], cls,
                                     default, fb)
    exc_key = eq * V + cands[ek]
    exc_next = en.astype(np.int32)
    final = np.asarray(dfa.final, bool)
    n = len(final)
    progress = dfa.progress.astype(np.int32)
    nonempty = index.class_nonempty
    tables = SimpleNamespace(final=final, width=V, default_next=default, exc_key=exc_key, exc_next=exc_next,
                             fallback=fb, text=text)  # what light_distances reads, before the automaton exists
    dist = light_distances(tables, nonempty)
    if dist[dfa.start] >= INF_DIST:
        raise UnsatisfiableConstraintError(f"phrase {text!r} can never be met", (text,))
    if (progress[default] > progress[:, None]).any():
        raise AssertionError(f"internal error: a class default raises progress in {text!r}")
    adv_ptr, adv_tokens = _advancing(n, V, progress, exc_key, exc_next, fb)
    return LightAutomaton(
        kind="phrase", text=text, literal=literal, width=V, start=int(dfa.start), final=read_only(final.copy()),
        progress=read_only(progress), default_next=read_only(default.astype(np.int32)), exc_key=read_only(exc_key),
        exc_next=read_only(exc_next), adv_ptr=read_only(adv_ptr), adv_tokens=read_only(adv_tokens), source=source,
        fingerprint=index.fingerprint, token_class=index.token_class, char_dfa=dfa,
        char_state=read_only(np.arange(n, dtype=np.int32)), dist=dist, fallback=read_only(fb.astype(np.int32)),
    )


def _advancing(n: int, V: int, progress: np.ndarray, exc_key: np.ndarray, exc_next: np.ndarray,
               fb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(adv_ptr, adv_tokens): per state, the sorted tokens of its own exceptions whose next state
    has more progress (class defaults never advance). A state with a fallback also advances on
    its fallback's advancing tokens that it does not override and that reach more than its own
    progress: `LightAutomaton.advancing` and the runtime read those off the fallback's list
    (listing them per state was states x start tokens again)."""
    adv = progress[exc_next] > progress[exc_key // V]
    own = exc_key[adv]
    ptr = np.searchsorted(own, np.arange(n + 1, dtype=np.int64) * V).astype(np.int64)
    return ptr, (own % V).astype(np.int32)
