"""DBA progress of a must-include light automaton counted in *words* (not bytes).

A light phrase automaton records ``progress``: the bytes of the phrase matched so far. Counting
DBA banks in bytes gave one bank per byte (7 banks for "Things" against a beam of 5), so a
hypothesis one byte further into a word ("T") beat any hypothesis with less progress, whatever its
score, and fragments such as "T Things" survived. Post & Vilar's banks count constraint tokens,
a handful per phrase; the tokenizer-independent analogue here is the phrase's words:

- a word of the phrase ends at byte ``e`` (1-based) when byte ``e - 1`` is a word byte and byte
  ``e`` is not (or ``e`` is the phrase's length); a phrase without word bytes is one word;
- a word is complete once its last byte is matched (the last word: when the whole phrase is
  matched, met or waiting for a boundary, ``progress == len``). Counting an inner word only once
  the byte after it was matched too (its right boundary certain) left the first word of
  "future is somewhat" without any token that completes it (no token spells "future "), so DBA
  offered only its best partial advance (" fut") in bank 0, where it lost to free text and the
  phrase was never started; should the next token break the match ("futures"), the hypothesis
  simply drops back a bank.

So "Things" has 1 word and "a price tag" has 3; a state's word progress is a function of its byte
progress only. A state's DBA *bank* share counts the words it has begun, the one it is part-way
into as well (:func:`bank_progress`): a word that no single token spells (German "Steuert" =
" Ste" + "uert") can only be started by a partial advance, and banked with the hypotheses that had
not started it, " Ste" lost its place to free text at once, so the term came last or after the
sentence (WMT25 en-de, "Controls the verification ...": " Die Verifizierung Steuert", score -23.6,
where " Die Verifizierung des Hostnamen-... Steuert." scores +7.7). Banked with the word begun, it
keeps a place until the next token completes the word or breaks it (then it drops back a bank;
a token that starts the word again mid-word begins nothing: ``Tables.bank``). The bank count
stays ``1 + words``: a bank per byte, or per half word, gives more banks than a beam has places,
and the allocation then favours the most progress whatever the score (tried: CommonGen outputs
that list their concepts, "Finger snap sit smile, ...").

AnyOf / ordered automata (``items`` set, ``fstbeam.compiler.light.alternatives``) count progress
as the bytes of the met items (each at its longest alternative) plus the current item's partial
match: an item with one spelling counts its words as above, offset by the items before
it; an item with several spellings (whose words differ) counts as one unit, complete when met.
If the items do not add up to ``max_progress`` (a capital that changes a letter's byte length),
the automaton counts as one unit, complete when met.

Also here (numpy only, shared with the runtime tables): each state's advancing tokens ordered
with those that complete a word first (DBA prefers them to a partial advance).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from .layout import NO_TEXT_CLASS
from .light import _exception_lookup

if TYPE_CHECKING:
    from .light import LightAutomaton

__all__ = ["IS_WORD_BYTE", "bank_progress", "word_ends", "phrase_word_ends", "phrase_words", "word_progress", "completing_first",
           "fallback_sets"]

#: ``IS_WORD_BYTE[b]``: ASCII letter or digit, ``'``, ``-``, or any byte >= 0x80 (as ``fstbeam.fst.text``, which
#: the contract may not import; a test checks that the two agree).
IS_WORD_BYTE = np.zeros(256, dtype=bool)
for _lo, _hi in ((0x27, 0x27), (0x2D, 0x2D), (0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), (0x80, 0xFF)):
    IS_WORD_BYTE[_lo : _hi + 1] = True
IS_WORD_BYTE.setflags(write=False)


def phrase_word_ends(literal: bytes) -> list[int]:
    """1-based end positions of the phrase's words (``[len]`` when it has no word byte)."""
    m = len(literal)
    ends = [e for e in range(1, m + 1) if IS_WORD_BYTE[literal[e - 1]] and (e == m or not IS_WORD_BYTE[literal[e]])]
    return ends or [m]


def word_ends(a: LightAutomaton) -> list[int]:
    """Byte progress at which each word unit of automaton ``a`` is complete."""
    items = getattr(a, "items", "") or ""
    if not items:
        return phrase_word_ends(a.literal)
    out, base = [], 0
    for alts in json.loads(items)["items"]:
        lits = [t.encode("utf-8") for t in alts]
        weight = max(len(lit) for lit in lits)
        inner = phrase_word_ends(lits[0])[:-1] if len(lits) == 1 else []
        out += [base + e for e in inner] + [base + weight]
        base += weight
    top = int(getattr(a, "max_progress", 0) or 0)
    return out if base == top else [top]


def phrase_words(a: LightAutomaton) -> int:
    """Banks a must-include automaton adds to DBA: its word units."""
    return len(word_ends(a))


def word_progress(a: LightAutomaton) -> np.ndarray:
    """int64 ``[n]``: word units complete in each state of ``a`` (see the module docstring)."""
    p = np.asarray(a.progress, np.int64)
    out = np.zeros(p.shape, np.int64)
    for e in word_ends(a):
        out += p >= e
    return out


def bank_progress(a: LightAutomaton) -> np.ndarray:
    """int64 ``[n]``: each state's DBA bank share: the word units of ``a`` it has begun (matched
    a byte of), complete or not (see the module docstring)."""
    p = np.asarray(a.progress, np.int64)
    ends = word_ends(a)
    out = np.zeros(p.shape, np.int64)
    for start in [0] + ends[:-1]:
        out += p > start
    return out


def _ranked(a: LightAutomaton, wprog: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each state's own advancing tokens: (state, token, completes a word, on a shortest path)."""
    ptr = np.asarray(a.adv_ptr, np.int64)
    toks = np.asarray(a.adv_tokens, np.int64)
    state = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    nxt = _next_states(a, state, toks)
    done = wprog[nxt] > wprog[state]
    dist = np.asarray(a.dist, np.int64)
    return state, toks, done, ~done & (dist[nxt] + 1 == dist[state])


def completing_first(a: LightAutomaton, wprog: np.ndarray,
                     more_short: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``a``'s advancing tokens reordered per state: those that complete a word (raise ``wprog``)
    first, then those on a shortest path to the phrase's end (``a.dist`` drops by one), then the
    rest; and per state how many complete a word and how many of the others DBA may offer (the
    shortest-path ones, or all others where none is on a shortest path). Offering the fewest-token
    spelling (" Psych" of "Psychotics", not " P") keeps a partial advance close to the canonical
    tokenization of Post & Vilar's constraints and able to finish before ``max_new_tokens``.
    ``more_short``: per state, shortest-path tokens it has from its fallback (`fallback_sets`)."""
    n = len(a.final)
    if np.asarray(a.adv_tokens).size == 0:
        return np.zeros(0, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    state, toks, done, short = _ranked(a, wprog)
    rank = np.where(done, 0, np.where(short, 1, 2))
    order = np.lexsort((rank, state))  # by state, then rank, stable within
    ncomp = np.bincount(state[done], minlength=n).astype(np.int64)
    nshort = np.bincount(state[short], minlength=n).astype(np.int64)
    any_short = nshort + (0 if more_short is None else more_short) > 0
    nother = np.where(any_short, nshort, np.diff(np.asarray(a.adv_ptr, np.int64)) - ncomp)
    return toks[order], ncomp, nother


def fallback_sets(a: LightAutomaton, wprog: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The advancing tokens states take from their fallback (docs/tables.md, "Fallback
    states"), as ranges into per-fallback lists instead of per-state copies.

    Returns ``(tokens, ranges, short)``: each fallback's advancing tokens twice, by progress
    reached (descending) and by (distance, progress descending); ``ranges`` ``[n, 4]``: per state
    the range of those that complete a word (as `completing_first`) and the range of the others
    DBA may offer (shortest-path ones where the state has any, its own or its fallback's; else
    all others); ``short``: how many shortest-path tokens each state has from its fallback. The
    ranges may hold tokens the state overrides (its own exceptions): a reader skips those, whose
    entry in the state's own list decides (``short`` leaves them out)."""
    n = len(a.final)
    fb = getattr(a, "fallback", None)
    fb = np.full(n, -1, np.int64) if fb is None else np.asarray(fb, np.int64)
    ranges, short = np.zeros((n, 4), np.int64), np.zeros(n, np.int64)
    if not (fb >= 0).any():
        return np.zeros(0, np.int64), ranges, short
    prog, dist, V = np.asarray(a.progress, np.int64), np.asarray(a.dist, np.int64), int(a.width)
    ends = np.array(sorted(set(word_ends(a))), np.int64)
    top = int(max(prog.max(), ends[-1])) + 2  # progress keys: top - 1 - progress, ascending
    p_done = ends[np.searchsorted(ends, prog, side="right").clip(max=len(ends) - 1)]
    p_done = np.where(prog < ends[-1], p_done, top - 1)  # reached from here on, a word is complete
    state, _, _, own_short = _ranked(a, wprog)
    own_short = np.bincount(state[own_short], minlength=n)
    ptr, adv = np.asarray(a.adv_ptr, np.int64), np.asarray(a.adv_tokens, np.int64)
    ek = np.asarray(a.exc_key, np.int64)
    tokens: list[np.ndarray] = []
    off = 0
    for f in np.unique(fb[fb >= 0]).tolist():
        qs = np.flatnonzero(fb == f)
        toks = adv[ptr[f]:ptr[f + 1]]
        reach = _next_states(a, np.full(len(toks), f), toks)
        pk, dk = top - 1 - prog[reach], np.minimum(dist[reach], n + 1)
        by_prog, by_dist = np.lexsort((toks, pk)), np.lexsort((toks, pk, dk))
        tokens += [toks[by_prog], toks[by_dist]]
        kp, kd = pk[by_prog], dk[by_dist] * top + pk[by_dist]
        c1 = np.searchsorted(kp, top - p_done[qs], side="left")  # reach >= p_done: completes a word
        c2 = np.maximum(np.searchsorted(kp, top - 1 - prog[qs], side="left"), c1)  # reach > progress
        d = np.where((dist[qs] > 0) & (dist[qs] <= n), dist[qs] - 1, n + 2)  # a shortest path's next step
        lo = np.searchsorted(kd, d * top + top - p_done[qs], side="left")
        hi = np.maximum(np.searchsorted(kd, d * top + top - 1 - prog[qs], side="left"), lo)
        # Tokens a state overrides are not its fallback's shortest-path tokens.
        mine = ek[np.isin(ek // V, qs)]
        order = np.argsort(toks[by_dist], kind="stable")
        i = np.searchsorted(toks[by_dist][order], mine % V).clip(max=max(len(toks) - 1, 0))
        hit = toks[by_dist][order][i] == mine % V if len(toks) else np.zeros(len(mine), bool)
        pos, row = order[i[hit]], np.searchsorted(qs, mine[hit] // V)
        inside = (pos >= lo[row]) & (pos < hi[row])
        short[qs] = hi - lo - np.bincount(row[inside], minlength=len(qs))
        any_short = own_short[qs] + short[qs] > 0
        ranges[qs, 0], ranges[qs, 1] = off, off + c1
        ranges[qs, 2] = np.where(any_short, off + len(toks) + lo, off + c1)
        ranges[qs, 3] = np.where(any_short, off + len(toks) + hi, off + c2)
        off += 2 * len(toks)
    return np.concatenate(tokens), ranges, short


def _next_states(a: LightAutomaton, state: np.ndarray, toks: np.ndarray) -> np.ndarray:
    """Vectorized ``a.next_state`` for text tokens that advance (never disallowed); ``a`` may be
    any object with the table fields (the runtime's tests build plain ones)."""
    state, toks = np.asarray(state, np.int64), np.asarray(toks, np.int64)
    out: np.ndarray = np.asarray(a.default_next)[state, np.asarray(a.token_class)[toks].clip(max=NO_TEXT_CLASS - 1)]
    out = out.astype(np.int64)
    fb = getattr(a, "fallback", None)
    if fb is not None:  # the fallback's entry first: the state's own wins
        _exception_lookup(a.exc_key, a.exc_next, np.asarray(fb, np.int64)[state], toks, int(a.width), out)
    _exception_lookup(a.exc_key, a.exc_next, state, toks, int(a.width), out)
    return out
