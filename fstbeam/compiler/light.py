"""Light automata: per-request phrases, avoid phrases and prefixes, compiled in milliseconds.

A light automaton is a small token DFA stored as in ``docs/tables.md`` ("Light automata"): a
transition depends only on the token's class (first/last byte word or not) except for a few
*exception* tokens. Compiling one takes three steps:

1. build a small exact character DFA for the constraint (our own subset construction over byte
   classes, minimized; the tests check it against pynini acceptors);
2. ask the per-tokenizer :class:`TokenIndex` for the *candidate* tokens, the only ones whose
   transition can differ from their class's default (see :func:`_phrase_candidates`);
3. run the character DFA over the candidates' bytes from every state at once (numpy), keep the
   entries that differ from ``default_next[state, class]``, drop states no token sequence reaches
   (and, for avoid/prefix, states from which no output can finish).

Phrase semantics (DESIGN.md): the phrase is met when its bytes occur anywhere in the output, by
default at word boundaries: a boundary is needed before the phrase only if its first byte is a
word byte, after it only if its last byte is a word byte, and the start and end of the output count
as boundaries. Case-insensitive matching folds ASCII letters only (see ``token_index``).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..errors import DisallowedTokenError, SpecError, UnsatisfiableConstraintError
from .token_index import IS_WORD_BYTE, N_CLASSES, NO_TEXT_CLASS, TokenIndex
from .vocab import Vocab

__all__ = [
    "CharDFA",
    "LightAutomaton",
    "compile_phrase",
    "compile_avoid",
    "compile_prefix",
    "phrase_char_dfa",
    "prefix_char_dfa",
]

Kind = Literal["phrase", "avoid", "prefix"]

_EMPTY_I32 = np.zeros(0, dtype=np.int32)


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


# ---------------------------------------------------------------------------------------------
# Character DFA
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class CharDFA:
    """A byte DFA over symbol classes: ``delta[q, sym_of_byte[b]]``.

    Symbols are the distinct (case-folded) bytes of the literal plus two representatives: any
    other word byte (``word_sym``) and any other non-word byte (``nonword_sym``).
    ``forbidden[q]``: a token that enters ``q`` is disallowed (avoid: the phrase is complete;
    prefix: the output left the prefix).
    """

    delta: np.ndarray  # int32 [Q, nsym]
    sym_of_byte: np.ndarray  # int16 [256]
    start: int
    final: np.ndarray  # bool [Q]
    forbidden: np.ndarray  # bool [Q]
    progress: np.ndarray  # int32 [Q]
    word_sym: int
    nonword_sym: int

    @property
    def n_states(self) -> int:
        return int(self.delta.shape[0])

    def run(self, data: bytes, state: int | None = None) -> int:
        q = self.start if state is None else state
        for b in data:
            q = int(self.delta[q, self.sym_of_byte[b]])
        return q

    def accepts(self, data: bytes) -> bool:
        return bool(self.final[self.run(data)])

    def run_tokens(self, states: np.ndarray, padded: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """int32 ``[len(states), T]``: the state reached from each state over each token's bytes.

        ``padded`` uint8 ``[T, L]`` holds the tokens' bytes left-aligned, ``lengths`` int ``[T]``.
        """
        states = np.asarray(states, dtype=np.int32)
        lengths = np.asarray(lengths)
        t = len(lengths)
        order = np.argsort(-lengths, kind="stable")  # longest first: active tokens are a prefix
        lens = lengths[order]
        syms = self.sym_of_byte[padded[order]]  # [T, L]
        nsym = self.delta.shape[1]
        flat = self.delta.ravel()
        cur = np.repeat(states[:, None], t, axis=1)  # [Q', T]
        active = np.searchsorted(-lens, -np.arange(padded.shape[1] if t else 0), side="left")  # tokens with len > pos
        for pos, k in enumerate(active):
            if k == 0:
                break
            cur[:, :k] = flat[cur[:, :k] * nsym + syms[:k, pos]]
        out = np.empty_like(cur)
        out[:, order] = cur
        return out

    def class_defaults(self) -> np.ndarray:
        """int32 ``[Q, 4]``: the state a token of class c reaches if none of its bytes is a
        literal byte (first and last byte replaced by the class's representative symbols)."""
        reps = []
        for c in range(N_CLASSES):
            first = self.nonword_sym if c & 2 else self.word_sym
            last = self.nonword_sym if c & 1 else self.word_sym
            q = self.delta[np.arange(self.n_states), first]
            reps.append(self.delta[q, last])
        return np.stack(reps, axis=1).astype(np.int32)


def _symbols(lit: bytes, fold: bool) -> tuple[list[int], np.ndarray, int, int]:
    alphabet = sorted(set(lit))
    word_sym, nonword_sym = len(alphabet), len(alphabet) + 1
    sym_of_byte = np.where(IS_WORD_BYTE, word_sym, nonword_sym).astype(np.int16)
    for i, b in enumerate(alphabet):
        sym_of_byte[b] = i
        if fold and 0x61 <= b <= 0x7A:  # the literal is lowercased; its capitals share the symbol
            sym_of_byte[b - 32] = i
    return alphabet, sym_of_byte, word_sym, nonword_sym


def _minimize(delta: np.ndarray, labels: list) -> tuple[np.ndarray, np.ndarray]:
    """Moore partition refinement starting from ``labels``; returns (new delta, old->new map).
    Blocks are numbered by their first state, so state 0 stays state 0."""
    n = len(labels)
    block = _renumber(labels)
    while True:
        sig = [(block[q], *block[delta[q]].tolist()) for q in range(n)]
        new = _renumber(sig)
        if new.max() == block.max():
            break
        block = new
    _, rep = np.unique(block, return_index=True)  # first state of each block
    return block[delta[rep]].astype(np.int32), block


def _renumber(keys: list) -> np.ndarray:
    seen: dict = {}
    return np.array([seen.setdefault(k, len(seen)) for k in keys], dtype=np.int64)


def phrase_char_dfa(lit: bytes, *, word_boundary: bool = True, case_sensitive: bool = True, kind: Kind = "phrase") -> CharDFA:
    """Minimal DFA over ``lit``'s symbols recognising outputs that contain ``lit`` (``phrase``) or
    that do not (``avoid``).

    States before minimization are ``(S, prev_word, pending)`` plus an absorbing MET state: ``S``
    holds the lengths j of every partial match (the last j bytes equal ``lit[:j]`` with a boundary
    before them), ``prev_word`` whether the last byte was a word byte (the start of the output is
    a boundary), ``pending`` whether a full match ends at the last byte and waits for a right
    boundary. Minimization keeps (MET, pending, progress) apart, so progress is well defined.
    """
    fold = not case_sensitive
    if fold:
        lit = lit.lower()
    m = len(lit)
    need_left = word_boundary and bool(IS_WORD_BYTE[lit[0]])
    need_right = word_boundary and bool(IS_WORD_BYTE[lit[-1]])
    alphabet, sym_of_byte, word_sym, nonword_sym = _symbols(lit, fold)
    sym_byte = [*alphabet, None, None]
    sym_word = [bool(IS_WORD_BYTE[b]) for b in alphabet] + [True, False]
    nsym = len(sym_byte)

    MET = ("met",)

    def step(st, s):
        if st is MET:
            return MET
        partial, prev_word, pending = st
        c, w = sym_byte[s], sym_word[s]
        if pending and not w:
            return MET
        grown, done = set(), False
        if c is not None:
            for j in partial:
                if lit[j] == c:
                    if j + 1 == m:
                        done = True
                    else:
                        grown.add(j + 1)
            if lit[0] == c and not (need_left and prev_word):
                if m == 1:
                    done = True
                else:
                    grown.add(1)
        if done and not need_right:
            return MET
        return (frozenset(grown), w if need_left else False, done)

    start = (frozenset(), False, False)
    ids = {start: 0}
    states = [start]
    rows: list[list[int]] = []
    todo = deque([start])
    while todo:
        st = todo.popleft()
        row = []
        for s in range(nsym):
            nxt = step(st, s)
            if nxt not in ids:
                ids[nxt] = len(states)
                states.append(nxt)
                todo.append(nxt)
            row.append(ids[nxt])
        rows.append(row)
    delta = np.array(rows, dtype=np.int64)
    is_met = np.array([st is MET for st in states])
    is_pending = np.array([st is not MET and st[2] for st in states])
    progress = np.array([m if (st is MET or st[2]) else max(st[0], default=0) for st in states], dtype=np.int32)

    labels = list(zip(is_met.tolist(), is_pending.tolist(), progress.tolist()))
    mdelta, block = _minimize(delta, labels)
    nb = mdelta.shape[0]
    met_b = np.zeros(nb, dtype=bool)
    met_b[block[is_met]] = True
    pend_b = np.zeros(nb, dtype=bool)
    pend_b[block[is_pending]] = True
    prog_b = np.zeros(nb, dtype=np.int32)
    prog_b[block] = progress
    if kind == "phrase":
        final, forbidden = met_b | pend_b, np.zeros(nb, dtype=bool)
    elif kind == "avoid":
        final, forbidden = ~(met_b | pend_b), met_b
    else:
        raise ValueError(f"phrase_char_dfa builds 'phrase' or 'avoid' automata, not {kind!r}")
    return CharDFA(_ro(mdelta), _ro(sym_of_byte), 0, _ro(final), _ro(forbidden), _ro(prog_b), word_sym, nonword_sym)


def prefix_char_dfa(lit: bytes) -> CharDFA:
    """States 0..m = bytes of the prefix consumed (m: free, absorbing), m+1 = left the prefix."""
    m = len(lit)
    alphabet, sym_of_byte, word_sym, nonword_sym = _symbols(lit, False)
    nsym = len(alphabet) + 2
    dead = m + 1
    delta = np.full((m + 2, nsym), dead, dtype=np.int32)
    for i, b in enumerate(lit):
        delta[i, alphabet.index(b)] = i + 1
    delta[m, :] = m
    final = np.zeros(m + 2, dtype=bool)
    final[m] = True
    forbidden = np.zeros(m + 2, dtype=bool)
    forbidden[dead] = True
    progress = np.minimum(np.arange(m + 2), m).astype(np.int32)
    progress[dead] = 0
    return CharDFA(_ro(delta), _ro(sym_of_byte), 0, _ro(final), _ro(forbidden), _ro(progress), word_sym, nonword_sym)


# ---------------------------------------------------------------------------------------------
# Light automaton
# ---------------------------------------------------------------------------------------------
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
    char_dfa: CharDFA | None = field(default=None, repr=False)
    char_state: np.ndarray | None = field(default=None, repr=False)  # int32 [n]: char DFA state of each state
    # AnyOf / ordered / sentence-case automata (compiler.alternatives): the top progress, and the
    # items as JSON. 0 and "" for one literal (artifacts written before they existed).
    max_progress: int = 0
    items: str = ""

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


# ---------------------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------------------
def compile_phrase(
    text: str | bytes,
    index: TokenIndex | Vocab,
    *,
    word_boundary: bool = True,
    case_sensitive: bool = True,
    source: str = "",
) -> LightAutomaton:
    """Must-include phrase: ``final`` = the phrase is met (or matched at the end of the output).

    Never disallows a token; MET is absorbing; ``progress`` = bytes matched (full length when met
    or matched and waiting for a boundary); ``adv_*`` lists the tokens that raise progress.
    """
    lit = _literal("phrase", text, source)
    index = _as_index(index)
    dfa = phrase_char_dfa(lit, word_boundary=word_boundary, case_sensitive=case_sensitive, kind="phrase")
    cands = _phrase_candidates(lit, index, word_boundary=word_boundary, case_sensitive=case_sensitive)
    return _lift("phrase", text, lit, dfa, index, cands, word_boundary, case_sensitive, source)


def compile_avoid(
    text: str | bytes,
    index: TokenIndex | Vocab,
    *,
    word_boundary: bool = True,
    case_sensitive: bool = True,
    source: str = "",
) -> LightAutomaton:
    """Avoid phrase: every token that would complete an occurrence is disallowed; a match that
    waits for its right boundary is not final (EOS would complete it). ``adv_*`` is empty."""
    lit = _literal("avoid phrase", text, source)
    index = _as_index(index)
    dfa = phrase_char_dfa(lit, word_boundary=word_boundary, case_sensitive=case_sensitive, kind="avoid")
    cands = _phrase_candidates(lit, index, word_boundary=word_boundary, case_sensitive=case_sensitive)
    return _lift("avoid", text, lit, dfa, index, cands, word_boundary, case_sensitive, source)


def compile_prefix(text: str | bytes, index: TokenIndex | Vocab, *, source: str = "") -> LightAutomaton:
    """Required prefix with token healing: the output must start with ``text``; the last token may
    run past its end (``"Hel"`` allows ``"Hello"``). States = bytes consumed, then one free
    absorbing final state. Tokens that leave the prefix, or lead where it cannot be finished, are
    disallowed."""
    lit = _literal("prefix", text, source)
    index = _as_index(index)
    dfa = prefix_char_dfa(lit)
    m = len(lit)
    parts = [index.ids_substrings_of(lit)]
    parts += [index.ids_starting_with(lit[j:]) for j in range(m)]
    return _lift("prefix", text, lit, dfa, index, _union(parts), True, True, source)


def _as_index(index: TokenIndex | Vocab) -> TokenIndex:
    if isinstance(index, Vocab):
        return TokenIndex.for_vocab(index)
    if index.folded:
        raise ValueError("pass the tokenizer's TokenIndex, not its lowercased() twin (use case_sensitive=False)")
    return index


def _literal(what: str, text: str | bytes, source: str) -> bytes:
    where = f" ({source})" if source else ""
    lit = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if not lit:
        raise SpecError(f"empty {what}{where}: give the text it should contain, or remove the entry")
    if 0 in lit:
        raise SpecError(
            f"{what} {text!r}{where} contains byte 0x00, which no constraint can spell "
            "(label 0 is epsilon in OpenFst): remove it"
        )
    return lit


def _union(parts: list[np.ndarray]) -> np.ndarray:
    parts = [p for p in parts if p.size]
    return np.unique(np.concatenate(parts)).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _phrase_candidates(lit: bytes, index: TokenIndex, *, word_boundary: bool, case_sensitive: bool) -> np.ndarray:
    """Every token whose transition may differ from its class default in some state.

    A token leaves every state like a token of its class made of non-literal bytes (no partial
    match survives it, none starts in it, none completes in it) unless it is
    (a) a substring of the literal (it can extend a partial match),
    (b) ending with a proper literal prefix, with a non-word byte before it inside the token when
        a left boundary is needed (it starts a partial match),
    (c) starting with a proper literal suffix, followed by a non-word byte inside the token when a
        right boundary is needed (it completes a partial match and confirms it), or
    (d) containing the whole literal with, where needed, a non-word byte or the token's edge on
        each side (a match inside the token; at an edge it depends on the state).
    (b) and (c) leave out the whole literal: (d) covers it. The real-vocabulary test checks this
    list against every token of Gemma's vocabulary.
    """
    q = index if case_sensitive else index.lowercased()
    if not case_sensitive:
        lit = lit.lower()
    m = len(lit)
    need_left = word_boundary and bool(IS_WORD_BYTE[lit[0]])
    need_right = word_boundary and bool(IS_WORD_BYTE[lit[-1]])
    parts = [q.ids_substrings_of(lit)]  # (a)
    parts += [q.ids_ending_with(lit[:j], preceded_by_nonword=need_left) for j in range(1, m)]  # (b)
    parts += [q.ids_starting_with(lit[j:], followed_by_nonword=need_right) for j in range(1, m)]  # (c)
    parts.append(q.ids_containing(lit, nonword_before=need_left, nonword_after=need_right))  # (d)
    return _union(parts)


def _closure(adj: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    seen = seeds.copy()
    frontier = seeds.copy()
    while frontier.any():
        nxt = adj[frontier].any(axis=0) & ~seen
        seen |= nxt
        frontier = nxt
    return seen


def _lift(
    kind: Kind,
    text: str | bytes,
    lit: bytes,
    dfa: CharDFA,
    index: TokenIndex,
    cands: np.ndarray,
    word_boundary: bool,
    case_sensitive: bool,
    source: str,
) -> LightAutomaton:
    V = index.width
    nq = dfa.n_states
    allq = np.arange(nq, dtype=np.int32)
    res = dfa.run_tokens(allq, index.padded[cands], index.lengths[cands])  # [Q, C]
    default = dfa.class_defaults()  # [Q, 4]
    cls = index.token_class[cands].astype(np.int64)  # [C]

    # Token-level graph over char states: which states some allowed token moves between.
    adj = np.zeros((nq, nq), dtype=bool)
    adj[np.repeat(allq, res.shape[1]), res.ravel()] = True
    nonempty = np.flatnonzero(index.class_counts > 0)
    adj[np.repeat(allq, len(nonempty)), default[:, nonempty].ravel()] = True
    adj[:, dfa.forbidden] = False
    seed = np.zeros(nq, dtype=bool)
    seed[dfa.start] = True
    keep = _closure(adj, seed) & ~dfa.forbidden
    if kind != "phrase":  # states from which no output can finish are dead ends: disallow them
        keep &= _closure(adj.T, dfa.final & keep)
    _check_satisfiable(kind, text, lit, dfa, index, keep, word_boundary, case_sensitive, source)

    kept = np.flatnonzero(keep)  # ascending; the char start (0) becomes state 0
    n = len(kept)
    cmap = np.full(nq, -1, dtype=np.int32)
    cmap[kept] = np.arange(n, dtype=np.int32)
    default_next = cmap[default[kept]]  # [n, 4]
    lres = cmap[res[kept]]  # [n, C]
    ldef = default_next[:, cls]  # [n, C]
    qs, ks = np.nonzero(lres != ldef)  # row-major: sorted by state, then token
    exc_key = qs.astype(np.int64) * V + cands[ks]
    exc_next = lres[qs, ks].astype(np.int32)

    progress = dfa.progress[kept].astype(np.int32)
    if kind == "avoid":
        adv_ptr, adv_tokens = np.zeros(n + 1, dtype=np.int64), _EMPTY_I32
    else:
        safe_def = np.where(default_next >= 0, default_next, 0)
        if ((default_next >= 0) & (progress[safe_def] > progress[:, None])).any():
            raise AssertionError(f"internal error: a class default raises progress in {kind} {text!r}")
        safe = np.where(lres >= 0, lres, 0)
        aq, ak = np.nonzero((lres >= 0) & (progress[safe] > progress[:, None]))
        adv_tokens = cands[ak].astype(np.int32)
        adv_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(aq, minlength=n), out=adv_ptr[1:])

    return LightAutomaton(
        kind=kind,
        text=text if isinstance(text, str) else text.decode("utf-8", "replace"),
        literal=lit,
        width=V,
        start=int(cmap[dfa.start]),
        final=_ro(dfa.final[kept].copy()),
        progress=_ro(progress),
        default_next=_ro(default_next.astype(np.int32)),
        exc_key=_ro(exc_key),
        exc_next=_ro(exc_next),
        adv_ptr=_ro(adv_ptr),
        adv_tokens=_ro(adv_tokens),
        word_boundary=word_boundary,
        case_sensitive=case_sensitive,
        source=source,
        fingerprint=index.fingerprint,
        token_class=index.token_class,
        char_dfa=dfa,
        char_state=_ro(kept.astype(np.int32)),
    )


def _check_satisfiable(
    kind: Kind,
    text: str | bytes,
    lit: bytes,
    dfa: CharDFA,
    index: TokenIndex,
    keep: np.ndarray,
    word_boundary: bool,
    case_sensitive: bool,
    source: str,
) -> None:
    where = f" ({source})" if source else ""
    if kind == "phrase" and (keep & dfa.final).any():
        return
    if kind != "phrase" and keep[dfa.start]:
        return
    q = index if case_sensitive else index.lowercased()
    folded = lit if case_sensitive else lit.lower()
    missing = [b for b in sorted(set(folded)) if not q.bytes_present[b]]
    if kind == "phrase":
        if missing:
            why = f"no token of this tokenizer contains byte {missing[0]:#04x}"
            fix = "remove or replace that character, or use a tokenizer with byte fallback"
        else:
            why = "no token sequence spells it" + (" at word boundaries" if word_boundary else "")
            fix = "check the text" + (", or pass word_boundary=False" if word_boundary else "")
        raise UnsatisfiableConstraintError(f"phrase {text!r}{where} can never be met: {why}; {fix}", (str(text),))
    if kind == "prefix":
        why = f"no token contains byte {missing[0]:#04x}" if missing else "no token sequence spells it"
        raise UnsatisfiableConstraintError(
            f"prefix {text!r}{where} cannot start any output: {why}; shorten or change the prefix", (str(text),)
        )
    raise UnsatisfiableConstraintError(
        f"avoiding {text!r}{where} leaves no output that can finish with this tokenizer; drop the avoid phrase",
        (str(text),),
    )
