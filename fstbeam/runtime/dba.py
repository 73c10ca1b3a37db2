"""Dynamic beam allocation (Post & Vilar 2018): splitting one beam of size k over banks.

A *bank* groups the candidates that have made the same constraint progress; here progress is the
number of words of must-include phrases completed (a table lookup per light state, summed over the
phrases; :mod:`fstbeam.compiler.progress`), so an input with phrases of ``w_1 .. w_C`` words has
``1 + sum(w)`` banks: as few as Post & Vilar's token-counted banks, and a hypothesis part-way into
a word ("T" of "Things") is banked with those that have not started it. Candidates (see
``SearchEngine._dba_candidates``): for every unmet phrase, the best token that completes a word of
it, or, only where no such token is allowed, the best other token that advances it.

Allocation: every bank gets ``k // num_banks`` slots and the remainder goes to the top bank; then,
from the top bank down, a bank with more slots than candidates hands the surplus to the bank below
it, and bank 0 hands its surplus to the top bank (Sockeye's ``get_bank_sizes``; this order matters
when there are more banks than slots). The invariant ``sum(allocation) == k`` always holds; slots a
bank cannot use after the pass are filled afterwards with the best remaining candidates, so the
beam holds ``min(k, candidates)`` hypotheses.

:func:`bank_sizes` is the plain-Python statement of the rule (the test oracle);
:func:`allocate` computes the same for many inputs at once with tensor ops. The right-to-left pass
is a max-plus recurrence ``out_b = max(0, a_b - c_b + out_{b+1})`` (the surplus bank ``b`` hands
down), whose closed form is ``out_b = P_b - min_{j >= b} P_j`` with ``P_b = sum_{m >= b} (a_m - c_m)``
and ``P_{num_banks} = 0``: a reversed cumulative sum and a reversed cumulative minimum, so the cost
is a few passes over ``[inputs, banks]`` whatever the number of phrases.
"""
from __future__ import annotations

import torch

__all__ = ["bank_sizes", "allocate", "num_banks"]


def num_banks(phrases) -> int:
    """Banks of an input with must-include ``phrases`` (light automata): 1 + their words."""
    from ..compiler.progress import phrase_words

    return 1 + sum(phrase_words(a.literal) for a in phrases)


def bank_sizes(num_constraints: int, beam_size: int, counts: list[int]) -> list[int]:
    """Allocation of ``beam_size`` slots to banks ``0..num_constraints`` given each bank's
    candidate count (the reference rule; see the module docstring)."""
    num_banks = num_constraints + 1
    base = beam_size // num_banks
    assigned = [base] * num_banks
    assigned[-1] += beam_size - base * num_banks
    for i in reversed(range(num_banks)):
        surplus = assigned[i] - counts[i]
        if surplus > 0:
            assigned[i] -= surplus
            assigned[(i - 1) % num_banks] += surplus
    return assigned


def allocate(counts: torch.Tensor, num_banks: torch.Tensor, beam_size: int) -> torch.Tensor:
    """``[B, NB]`` allocation for ``counts [B, NB]`` (candidates per bank; banks at or past
    ``num_banks[b]`` must have count 0). Equals :func:`bank_sizes` row by row."""
    B, NB = counts.shape
    dev = counts.device
    nb = num_banks.to(torch.int64).clamp(min=1)
    base = beam_size // nb  # [B]
    rem = beam_size - base * nb
    bank = torch.arange(NB, device=dev).expand(B, NB)
    a = torch.where(bank < nb[:, None], base[:, None], torch.zeros_like(bank))
    a = a + torch.where(bank == (nb - 1)[:, None], rem[:, None], torch.zeros_like(bank))
    d = a - counts.to(torch.int64)
    # P_b = sum_{m >= b} d_m (with P_NB = 0 appended), out_b = P_b - min_{j >= b} P_j.
    P = torch.flip(torch.cumsum(torch.flip(d, [1]), 1), [1])
    P = torch.cat([P, torch.zeros(B, 1, dtype=P.dtype, device=dev)], 1)  # [B, NB+1]
    suffix_min = torch.flip(torch.cummin(torch.flip(P, [1]), 1).values, [1])
    out = P - suffix_min  # [B, NB+1], out[:, NB] = 0
    final = a + out[:, 1:] - out[:, :-1]
    # Bank 0's surplus wraps around to the top bank (it was passed over already).
    final = final + torch.where(bank == (nb - 1)[:, None], out[:, :1], torch.zeros_like(bank))
    return final
