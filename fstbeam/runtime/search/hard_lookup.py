"""The hard automaton's next-state lookup on the pooled tables (docs/tables.md)."""
from __future__ import annotations

from typing import Any

import torch

from ...contract.layout import BYTE_KEYS


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
