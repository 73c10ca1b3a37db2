"""Output guards of the search that are not constraints of the language: a minimum output length
and no repeated token n-grams (the search calls these two functions once per step).

Both only remove options (EOS before ``min_new_tokens`` tokens; a token that would repeat an
n-gram), and log-probabilities stay <= 0, so the optimal-stopping bounds of :mod:`.scoring` stay
valid: a live hypothesis still cannot finish above ``c + r * min(l, L)`` (reward ``r >= 0``), and
needing more tokens before EOS only lowers what ``r < 0`` allows.
"""
from __future__ import annotations

import torch

from ...kernels.bitmask import or_bits_torch

__all__ = ["eos_allowed", "ban_repeated_ngrams"]


def eos_allowed(length: torch.Tensor, min_new_tokens: int) -> torch.Tensor:
    """bool per row: an output of ``length`` text tokens may end here."""
    return length >= int(min_new_tokens)


def ban_repeated_ngrams(mask: torch.Tensor, hist: torch.Tensor, length: torch.Tensor, n: int) -> None:
    """Clear in ``mask [R, W]`` every token that would complete a token ``n``-gram already in the
    row's output (``hist [R, L]``, its first ``length[r]`` tokens; -1 = no token, never banned),
    as Hugging Face's ``no_repeat_ngram_size``: the beam cannot loop ("I like the beach. I like
    the beach.")."""
    R, L = hist.shape
    g = int(n) - 1
    if n < 1 or R == 0 or L <= g:
        return
    if g == 0:
        rows, pos = ((torch.arange(L, device=hist.device)[None, :] < length[:, None]) & (hist >= 0)).nonzero(as_tuple=True)
        or_bits_torch(mask, rows, hist[rows, pos], set_=False)
        return
    win = hist.unfold(1, g, 1)[:, : L - g]  # [R, L - g, g]: the g tokens from position j
    idx = (length[:, None] - g + torch.arange(g, device=hist.device)).clamp(min=0)
    suffix = hist.gather(1, idx)  # the row's last g tokens
    j = torch.arange(L - g, device=hist.device)
    match = (win == suffix[:, None, :]).all(-1) & (j[None, :] + g < length[:, None]) & (length[:, None] >= g)
    rows, js = match.nonzero(as_tuple=True)
    banned = hist[rows, js + g]
    real = banned >= 0
    if bool(real.any()):
        or_bits_torch(mask, rows[real], banned[real], set_=False)
