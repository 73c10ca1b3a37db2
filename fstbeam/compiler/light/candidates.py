"""The candidate tokens of many phrases at once: `automaton._phrase_candidates` of each phrase.

One phrase asks the token index ~40 questions (its substrings, the tokens ending with each of its
prefixes, starting with each of its suffixes, containing all of it), each a few bisects and numpy
calls: ~0.2 ms a phrase. Here the substrings are plain dict lookups (no bisect to stop early: a
short phrase has few), the prefix and suffix questions of 4 to 15 bytes of every phrase of a
request are rows of two ``np.searchsorted`` calls over the index's fixed-width keys
(`TokenIndex.fixed_keys`), shorter ones are remembered by the index, and the answers are merged
per phrase by one ``np.unique``. Longer questions (a long phrase) are asked the one-phrase way.
"""
from __future__ import annotations

import numpy as np

from ...fst.text import boundary_needs
from .lift import _ramp
from .token_index import FIXED_KEY, IS_WORD_BYTE, TokenIndex

__all__ = ["phrase_candidates"]


def phrase_candidates(lits: list[bytes], index: TokenIndex, *, word_boundary: bool, case_sensitive: bool) -> list[np.ndarray]:
    """`automaton._phrase_candidates(lit, index, ...)` of every literal: sorted unique int64 ids."""
    q = index if case_sensitive else index.lowercased()
    if not case_sensitive:
        lits = [lit.lower() for lit in lits]
    top = q.max_len
    first, keys, nk = q._first, q._keys, len(q._keys)
    slots: list[int] = []  # (a): sorted slots of the tokens spelling a substring, and their phrase
    slot_owner: list[int] = []
    ranges: list[tuple[int, bool, bytes, bool]] = []  # (phrase, reversed keys?, key prefix, non-word after)
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for p, lit in enumerate(lits):
        m = len(lit)
        need_left, need_right = boundary_needs(lit, word_boundary)
        if m <= FIXED_KEY:  # (a) every substring, one dict lookup each (a long phrase: bisects stop early)
            for i in range(m):
                for k in range(i + 1, min(m, i + top) + 1):
                    lo = first.get(lit[i:k])
                    while lo is not None:
                        slots.append(lo)
                        slot_owner.append(p)
                        lo = lo + 1 if lo + 1 < nk and keys[lo + 1] == keys[lo] else None  # ids sharing bytes
        else:
            parts.append(_owned(p, q.ids_substrings_of(lit)))
        ranges += [(p, True, lit[:j][::-1], need_left) for j in range(1, min(m, top + 1))]  # (b)
        ranges += [(p, False, lit[j:], need_right) for j in range(max(1, m - top), m)]  # (c)
        if m <= top:  # (d) containing the whole literal
            parts.append(_owned(p, q.ids_containing(lit, nonword_before=need_left, nonword_after=need_right)))
    if slots:
        parts.append((np.array(slot_owner, np.int64), q._key_ids[slots].astype(np.int64)))
    fk, fid, flen, rk, rid, rlen = q.fixed_keys
    for rev, sorted_keys, fixed in ((False, (q._keys, q._key_ids), (fk, fid, flen)), (True, (q._rkeys, q._rkey_ids), (rk, rid, rlen))):
        mid = []
        for row in ranges:
            if row[1] != rev:
                continue
            p, _, s, nw = row
            if _MID <= len(s) < FIXED_KEY:
                mid.append(row)
            else:  # short (remembered by the index) or long: the one-phrase query
                parts.append(_owned(p, q._range_query(*sorted_keys, s, nw)))
        if mid:
            parts.append(_prefixed(mid, *fixed))
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


def _owned(p: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.full(len(ids), p, np.int64), np.asarray(ids, np.int64)


def _prefixed(rows: list[tuple[int, bool, bytes, bool]], keys: np.ndarray, ids: np.ndarray, lens: np.ndarray):
    """(phrase, id) of every key starting with the row's string (4 to FIXED_KEY - 1 bytes), with a
    non-word byte right after it where the row asks: two ``np.searchsorted`` calls for all rows."""
    pad = b"\xff" * FIXED_KEY
    lo = np.searchsorted(keys, np.array([s for _, _, s, _ in rows], dtype=keys.dtype), "left")
    hi = np.searchsorted(keys, np.array([(s + pad)[:FIXED_KEY] for _, _, s, _ in rows], dtype=keys.dtype), "right")
    n = hi - lo
    at = np.repeat(lo, n) + _ramp(n)
    owner = np.repeat(np.array([p for p, _, _, _ in rows], np.int64), n)
    size = np.repeat(np.array([len(s) for _, _, s, _ in rows], np.int64), n)
    nw = np.repeat(np.array([w for _, _, _, w in rows], bool), n)
    after = keys.view(np.uint8).reshape(len(keys), FIXED_KEY)[at, size]  # the byte after the string
    ok = ~nw | ((lens[at] > size) & _NONWORD[after])  # (NUL padding is no byte: the length says)
    return owner[ok], ids[at[ok]]
