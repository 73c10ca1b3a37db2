"""Light automata (per-request phrases, avoid phrases, prefixes) in the light-table layout of
``docs/tables.md``, with host-side lookups and the distance field.

Built by `fstbeam.compiler.light.automaton`, read by the runtime pool, the matcher and the artifact.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import DisallowedTokenError
from .layout import INF_DIST, N_CLASSES, NO_TEXT_CLASS

__all__ = ["Kind", "LightAutomaton", "light_distances"]

Kind = Literal["phrase", "avoid", "prefix"]


@dataclass(frozen=True, eq=False)
class LightAutomaton:
    """A per-request token DFA in the light-table layout of ``docs/tables.md``.

    Text tokens only: EOS is allowed exactly where ``final`` is true and is never a transition
    (``next_state`` returns -1 for ids without text).
    """

    kind: Kind
    text: str
    literal: bytes  # the text's UTF-8 bytes
    width: int
    start: int
    final: np.ndarray  # bool [n]
    progress: np.ndarray  # int32 [n]
    default_next: np.ndarray  # int32 [n, 4]
    exc_key: np.ndarray  # int64 [X] sorted state*V + token
    exc_next: np.ndarray  # int32 [X]
    adv_ptr: np.ndarray  # int64 [n+1]
    adv_tokens: np.ndarray  # int32 [A]
    word_boundary: bool = True
    case_sensitive: bool = True
    source: str = ""
    fingerprint: str = ""
    token_class: np.ndarray = field(default=None, repr=False)  # int8 [V], shared with the index
    char_dfa: Any = field(default=None, repr=False)  # the compiler's PhraseDFA (debugging only)
    char_state: np.ndarray | None = field(default=None, repr=False)  # int32 [n]: char DFA state of each state
    # AnyOf / ordered / sentence-case automata (compiler.alternatives): the top progress, and the
    # items as JSON. 0 and "" for one literal (artifacts written before they existed).
    max_progress: int = 0
    items: str = ""
    # int64 [n]: fewest tokens from each state to a final one (DBA's lower bound). Computed at
    # compile time, or on load from the tables (artifact v1 does not store it).
    dist: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.dist is None and self.token_class is not None:
            object.__setattr__(self, "dist", light_distances(self))

    TABLE_FIELDS = ("final", "progress", "default_next", "exc_key", "exc_next", "adv_ptr", "adv_tokens")

    @property
    def n_states(self) -> int:
        return int(self.final.shape[0])

    @property
    def n_exceptions(self) -> int:
        return int(self.exc_key.shape[0])

    @property
    def length(self) -> int:
        """Progress of a met phrase / consumed prefix: the literal's length in bytes (for AnyOf
        and ordered automata, ``max_progress``)."""
        return self.max_progress or len(self.literal)

    #: Fields that are derived or for debugging only: the artifact does not store them.
    DERIVED_FIELDS = ("char_dfa", "char_state", "dist")

    def tables(self) -> dict[str, np.ndarray]:
        """The arrays of the table contract (``start`` is the scalar ``self.start``)."""
        return {name: getattr(self, name) for name in self.TABLE_FIELDS}

    def is_final(self, state: int) -> bool:
        return bool(self.final[state])

    def next_state(self, state: int, token: int) -> int:
        """Next state after text token ``token`` in ``state``; -1 if the token is disallowed."""
        key = state * self.width + token
        i = int(np.searchsorted(self.exc_key, key))
        if i < self.exc_key.shape[0] and int(self.exc_key[i]) == key:
            return int(self.exc_next[i])
        c = int(self.token_class[token])
        return -1 if c == NO_TEXT_CLASS else int(self.default_next[state, c])

    def advance(self, state: int, token: int) -> int:
        """``next_state`` that raises :class:`DisallowedTokenError` instead of returning -1."""
        nxt = self.next_state(state, token)
        if nxt < 0:
            raise DisallowedTokenError(f"token {token} is not allowed in state {state} of {self.kind} {self.text!r}")
        return nxt

    def row(self, state: int) -> np.ndarray:
        """int32 ``[V]``: the next state of every token id from ``state`` (-1 = disallowed)."""
        table = np.concatenate([self.default_next[state], np.array([-1], dtype=np.int32)])
        out = table[self.token_class]
        lo, hi = np.searchsorted(self.exc_key, [state * self.width, (state + 1) * self.width])
        out[self.exc_key[lo:hi] - state * self.width] = self.exc_next[lo:hi]
        return out

    def allowed(self, state: int) -> np.ndarray:
        """Sorted int64 ids of the text tokens allowed in ``state`` (EOS: see ``is_final``)."""
        return np.flatnonzero(self.row(state) >= 0)

    def advancing(self, state: int) -> np.ndarray:
        """Sorted int32 ids of the tokens that raise ``progress`` from ``state`` (DBA candidates)."""
        return self.adv_tokens[self.adv_ptr[state] : self.adv_ptr[state + 1]]

    def describe(self) -> str:
        opts = []
        if self.kind != "prefix":
            opts.append("word boundaries" if self.word_boundary else "inside words")
            opts.append("case-sensitive" if self.case_sensitive else "ASCII case-insensitive")
        return (
            f"{self.kind} {self.text!r} ({', '.join(opts) or 'exact'}): {self.n_states} states, "
            f"{self.n_exceptions} exceptions, {self.adv_tokens.shape[0]} advancing entries"
        )


def light_distances(a: Any, class_nonempty: np.ndarray | None = None) -> np.ndarray:
    """int64 ``[n]``: fewest tokens from each state of light automaton ``a`` to a final state.

    Edges: the class defaults of classes that have tokens (``class_nonempty``, by default from
    ``a.token_class``), and the exception transitions. A class edge whose every token is an
    exception is kept; that can only make a distance smaller, so the result stays a valid lower
    bound for pruning.
    """
    n = int(a.final.shape[0])
    V = int(a.width)
    if class_nonempty is None:
        counts = np.bincount(np.asarray(a.token_class, np.int64), minlength=N_CLASSES + 1)
        class_nonempty = counts[:N_CLASSES] > 0
    dn = np.asarray(a.default_next)
    classes = dn[:, : min(dn.shape[1], N_CLASSES)][:, np.asarray(class_nonempty)[: min(dn.shape[1], N_CLASSES)]]
    cq, cc = np.nonzero(classes >= 0)  # class edges (order does not matter to the search)
    ek, en = np.asarray(a.exc_key), np.asarray(a.exc_next)
    ok = en >= 0
    src_a = np.concatenate([cq, ek[ok] // V]).astype(np.int64)
    dst_a = np.concatenate([classes[cq, cc], en[ok]]).astype(np.int64)
    if ((src_a < 0) | (src_a >= n) | (dst_a >= n)).any():
        raise ValueError(f"light automaton {getattr(a, 'text', '')!r}: a transition leaves its {n} states")
    if n <= _DENSE_BFS_STATES:
        return _distances_dense(n, src_a, dst_a, np.asarray(a.final, bool))
    order = np.argsort(dst_a, kind="stable")  # predecessor lists as one sorted array (CSR)
    ptr = np.searchsorted(dst_a[order], np.arange(n + 1)).tolist()
    pred = src_a[order].tolist()
    dist = [-1] * n
    todo = np.flatnonzero(np.asarray(a.final)).tolist()
    for q in todo:
        dist[q] = 0
    for q in todo:  # the list grows while it is walked: a queue
        d = dist[q] + 1
        for p in pred[ptr[q]:ptr[q + 1]]:
            if dist[p] < 0:
                dist[p] = d
                todo.append(p)
    out = np.array(dist, dtype=np.int64)
    out[out < 0] = INF_DIST
    out.setflags(write=False)
    return out


# Up to this many states the breadth-first search runs on a dense [n, n] predecessor matrix (a
# few numpy calls per level) instead of Python lists (which cost ~1 ms per phrase request).
_DENSE_BFS_STATES = 512


def _distances_dense(n: int, src: np.ndarray, dst: np.ndarray, final: np.ndarray) -> np.ndarray:
    pred = np.zeros((n, n), bool)
    pred[dst, src] = True  # pred[q] marks the states with an edge into q
    dist = np.full(n, INF_DIST, dtype=np.int64)
    seen = final.copy()
    frontier, d = seen.copy(), 0
    while frontier.any():
        dist[frontier] = d
        d += 1
        frontier = pred[frontier].any(axis=0) & ~seen
        seen |= frontier
    dist.setflags(write=False)
    return dist
