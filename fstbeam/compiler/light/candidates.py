"""The candidate tokens of many phrases at once: `automaton._phrase_candidates` of each phrase.

One phrase asks the token index ~40 questions (its substrings, the tokens ending with each of its
prefixes, starting with each of its suffixes, containing all of it), each a few bisects and numpy
calls: ~0.2 ms a phrase. Here one ``np.searchsorted`` per key order over the index's fixed-width
keys (`TokenIndex.fixed_keys`) tells how far a token can follow each phrase from each byte; the
substrings within that reach are dict lookups, the prefix and suffix questions beyond it are
dropped, those of 4 to 31 bytes left are rows of two ``np.searchsorted`` calls for all phrases
(shorter ones are remembered by the index, longer ones asked the one-phrase way), and the
answers are merged per phrase by one ``np.unique``.
"""
from __future__ import annotations

import numpy as np

from ...fst.text import boundary_needs
from .arrays import ramp
from .token_index import FIXED_KEY, IS_WORD_BYTE, TokenIndex

__all__ = ["phrase_candidates"]


def phrase_candidates(lits: list[bytes], index: TokenIndex, *, word_boundary: bool, case_sensitive: bool) -> list[np.ndarray]:
    """`automaton._phrase_candidates(lit, index, ...)` of every literal: sorted unique int64 ids."""
    q = index if case_sensitive else index.lowercased()
    if not case_sensitive:
        lits = [lit.lower() for lit in lits]
    top, W = q.max_len, FIXED_KEY
    fk, fid, flen, rk, rid, rlen = q.fixed_keys
    # How far a token can follow the literal from each byte (forward keys) and back from each
    # end (reversed keys): a question whose string no key starts with has no answer, and most
    # of a phrase's questions are such (its words' inner substrings, prefixes and suffixes).
    fwd = _reach(fk, [lit[i:i + W] for lit in lits for i in range(len(lit))])
    back = _reach(rk, [lit[::-1][len(lit) - e:len(lit) - e + W] for lit in lits for e in range(1, len(lit) + 1)])
    first, keys, nk = q._first, q._keys, len(q._keys)
    slots: list[int] = []  # (a): sorted slots of the tokens spelling a substring, and their phrase
    slot_owner: list[int] = []
    mid: list[list] = [[], []]  # (b), (c) rows of 4..W-1 bytes: (phrase, key prefix, non-word after), per key order
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    whole: list[tuple[int, bytes, bool, bool]] = []  # (phrase, literal, non-word before, after)
    owned: list[tuple[int, np.ndarray]] = []  # (phrase, ids) answered one question at a time
    at = 0
    for p, lit in enumerate(lits):
        m = len(lit)
        f, b = fwd[at:at + m], back[at:at + m]  # f[i]: from byte i; b[e - 1]: back from end e
        at += m
        need_left, need_right = boundary_needs(lit, word_boundary)
        for i in range(m):  # (a) substrings that some key starts with: one dict lookup each
            # (a key sharing all W bytes may go on: then every length up to the longest token)
            for k in range(i + 1, i + (f[i] if f[i] < W else min(m - i, top)) + 1):
                lo = first.get(lit[i:k])
                while lo is not None:
                    slots.append(lo)
                    slot_owner.append(p)
                    lo = lo + 1 if lo + 1 < nk and keys[lo + 1] == keys[lo] else None  # ids sharing bytes
        for rev, js, need in ((1, range(1, min(m, top + 1)), need_left), (0, range(max(1, m - top), m), need_right)):
            for j in js:  # (b): keys ending with lit[:j]; (c): starting with lit[j:]
                n, reach = (j, b[j - 1]) if rev else (m - j, f[j])
                if reach < min(n, W):
                    continue  # no key starts with it
                s = lit[:j][::-1] if rev else lit[j:]
                if _MID <= n < W:
                    mid[rev].append((p, s, need))
                else:  # short (remembered by the index) or long: the one-phrase query
                    owned.append((p, q._range_query(q._rkeys if rev else q._keys, q._rkey_ids if rev else q._key_ids, s, need)))
        if 4 <= m <= top and 0 not in lit:  # (d) containing the whole literal: all at once below
            whole.append((p, lit, need_left, need_right))
        elif m <= top:
            owned.append((p, q.ids_containing(lit, nonword_before=need_left, nonword_after=need_right)))
    if slots:
        parts.append((np.array(slot_owner, np.int64), q._key_ids[slots].astype(np.int64)))
    if whole:
        owner, ids = q.containing_many([w[1] for w in whole], [w[2] for w in whole], [w[3] for w in whole])
        parts.append((np.array([w[0] for w in whole], np.int64)[owner], ids))
    for rows, fixed in ((mid[0], (fk, fid, flen)), (mid[1], (rk, rid, rlen))):
        if rows:
            parts.append(_prefixed(rows, *fixed))
    if owned:  # many short answers (remembered by the index): their phrases in one repeat
        ids = [a for _, a in owned]
        parts.append((np.repeat(np.array([p for p, _ in owned], np.int64), [len(a) for a in ids]),
                      np.concatenate(ids).astype(np.int64)))
    if not parts:
        return [np.zeros(0, np.int64) for _ in lits]
    owner = np.concatenate([o for o, _ in parts])
    tok = np.concatenate([t for _, t in parts])
    key = np.unique(owner * q.width + tok)
    cut = np.searchsorted(key, np.arange(len(lits) + 1, dtype=np.int64) * q.width).tolist()
    tok = key - np.repeat(np.arange(len(lits), dtype=np.int64), np.diff(cut)) * q.width
    return [tok[cut[p]:cut[p + 1]] for p in range(len(lits))]


# Range queries of strings shorter than this are answered (and remembered) by the index itself:
# "y", "my" recur in every phrase and span thousands of keys.
_MID = 4
_NONWORD = ~IS_WORD_BYTE


def _prefixed(rows: list[tuple[int, bytes, bool]], keys: np.ndarray, ids: np.ndarray, lens: np.ndarray):
    """(phrase, id) of every key starting with the row's string (4 to FIXED_KEY - 1 bytes), with a
    non-word byte right after it where the row asks: two ``np.searchsorted`` calls for all rows."""
    pad = b"\xff" * FIXED_KEY
    lo = np.searchsorted(keys, np.array([s for _, s, _ in rows], dtype=keys.dtype), "left")
    hi = np.searchsorted(keys, np.array([(s + pad)[:FIXED_KEY] for _, s, _ in rows], dtype=keys.dtype), "right")
    n = hi - lo
    at = np.repeat(lo, n) + ramp(n)
    owner = np.repeat(np.array([p for p, _, _ in rows], np.int64), n)
    size = np.repeat(np.array([len(s) for _, s, _ in rows], np.int64), n)
    nw = np.repeat(np.array([w for _, _, w in rows], bool), n)
    after = keys.view(np.uint8).reshape(len(keys), FIXED_KEY)[at, size]  # the byte after the string
    ok = ~nw | ((lens[at] > size) & _NONWORD[after])  # (NUL padding is no byte: the length says)
    return owner[ok], ids[at[ok]]


def _reach(keys: np.ndarray, strings: list[bytes]) -> list[int]:
    """For each string (at most FIXED_KEY bytes, no NUL), the longest prefix of it that some key
    starts with (FIXED_KEY: at least that). The key sharing the longest prefix with a string is
    next to where the string sorts."""
    if not strings:
        return []
    q = np.array(strings, dtype=keys.dtype)
    pos = np.searchsorted(keys, q)
    kv = keys.view(np.uint8).reshape(len(keys), FIXED_KEY)
    qv = q.view(np.uint8).reshape(len(q), FIXED_KEY)
    best = np.zeros(len(q), np.int64)
    for near in (np.minimum(pos, len(keys) - 1), np.maximum(pos - 1, 0)):
        same = kv[near] == qv
        best = np.maximum(best, np.where(same.all(axis=1), FIXED_KEY, same.argmin(axis=1)))
    return np.minimum(best, [len(x) for x in strings]).tolist()
