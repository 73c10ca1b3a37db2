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

from types import SimpleNamespace

import numpy as np

from ...contract.light import Kind, LightAutomaton, distances_from_edges, light_distances
from ...contract.vocab import Vocab
from ...errors import SpecError, UnsatisfiableConstraintError
from ...fst.text import boundary_needs
from .arrays import read_only
from .lift import prefix_exceptions, reach, token_exceptions
from .phrase_dfa import PhraseDFA, phrase_char_dfa, prefix_char_dfa
from .token_index import TokenIndex

__all__ = [
    "PhraseDFA",
    "LightAutomaton",
    "compile_phrase",
    "compile_avoid",
    "compile_prefix",
    "phrase_char_dfa",
    "prefix_char_dfa",
]

_EMPTY_I32 = np.zeros(0, dtype=np.int32)


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
    lit = literal("phrase", text, source)
    index = as_index(index)
    dfa = phrase_char_dfa(lit, word_boundary=word_boundary, case_sensitive=case_sensitive, kind="phrase")
    cands = _phrase_candidates(lit, index, word_boundary=word_boundary, case_sensitive=case_sensitive)
    return lift_light("phrase", text, lit, dfa, index, cands, word_boundary, case_sensitive, source)


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
    lit = literal("avoid phrase", text, source)
    index = as_index(index)
    dfa = phrase_char_dfa(lit, word_boundary=word_boundary, case_sensitive=case_sensitive, kind="avoid")
    cands = _phrase_candidates(lit, index, word_boundary=word_boundary, case_sensitive=case_sensitive)
    return lift_light("avoid", text, lit, dfa, index, cands, word_boundary, case_sensitive, source)


def compile_prefix(text: str | bytes, index: TokenIndex | Vocab, *, source: str = "") -> LightAutomaton:
    """Required prefix with token healing: the output must start with ``text``; the last token may
    run past its end (``"Hel"`` allows ``"Hello"``). States = bytes consumed, then one free
    absorbing final state. Tokens that leave the prefix, or lead where it cannot be finished, are
    disallowed."""
    lit = literal("prefix", text, source)
    index = as_index(index)
    dfa = prefix_char_dfa(lit)
    m = len(lit)
    parts = [index.ids_substrings_of(lit)]
    parts += [index.ranges_starting_with(lit[j:], False) for j in range(max(0, m - index.max_len), m)]
    cands = _union(parts)
    exc = prefix_exceptions(lit, index.padded[cands], index.lengths[cands])
    return lift_light("prefix", text, lit, dfa, index, cands, True, True, source, exceptions=exc)


def as_index(index: TokenIndex | Vocab) -> TokenIndex:
    if isinstance(index, Vocab):
        return TokenIndex.for_vocab(index)
    if index.folded:
        raise ValueError("pass the tokenizer's TokenIndex, not its lowercased() twin (use case_sensitive=False)")
    return index


def literal(what: str, text: str | bytes, source: str) -> bytes:
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
    need_left, need_right = boundary_needs(lit, word_boundary)
    top = q.max_len  # no token is longer: (b) and (c) need only the literal's first / last `top` bytes
    parts = [q.ids_substrings_of(lit)]  # (a)
    parts += [q.ranges_ending_with(lit[:j], need_left) for j in range(1, min(m, top + 1))]  # (b)
    parts += [q.ranges_starting_with(lit[j:], need_right) for j in range(max(1, m - top), m)]  # (c)
    if m <= top:  # (d): a literal longer than every token is inside none
        parts.append(q.ids_containing(lit, nonword_before=need_left, nonword_after=need_right))
    return _union(parts)


def lift_light(
    kind: Kind,
    text: str | bytes,
    lit: bytes,
    dfa: PhraseDFA,
    index: TokenIndex,
    cands: np.ndarray,
    word_boundary: bool,
    case_sensitive: bool,
    source: str,
    exceptions: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> LightAutomaton:
    V = index.width
    nq = dfa.n_states
    default = dfa.class_defaults()  # [Q, 4]
    cls = index.token_class[cands].astype(np.int64)  # [C]
    # (state, candidate, next) wherever a candidate's next state differs from its class default,
    # without a [Q, C] matrix (light_lift: near-linear in the phrase length).
    if exceptions is None:
        exceptions = token_exceptions(dfa.delta, dfa.sym_of_byte, index.padded[cands], index.lengths[cands], cls, default)
    eq, ek, en = exceptions

    # Token-level graph over char states: which states some allowed token moves between.
    nonempty = index.nonempty_classes
    src = np.concatenate([eq, np.repeat(np.arange(nq, dtype=np.int64), len(nonempty))])
    dst = np.concatenate([en.astype(np.int64), default[:, nonempty].ravel().astype(np.int64)])
    ok = ~dfa.forbidden[dst]
    src, dst = src[ok], dst[ok]
    seed = np.zeros(nq, dtype=bool)
    seed[dfa.start] = True
    keep = reach(nq, src, dst, seed) & ~dfa.forbidden
    if kind != "phrase":  # states from which no output can finish are dead ends: disallow them
        keep &= reach(nq, dst, src, dfa.final & keep)
    _check_satisfiable(kind, text, lit, dfa, index, keep, word_boundary, case_sensitive, source)

    kept = np.flatnonzero(keep)  # ascending; the char start (0) becomes state 0
    n = len(kept)
    cmap = np.full(nq, -1, dtype=np.int32)
    cmap[kept] = np.arange(n, dtype=np.int32)
    if n == nq:  # every state kept (most phrases): the numbering and the exceptions stay as they are
        default_next, qs, ks, lnext = default, eq, ek, en
    else:
        default_next = cmap[default[kept]]  # [n, 4]
        lq, lnext = cmap[eq], cmap[en]
        sel = (lq >= 0) & (lnext != cmap[default[eq, cls[ek]]])  # still an exception after dropping states
        qs, ks, lnext = lq[sel].astype(np.int64), ek[sel], lnext[sel]  # sorted by state, then token
    exc_key = qs * V + cands[ks]
    exc_next = lnext.astype(np.int32)

    if kind == "phrase" and n == nq:
        # Every state kept and nothing disallowed: the token graph searched above (exceptions and
        # non-empty class defaults) is the automaton's own, so its distances come from those edges.
        dist = distances_from_edges(n, src, dst, dfa.final)
    else:  # from the tables just built, with the index's per-class counts
        dist = light_distances(
            SimpleNamespace(final=dfa.final[kept], width=V, default_next=default_next, exc_key=exc_key,
                            exc_next=exc_next, text=text),
            index.class_nonempty,
        )
    progress = dfa.progress[kept].astype(np.int32)
    if kind == "avoid":
        adv_ptr, adv_tokens = np.zeros(n + 1, dtype=np.int64), _EMPTY_I32
    else:
        safe_def = np.where(default_next >= 0, default_next, 0)
        if ((default_next >= 0) & (progress[safe_def] > progress[:, None])).any():
            raise AssertionError(f"internal error: a class default raises progress in {kind} {text!r}")
        adv = (lnext >= 0) & (progress[np.maximum(lnext, 0)] > progress[qs])  # only exceptions can advance
        adv_tokens = cands[ks[adv]].astype(np.int32)
        adv_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(qs[adv], minlength=n), out=adv_ptr[1:])

    return LightAutomaton(
        kind=kind,
        text=text if isinstance(text, str) else text.decode("utf-8", "replace"),
        literal=lit,
        width=V,
        start=int(cmap[dfa.start]),
        final=read_only(dfa.final[kept].copy()),
        progress=read_only(progress),
        default_next=read_only(default_next.astype(np.int32)),
        exc_key=read_only(exc_key),
        exc_next=read_only(exc_next),
        adv_ptr=read_only(adv_ptr),
        adv_tokens=read_only(adv_tokens),
        word_boundary=word_boundary,
        case_sensitive=case_sensitive,
        source=source,
        fingerprint=index.fingerprint,
        token_class=index.token_class,
        char_dfa=dfa,
        char_state=read_only(kept.astype(np.int32)),
        dist=dist,
    )


def _check_satisfiable(
    kind: Kind,
    text: str | bytes,
    lit: bytes,
    dfa: PhraseDFA,
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
