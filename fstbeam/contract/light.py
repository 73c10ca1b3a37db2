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

__all__ = ["Kind", "LightAutomaton", "distances_from_edges", "light_distances"]

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
    token_class: np.ndarray = field(default=None, repr=False)  # type: ignore[arg-type]  # int8 [V], shared with the index (set by the compiler)
    char_dfa: Any = field(default=None, repr=False)  # the compiler's PhraseDFA (debugging only)
    char_state: np.ndarray | None = field(default=None, repr=False)  # int32 [n]: char DFA state of each state
    # AnyOf / ordered / sentence-case automata (compiler.alternatives): the top progress, and the
    # items as JSON. 0 and "" for one literal (artifacts written before they existed).
    max_progress: int = 0
    items: str = ""
    # int64 [n]: fewest tokens from each state to a final one (DBA's lower bound). Computed at
    # compile time, or on load from the tables (artifact v1 does not store it).
    dist: np.ndarray | None = field(default=None, repr=False)
    # int32 [n]: each state's fallback state, -1 for none (docs/tables.md, "Fallback states"): a
    # token missing from the state's exceptions is looked up in its fallback's before the class
    # default. Must-include AnyOf / ordered automata only; None (artifacts before format 3): none.
    fallback: np.ndarray = field(default=None)  # type: ignore[arg-type]  # set in __post_init__

    def __post_init__(self) -> None:
        if self.fallback is None:
            fb = np.full(self.final.shape[0], -1, np.int32)
            fb.setflags(write=False)
            object.__setattr__(self, "fallback", fb)
        if self.dist is None and self.token_class is not None:
            object.__setattr__(self, "dist", light_distances(self))

    TABLE_FIELDS = ("final", "progress", "default_next", "exc_key", "exc_next", "adv_ptr", "adv_tokens", "fallback")

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
        c = int(self.token_class[token])
        if c == NO_TEXT_CLASS:
            return -1
        return int(self.next_states(np.array([state]), np.array([token]))[0])

    def next_states(self, states: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Vectorized ``next_state`` for text tokens: the state's exception, else its fallback's,
        else the class default."""
        states, tokens = np.asarray(states, np.int64), np.asarray(tokens, np.int64)
        out: np.ndarray = np.asarray(self.default_next)[states, np.asarray(self.token_class)[tokens].clip(max=NO_TEXT_CLASS - 1)]
        out = out.astype(np.int64)
        fb = np.asarray(self.fallback, np.int64)[states]
        for who in (np.where(fb >= 0, fb, -1), states):  # the fallback first: the state's own entry wins
            _exception_lookup(self.exc_key, self.exc_next, who, tokens, self.width, out)
        return out

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
        fb = int(self.fallback[state])
        for q in ([fb] if fb >= 0 else []) + [state]:  # the state's own entries last: they win
            lo, hi = np.searchsorted(self.exc_key, [q * self.width, (q + 1) * self.width])
            out[self.exc_key[lo:hi] - q * self.width] = self.exc_next[lo:hi]
        return np.asarray(out)

    def allowed(self, state: int) -> np.ndarray:
        """Sorted int64 ids of the text tokens allowed in ``state`` (EOS: see ``is_final``)."""
        return np.flatnonzero(self.row(state) >= 0)

    def advancing(self, state: int) -> np.ndarray:
        """Sorted int32 ids of the tokens that raise ``progress`` from ``state`` (DBA candidates):
        its own list, and with a fallback, the fallback's advancing tokens that the state does not
        override and that reach more than its progress."""
        own = self.adv_tokens[self.adv_ptr[state] : self.adv_ptr[state + 1]]
        f = int(self.fallback[state])
        if f < 0:
            return own
        cand = np.asarray(self.adv_tokens[self.adv_ptr[f] : self.adv_ptr[f + 1]], np.int64)
        lo, hi = np.searchsorted(self.exc_key, [state * self.width, (state + 1) * self.width])
        cand = cand[~np.isin(cand, self.exc_key[lo:hi] - state * self.width)]
        cand = cand[self.progress[self.next_states(np.full(len(cand), f), cand)] > self.progress[state]]
        return np.union1d(own, cand).astype(np.int32)

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
    fb = getattr(a, "fallback", None)
    if fb is None or not (np.asarray(fb) >= 0).any():
        return distances_from_edges(n, src_a, dst_a, np.asarray(a.final, bool))
    return _distances_fallback(n, src_a, dst_a, np.asarray(a.final, bool), np.asarray(fb, np.int64), ek[ok], en[ok], V)


def _exception_lookup(exc_key: np.ndarray, exc_next: np.ndarray, states: np.ndarray, tokens: np.ndarray, V: int,
                      out: np.ndarray) -> None:
    """Write into ``out`` the exception entry of each (state, token) pair that has one."""
    ek = np.asarray(exc_key)
    if not len(ek):
        return
    key = states * V + tokens
    i = np.searchsorted(ek, key).clip(max=len(ek) - 1)
    hit = (ek[i] == key) & (states >= 0)
    out[hit] = np.asarray(exc_next)[i[hit]]


def _distances_fallback(n: int, src: np.ndarray, dst: np.ndarray, final: np.ndarray, fb: np.ndarray,
                        ek: np.ndarray, en: np.ndarray, V: int) -> np.ndarray:
    """`distances_from_edges` where a state with a fallback also has an edge to every target of
    its fallback's exceptions, except a target all of whose tokens the state overrides.

    Those edges are never listed (states x start tokens): a breadth-first search from the final
    states passes from a target to the fallbacks that reach it, and from there to the states
    that fall back on them, skipping a state only where the target is overridden for it."""
    rev: list[list[int]] = [[] for _ in range(n)]
    edge = np.sort(dst * n + src)  # many tokens share an edge (a sort: numpy's hashing unique is slower)
    edge = edge[np.r_[True, edge[1:] != edge[:-1]]] if len(edge) else edge
    for d, s in zip((edge // n).tolist(), (edge % n).tolist()):
        rev[d].append(s)
    eq, et = ek // V, ek % V
    is_fb = np.zeros(n, bool)
    is_fb[fb[fb >= 0]] = True
    # Targets of the fallbacks' exceptions, and how many tokens reach each.
    sel = is_fb[eq]
    pair = np.unique(eq[sel] * n + en[sel], return_counts=True)
    vrev: list[list[int]] = [[] for _ in range(n)]
    for f, y in zip((pair[0] // n).tolist(), (pair[0] % n).tolist()):
        vrev[y].append(f)
    # (state, target) pairs the state overrides for every token that reaches the target.
    has = fb[eq] >= 0
    qs, ts = eq[has], et[has]
    over_next = np.full(len(qs), -1, np.int64)
    _exception_lookup(ek, en, fb[qs], ts, V, over_next)
    hit = over_next >= 0
    got = np.unique(qs[hit] * n + over_next[hit], return_counts=True)
    f_of = fb[got[0] // n]
    need = pair[1][np.searchsorted(pair[0], f_of * n + got[0] % n)]
    blocked = set(got[0][got[1] == need].tolist())
    pending: list[list[int]] = [[] for _ in range(n)]
    for q in np.flatnonzero(fb >= 0).tolist():
        pending[int(fb[q])].append(q)
    dist = [-1] * n
    todo = np.flatnonzero(final).tolist()
    for q in todo:
        dist[q] = 0
    for y in todo:  # the list grows while it is walked: a breadth-first search
        d = dist[y] + 1
        for p in rev[y]:
            if dist[p] < 0:
                dist[p] = d
                todo.append(p)
        for f in vrev[y]:
            left = []
            for q in pending[f]:
                if dist[q] >= 0:
                    continue
                if q * n + y in blocked:
                    left.append(q)
                else:
                    dist[q] = d
                    todo.append(q)
            pending[f] = left
    out = np.array(dist, dtype=np.int64)
    out[out < 0] = INF_DIST
    out.setflags(write=False)
    return out


def distances_from_edges(n: int, src: np.ndarray, dst: np.ndarray, final: np.ndarray) -> np.ndarray:
    """int64 ``[n]`` (read-only): fewest edges ``src -> dst`` from each state to a ``final`` one
    (``INF_DIST`` if none)."""
    if n <= _DENSE_BFS_STATES and len(src) > _LIST_BFS_EDGES:
        return _distances_dense(n, src, dst, final)
    rev: list[list[int]] = [[] for _ in range(n)]
    for s, d in zip(src.tolist(), dst.tolist()):
        rev[d].append(s)
    return _distances_lists(n, rev, final)


# Automata with more edges than _LIST_BFS_EDGES but at most this many states search a dense
# [n, n] predecessor matrix (a few numpy calls per level) instead of Python lists.
_DENSE_BFS_STATES = 512
# Up to this many edges the search walks Python lists (~10 us for a phrase's ~100 edges; the
# dense matrix costs a few numpy calls per level, ~60 us).
_LIST_BFS_EDGES = 2048


def _distances_lists(n: int, rev: list[list[int]], final: np.ndarray) -> np.ndarray:
    dist = [-1] * n
    todo = np.flatnonzero(final).tolist()
    for q in todo:
        dist[q] = 0
    for q in todo:  # the list grows while it is walked: a breadth-first search
        d = dist[q] + 1
        for p in rev[q]:
            if dist[p] < 0:
                dist[p] = d
                todo.append(p)
    out = np.array(dist, dtype=np.int64)
    out[out < 0] = INF_DIST  # unreachable
    out.setflags(write=False)
    return out


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
