"""Fast satisfiability checks for per-request constraints against a compiled hard language.

A pynini intersection of a phrase with an 8,000-state word-list automaton costs ~90 ms; a
breadth-first search over (hard state, phrase state) pairs in numpy usually stops after a few
levels, because a phrase spelled from listed words is reached quickly. Exact: a pair is only
expanded when both automata have the byte.
"""
from __future__ import annotations

import numpy as np

from ...fst.text import boundary_needs
from ..char_dfa import CharDFA


def _absorbing_final(dfa: CharDFA) -> np.ndarray:
    """Final states that every byte 1..255 maps back to themselves (a met phrase stays met)."""
    loops = (dfa.next[:, 1:] == np.arange(dfa.num_states)[:, None]).all(axis=1)
    return dfa.final & loops


def reachable_pair(hard: CharDFA, other: CharDFA, *, want_other_final: bool, start_text: bytes = b"") -> bool:
    """Is there a text (starting with ``start_text``) accepted by ``hard`` whose run through
    ``other`` ends final (``want_other_final``) or non-final (for avoid phrases)?"""
    h0, o0 = hard.run(start_text), other.run(start_text)
    if h0 < 0:
        return False
    if o0 < 0:  # ``other`` rejects the start text: never final, so only the avoid case holds
        return not want_other_final
    absorbing = _absorbing_final(other)
    n_o = other.num_states
    # The pairs seen, as sorted keys: a [hard states x other states] bit table is hundreds of MB
    # for a long phrase over a big word list, where the search itself touches a few pairs.
    seen = np.array([h0 * n_o + o0], dtype=np.int64)
    fh, fo = np.array([h0]), np.array([o0])
    bytes_ = np.arange(1, 256)
    while len(fh):
        if want_other_final:
            if absorbing[fo].any():  # the phrase is met and stays met; hard states are co-accessible
                return True
            if (hard.final[fh] & other.final[fo]).any():
                return True
        else:
            keep = ~absorbing[fo]  # once an avoided phrase is matched for good, this path is dead
            fh, fo = fh[keep], fo[keep]
            if (hard.final[fh] & ~other.final[fo]).any():
                return True
        nh = hard.next[fh][:, bytes_]  # [F, 255]
        no = other.next[fo][:, bytes_]
        ok = (nh >= 0) & (no >= 0)
        nh, no = nh[ok].astype(np.int64), no[ok].astype(np.int64)
        key = np.unique(nh * n_o + no)
        key = key[~np.isin(key, seen, assume_unique=True)]
        seen = np.union1d(seen, key)
        fh, fo = key // n_o, key % n_o
    return False


def phrase_possible(hard: CharDFA, text: str, *, word_boundary: bool = True, case_sensitive: bool = True) -> bool:
    """Can ``text`` occur (at word boundaries if asked) in some text accepted by ``hard``?

    ``hard`` must be trimmed (every state reachable and co-accessible), so the question is local:
    run the phrase from every state it may start in, all states at once.
    """
    data = text.encode("utf-8")
    S = hard.num_states
    nxt = hard.next
    need_left, need_right = boundary_needs(data, word_boundary)
    # The current states as an id list, not a [S] mask: after the first bytes only a few states
    # are left, and a mask costs a pass over all S states per byte.
    cur = np.flatnonzero(hard.boundary_states) if need_left else np.arange(S)
    for b in data:
        if case_sensitive or b >= 128 or not chr(b).isalpha():
            t = nxt[cur, b]
            cur = t[t >= 0]  # a DFA: never more states than before (repeats are harmless)
        else:  # both cases: the set may grow, so drop repeats
            t = np.concatenate([nxt[cur, ord(chr(b).lower())], nxt[cur, ord(chr(b).upper())]])
            cur = np.unique(t[t >= 0])
        if not len(cur):
            return False
    if need_right:
        return bool(hard.final[cur].any() or hard.leaves_on_nonword[cur].any())
    return True


def phrases_possible(hard: CharDFA, texts: list[str], *, word_boundary: bool = True, case_sensitive: bool = True) -> list[bool]:
    """`phrase_possible` of each text, walked together: one gather per byte position for all
    of a request's phrases (their state lists side by side, each entry tagged with its phrase),
    where each phrase alone cost a few numpy calls per byte. Phrases whose walk can branch
    (case-insensitive letters) or that start anywhere (no left boundary) go one by one."""
    datas = [t.encode("utf-8") for t in texts]
    needs = [boundary_needs(d, word_boundary) for d in datas]
    together = [p for p, (d, (left, _)) in enumerate(zip(datas, needs)) if case_sensitive and left and d]
    out = [False] * len(texts)
    for p in sorted(set(range(len(texts))) - set(together)):
        out[p] = phrase_possible(hard, texts[p], word_boundary=word_boundary, case_sensitive=case_sensitive)
    if not together:
        return out
    nxt = hard.next
    starts = np.flatnonzero(hard.boundary_states)
    after_first: dict[int, np.ndarray] = {}  # phrases sharing a first byte share its step
    for p in together:
        b = datas[p][0]
        if b not in after_first:
            t = nxt[starts, b]
            after_first[b] = t[t >= 0]
    firsts = [after_first[datas[p][0]] for p in together]
    cur = np.concatenate(firsts).astype(np.int64)
    owner = np.repeat(np.arange(len(together)), [len(f) for f in firsts])
    lens = np.array([len(datas[p]) for p in together], np.int64)
    width = int(lens.max())
    data = np.zeros((len(together), width), np.int64)
    for i, p in enumerate(together):
        data[i, :len(datas[p])] = np.frombuffer(datas[p], np.uint8)
    ends_s, ends_o = [], []  # the states each phrase's walk ends in, tagged
    for pos in range(1, width + 1):
        done = lens[owner] == pos
        ends_s.append(cur[done])
        ends_o.append(owner[done])
        cur, owner = cur[~done], owner[~done]
        if pos == width or not len(cur):
            break
        t = nxt[cur, data[owner, pos]]
        cur, owner = t[t >= 0].astype(np.int64), owner[t >= 0]
    end_s, end_o = np.concatenate(ends_s), np.concatenate(ends_o)
    right = np.array([needs[p][1] for p in together], bool)
    ok = ~right[end_o] | hard.final[end_s] | hard.leaves_on_nonword[end_s]
    met = np.zeros(len(together), bool)
    met[end_o[ok]] = True
    for i, p in enumerate(together):
        out[p] = bool(met[i])
    return out


def avoidable(hard: CharDFA, avoids: list[CharDFA], *, start_text: bytes = b"") -> bool:
    """Is some text (starting with ``start_text``) accepted by ``hard`` without being accepted
    by any of the ``avoids`` ("contains phrase" automata)? Searches tuples of states, so k
    phrases never build their k-fold product automaton up front; it usually stops at the first
    short text that is final and matches nothing."""
    h0 = hard.run(start_text)
    if h0 < 0:
        return False
    starts = [a.run(start_text) for a in avoids]
    absorbing = [_absorbing_final(a) for a in avoids]
    if any(s >= 0 and absorbing[i][s] for i, s in enumerate(starts)):
        return False
    cols = np.array([[h0, *starts]], dtype=np.int64)  # [F, 1 + k]
    seen: set[bytes] = {cols.tobytes()}
    bytes_ = np.arange(1, 256)
    while len(cols):
        ok = hard.final[cols[:, 0]]
        for i, a in enumerate(avoids):
            ok &= ~a.final[cols[:, i + 1]]
        if ok.any():
            return True
        nh = hard.next[cols[:, 0]][:, bytes_]  # [F, 255]
        keep = nh >= 0
        parts = [nh]
        for i, a in enumerate(avoids):
            na = a.next[cols[:, i + 1]][:, bytes_]
            keep &= ~absorbing[i][np.maximum(na, 0)]  # entering a met avoided phrase: dead
            parts.append(na)
        nxt = np.stack([p[keep] for p in parts], axis=1).astype(np.int64)
        nxt = np.unique(nxt, axis=0)
        fresh = [row for row in nxt if row.tobytes() not in seen]
        for row in fresh:
            seen.add(row.tobytes())
        cols = np.array(fresh, dtype=np.int64).reshape(-1, 1 + len(avoids))
    return False


def contains_dfa(text: str, *, word_boundary: bool = True, case_sensitive: bool = True) -> CharDFA:
    """The "contains ``text``" automaton (boundaries as in DESIGN.md) built directly as a DFA in
    time linear in the text (the light compiler's construction), instead of determinizing
    ``Sigma* text Sigma*`` with OpenFst, which is super-linear in the text's length."""
    from .automaton import phrase_char_dfa

    d = phrase_char_dfa(text.encode("utf-8"), word_boundary=word_boundary, case_sensitive=case_sensitive, kind="phrase")
    nxt = np.ascontiguousarray(d.delta[:, d.sym_of_byte.astype(np.int64)]).astype(np.int32)  # [Q, 256]
    nxt[:, 0] = -1  # byte 0 is never text (label 0 is epsilon)
    return CharDFA(nxt, np.asarray(d.final, bool).copy(), int(d.start))


def witness(hard: CharDFA, musts: list[CharDFA], avoids: list[CharDFA], text: bytes) -> bool:
    """Is ``text`` itself a text ``jointly_possible`` looks for (accepted by ``hard``, holding every
    ``musts`` phrase, never entering a met avoided phrase)? Linear in ``len(text)``."""
    absorbing = [_absorbing_final(a) for a in avoids]
    qs = [a.start for a in avoids]
    for b in text:
        for i, a in enumerate(avoids):
            if qs[i] >= 0:
                qs[i] = int(a.next[qs[i], b])
                if qs[i] >= 0 and absorbing[i][qs[i]]:
                    return False
    if any(q >= 0 and avoids[i].final[q] for i, q in enumerate(qs)):
        return False
    ends = [hard.run(text)] + [a.run(text) for a in musts]
    return all(q >= 0 and bool(a.final[q]) for a, q in zip([hard, *musts], ends))


def jointly_possible(hard: CharDFA, musts: list[CharDFA], avoids: list[CharDFA], *, start_text: bytes = b"",
                     max_tuples: int = 500_000, witnesses=()) -> bool | None:
    """Is some text (starting with ``start_text``) accepted by ``hard`` that contains every
    ``musts`` phrase and none of the ``avoids``? ``None`` if the search passes ``max_tuples``
    state tuples without an answer (then the decoder reports it per input instead).
    ``witnesses``: whole texts to try first (say, the phrase itself): one that qualifies answers
    at once, in time linear in its length; the search over state tuples, whose count grows with
    the product of the automata's sizes, runs only when none does."""
    if any(w.startswith(start_text) and witness(hard, musts, avoids, w) for w in witnesses):
        return True
    autos = [hard, *musts, *avoids]
    k_must = len(musts)
    starts = [a.run(start_text) for a in autos]
    if any(s < 0 for s in starts[: 1 + k_must]):
        return False
    absorbing = [_absorbing_final(a) for a in avoids]
    if any(s >= 0 and absorbing[i][s] for i, s in enumerate(starts[1 + k_must:])):
        return False
    cols = np.array([starts], dtype=np.int64)
    seen: set[bytes] = {cols.tobytes()}
    bytes_ = np.arange(1, 256)
    while len(cols):
        ok = hard.final[cols[:, 0]]
        for i, a in enumerate(musts):
            ok &= a.final[cols[:, 1 + i]]
        for i, a in enumerate(avoids):
            ok &= ~a.final[cols[:, 1 + k_must + i]]
        if ok.any():
            return True
        parts = [a.next[cols[:, i]][:, bytes_] for i, a in enumerate(autos)]  # each [F, 255]
        keep = (parts[0] >= 0)
        for i in range(k_must):
            keep &= parts[1 + i] >= 0
        for i in range(len(avoids)):
            na = parts[1 + k_must + i]
            keep &= ~absorbing[i][np.maximum(na, 0)]
        nxt = np.unique(np.stack([p[keep] for p in parts], axis=1).astype(np.int64), axis=0)
        fresh = [row for row in nxt if row.tobytes() not in seen]
        seen.update(row.tobytes() for row in fresh)
        if len(seen) > max_tuples:
            return None
        cols = np.array(fresh, dtype=np.int64).reshape(-1, len(autos))
    return False
