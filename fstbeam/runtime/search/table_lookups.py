"""Lookups on the pooled tables kept out of `tables.py`: the hard automaton's next state
(with shared interiors, docs/tables.md) and DBA's advance sets with fallback states.

Fallback states (docs/tables.md, "Fallback states"): a must-include AnyOf / ordered automaton
stores, for a state with partial matches, only the transitions that differ from its *fallback*;
`Tables.light_next` looks the fallback's exception up where the state's own misses, and
`Tables.advance_sets` adds the advancing tokens a state takes from its fallback: ranges of the
fallback's lists (`contract.progress.fallback_sets`), skipping the tokens the state overrides.
Such automata disallow no token, so the mask needs only the states' own exceptions.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ...contract.layout import BYTE_KEYS
from ...contract.progress import fallback_sets

__all__ = ["FallbackPool", "advance_sets", "hard_next"]


def advance_sets(tb, s: torch.Tensor) -> torch.Tensor:
    """`Tables.advance_sets`: ``[R, 2P, C]`` token ids (-1 pad), each set's own tokens (a
    range of the pooled lists) followed by those its state takes from its fallback."""
    R, P = s.shape
    unmet = tb.unmet_phrase(s)
    lo, mid, hi = tb.l_adv_ptr[s], tb.l_adv_split[s], tb.l_adv_end[s]
    lo = torch.cat([lo, mid], 1)
    both = torch.cat([unmet, unmet], 1)
    cnt = torch.where(both, torch.cat([mid - lo[:, :P], hi - mid], 1), torch.zeros_like(lo))
    f_lo, f_cnt = tb.l_fallback.range_of(s, both) if tb.l_fallback is not None else (lo, torch.zeros_like(lo))
    C = int((cnt + f_cnt).max()) if cnt.numel() else 0
    if C == 0:
        return torch.full((R, 2 * P, 0), -1, dtype=torch.int64, device=s.device)
    ar = torch.arange(C, device=s.device)
    toks = tb.l_adv_tok[(lo.unsqueeze(-1) + ar).clamp(max=max(tb.l_adv_tok.shape[0] - 1, 0))]
    toks = torch.where(ar < cnt.unsqueeze(-1), toks, torch.full_like(toks, -1))
    if tb.l_fallback is not None:
        toks = tb.l_fallback.fill(toks, s, cnt, f_lo, f_cnt, tb.l_exc_key, tb.V)
    return toks


class FallbackPool:
    """``state`` int64 ``[states]`` (global ids, -1: none), ``ranges`` ``[states, 4]`` into
    ``tokens`` (word-completing range, then the range of the others DBA may offer)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._state: list[np.ndarray] = [np.full(1, -1, np.int64)]  # the identity state
        self._ranges: list[np.ndarray] = [np.zeros((1, 4), np.int64)]
        self._tokens: list[np.ndarray] = []
        self._count = 0

    def add(self, a, off: int, wprog: np.ndarray | None) -> np.ndarray | None:
        """Add automaton ``a`` (states from global id ``off``; ``wprog`` for a must-include one,
        else None); return its shortest-path counts taken from fallbacks (`completing_first`)."""
        n = int(a.final.shape[0])
        fb = np.asarray(a.fallback, np.int64)  # -1 everywhere for an automaton without fallbacks
        self._state.append(np.where(fb >= 0, fb + off, -1))
        if wprog is None:
            self._ranges.append(np.zeros((n, 4), np.int64))
            return None
        tokens, ranges, short = fallback_sets(a, wprog)
        self._tokens.append(tokens)
        self._ranges.append(ranges + self._count)
        self._count += len(tokens)
        return short

    def finish(self) -> bool:
        """Move the tables to the device; False (nothing to do at run time) if no state has a fallback."""
        state = np.concatenate(self._state)
        if not (state >= 0).any():
            return False
        self.state = torch.as_tensor(state, device=self.device)
        self.ranges = torch.as_tensor(np.concatenate(self._ranges), device=self.device)
        self.tokens = torch.as_tensor(np.concatenate([*self._tokens, [-1]]).astype(np.int64), device=self.device)
        return True

    def next_state(self, exc_key: torch.Tensor, exc_next: torch.Tensor, V: int, s: torch.Tensor, t: torch.Tensor,
                   dflt: torch.Tensor) -> torch.Tensor:
        """``dflt`` with the fallback's exception wherever the state has a fallback that has one."""
        fb = self.state[s]
        key = fb * V + t
        j = torch.searchsorted(exc_key, key.reshape(-1)).reshape(key.shape)
        return torch.where((fb >= 0) & (exc_key[j] == key), exc_next[j], dflt)

    def range_of(self, s: torch.Tensor, unmet: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(start, count) ``[R, 2P]`` of the tokens each slot's state takes from its fallback."""
        rng = self.ranges[s]  # [R, P, 4]
        lo = torch.cat([rng[..., 0], rng[..., 2]], 1)
        cnt = torch.where(unmet, torch.cat([rng[..., 1], rng[..., 3]], 1) - lo, torch.zeros_like(lo))
        return lo, cnt

    def fill(self, toks: torch.Tensor, s: torch.Tensor, own: torch.Tensor, lo: torch.Tensor, cnt: torch.Tensor,
             exc_key: torch.Tensor, V: int) -> torch.Tensor:
        """``toks`` ``[R, 2P, C]`` (each set's own tokens first, ``own`` of them) followed by the
        fallback's range, less the tokens the state overrides (its own entry decides those)."""
        j = torch.arange(toks.shape[-1], device=toks.device) - own.unsqueeze(-1)
        on = (j >= 0) & (j < cnt.unsqueeze(-1))
        ft = self.tokens[(lo.unsqueeze(-1) + j.clamp(min=0)).clamp(max=self.tokens.shape[0] - 1)]
        key = torch.cat([s, s], 1).unsqueeze(-1) * V + ft
        k = torch.searchsorted(exc_key, key.reshape(-1)).reshape(key.shape)
        return torch.where(on & (exc_key[k] != key), ft, toks)


def hard_next(T: Any, h: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Next hard state for text tokens ``t`` in states ``h`` of the pool ``T`` (a `Tables`);
    -1 = disallowed. Two ``searchsorted``: the (state, first byte) link, then the token in the
    link's block; with shared interiors a third, the token in the link's exit block."""
    fb = T.h_first_byte[t.clamp(min=0)]
    key = h * BYTE_KEYS + fb
    i = torch.searchsorted(T.h_sb_key, key)
    hit = (T.h_sb_key[i] == key) & (fb >= 0)
    key2 = T.h_sb_id[i] * T.V + t
    j = torch.searchsorted(T.h_blk_key, key2)
    hit2 = T.h_blk_key[j] == key2
    none = torch.full_like(h, -1)
    if not T.h_shared:
        return torch.where(T.h_trivial[h], h, torch.where(hit & hit2, T.h_blk_next[j], none))
    # A link into a shared interior: its exit block (absolute next states) first, else the
    # interior block's relative next plus the link's offset (docs/tables.md, "Shared interiors").
    ex = T.h_sb_exit[i]
    key3 = torch.where(ex >= 0, ex * T.V + t, none)  # -1 matches no key
    k = torch.searchsorted(T.h_blk_key, key3)
    hit3 = T.h_blk_key[k] == key3
    nxt = torch.where(hit2, T.h_blk_next[j] + T.h_sb_off[i], none)
    nxt = torch.where(hit3, T.h_blk_next[k], nxt)
    return torch.where(T.h_trivial[h], h, torch.where(hit, nxt, none))
