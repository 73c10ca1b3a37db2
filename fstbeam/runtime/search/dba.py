"""Dynamic beam allocation (Post & Vilar 2018): splitting one beam of size k over banks.

A *bank* groups the candidates that have made the same constraint progress; here progress is the
number of words of must-include phrases begun, complete or part-way (a table lookup per light
state, summed over the phrases; :mod:`fstbeam.contract.progress`), so an input with phrases of
``w_1 .. w_C`` words has ``1 + sum(w)`` banks: as few as Post & Vilar's token-counted banks, and a
hypothesis part-way into a word (" Ste" of "Steuert") is banked with those that have completed it,
so a word no single token spells keeps its place while it is spelled (a token that starts a begun
word again mid-word begins nothing: ``Tables.bank``). (An AnyOf item with several spellings counts
as one word, complete when met.) Candidates (:func:`candidates`): for every unmet phrase, the
best token that completes a word of it, or, only where no such token is allowed, the best other
token that advances it (also where the two differ in a leading space or punctuation and the model
prefers the other one: the model's spacing wins). With the plain track
(:mod:`.tracks`) the beam holds up to ``2k`` hypotheses and the candidates come from all of them;
the allocation still chooses ``k``.

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

The search step uses two entry points: :func:`candidates` (Post & Vilar's candidate set) and
:func:`bank_choice` (which candidates the allocation keeps).
"""
from __future__ import annotations

import torch

from ...contract.layout import ends_in_word_byte, starts_nonword
from ...contract.progress import phrase_words
from ...kernels import dispatch as kd

__all__ = ["bank_sizes", "allocate", "num_banks", "candidates", "bank_choice"]

NEG_INF = float("-inf")


def num_banks(phrases) -> int:
    """Banks of an input with must-include ``phrases`` (light automata): 1 + their word units."""
    return 1 + sum(phrase_words(a) for a in phrases)


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


def candidates(plain, rows, scored, out, tables, *, k: int, kk: int, prune_threshold, stats, last=None):
    """Post & Vilar's candidate set ``(S, T, J)`` (score, token, parent position; ``[n, N]``):
    the slot's global top-k of ``plain`` (a ``Candidates`` of ``kk`` tokens per parent), each
    row's best, and for each unmet phrase each row's best token completing a word of it (or,
    where none is allowed, its best other advancing token); duplicates removed.
    ``out``: the step's :class:`~.shortlist.StepLogits` (columns = every token or a shortlist);
    ``last``: each row's last token (of the output, or of the prompt; -1 none)."""
    cand_s, cand_t, cand_j = plain.s, plain.t, plain.j
    n, dev = cand_s.shape[0], cand_s.device
    K = cand_s.shape[1] // kk  # beam width: ``k``, or ``2k`` with the plain track (:mod:`.tracks`)
    R = rows.s.shape[0]
    V = tables.V  # token ids, not columns
    g_s, g_i = cand_s.topk(min(k, cand_s.shape[1]), dim=1)  # global top-k of the slot
    g_t, g_j = cand_t.gather(1, g_i), cand_j.gather(1, g_i)
    b_s = cand_s.view(n, K, kk)[:, :, 0]  # each row's best
    b_t = cand_t.view(n, K, kk)[:, :, 0]
    b_j = torch.arange(K, device=dev).expand(n, K)
    sets = tables.advance_sets(rows.s)  # [R, 2P, C] token ids: word-completing tokens, then the other advancing ones
    a_c, a_lp = kd.best_in_sets(out.logits, scored.mask, torch.arange(R, device=dev), out.to_cols(sets), scored.lse)
    a_t = out.to_ids(a_c)
    stats.advance_elements += int(sets.numel())
    a_lp = _prefer_whole_words(a_lp, a_t, tables.token_class, last)
    P = sets.shape[1]
    a_full_s = torch.full((n * K, P), NEG_INF, device=dev)
    a_full_t = torch.full((n * K, P), -1, dtype=torch.long, device=dev)
    a_full_s[rows.idx] = rows.c[:, None] + a_lp + scored.shift[:, None]
    a_full_t[rows.idx] = a_t
    a_s, a_t = a_full_s.view(n, K * P), a_full_t.view(n, K * P)
    a_j = torch.arange(K, device=dev).repeat_interleave(P).expand(n, K * P)
    if prune_threshold is not None:
        best = cand_s.max(1).values
        a_s = torch.where(a_s < best[:, None] - prune_threshold, torch.full_like(a_s, NEG_INF), a_s)
    S = torch.cat([g_s, b_s, a_s], 1)
    T = torch.cat([g_t, b_t, a_t], 1)
    J = torch.cat([g_j, b_j, a_j], 1)
    ok = torch.isfinite(S) & (T >= 0)
    S = torch.where(ok, S, torch.full_like(S, NEG_INF))
    return _drop_duplicates(S, T, J, ok, V), T, J


def _prefer_whole_words(a_lp: torch.Tensor, a_t: torch.Tensor, token_class: torch.Tensor, last=None) -> torch.Tensor:
    """``[R, 2P]`` best-advancing scores (word-completing sets, then the others; tokens ``a_t``):
    a phrase's partial advance (" T" for "Things") is offered only where no allowed token
    completes the word, so DBA never plants a prefix the model may abandon as a fragment; except
    where the two differ in their first byte (a space or punctuation before the word, or not) and
    the model prefers the partial one: then the model's spacing wins. (Preferring the whole word
    regardless wrote " concluido" after "11. ", a double space, and "Schicht" glued to "16.",
    where the model's own spelling of the word needs two tokens.) Not in the middle of a word
    (the text ends in a word byte, ``last``): there a partial advance that starts with a space
    starts the word again ("B" + " Be" for "Beleg"), it is no choice of spacing."""
    P = a_lp.shape[1] // 2
    comp, part = a_lp[:, :P], a_lp[:, P:]
    lead = starts_nonword(token_class[a_t.clamp(min=0)])
    part_wins = torch.isfinite(part) & (lead[:, :P] != lead[:, P:]) & (part > comp)
    if last is not None:
        mid_word = (last >= 0) & ends_in_word_byte(token_class[last.clamp(min=0)])
        part_wins = part_wins & ~(mid_word[:, None] & lead[:, P:])
    done = torch.isfinite(comp) & ~part_wins
    return torch.cat([comp.masked_fill(part_wins, NEG_INF), part.masked_fill(done, NEG_INF)], 1)


def _drop_duplicates(S, T, J, ok, V: int) -> torch.Tensor:
    """``S`` with repeated (parent, token) pairs after their first occurrence set to -inf."""
    n, N = S.shape
    key = torch.where(ok, J * V + T, -1 - torch.arange(N, device=S.device).expand(n, N))
    sk, order = torch.sort(key, dim=1, stable=True)
    dup_sorted = torch.zeros_like(sk, dtype=torch.bool)
    dup_sorted[:, 1:] = sk[:, 1:] == sk[:, :-1]
    dup = torch.zeros_like(dup_sorted).scatter(1, order, dup_sorted)
    return torch.where(dup, torch.full_like(S, NEG_INF), S)


def bank_choice(score: torch.Tensor, usable: torch.Tensor, bank: torch.Tensor, num_banks: torch.Tensor, NB: int,
                k: int) -> torch.Tensor:
    """bool ``[n, N]``: the ``usable`` candidates the allocation keeps, best first within each bank
    (``bank`` in ``[0, NB)``, ``NB`` = the largest ``num_banks``; may keep fewer than ``k``)."""
    n, N = score.shape
    dev = score.device
    neg = torch.full_like(score, NEG_INF)
    b = torch.where(usable, bank, torch.full_like(bank, NB))
    counts = torch.zeros(n, NB + 1, dtype=torch.long, device=dev).scatter_add_(1, b, torch.ones_like(b))[:, :NB]
    alloc = allocate(counts, num_banks, k)  # [n, NB], sum == k per row
    # rank of each candidate within its bank, best score first
    o1 = torch.argsort(torch.where(usable, score, neg), dim=1, descending=True, stable=True)
    b1 = b.gather(1, o1)
    o2 = torch.argsort(b1, dim=1, stable=True)
    order = o1.gather(1, o2)  # candidates sorted by (bank, score desc)
    b_sorted = b.gather(1, order)
    start = torch.cumsum(counts, 1) - counts  # [n, NB]
    start = torch.cat([start, torch.zeros(n, 1, dtype=torch.long, device=dev)], 1)
    alloc_p = torch.cat([alloc, torch.zeros(n, 1, dtype=torch.long, device=dev)], 1)
    pos = torch.arange(N, device=dev).expand(n, N)
    rank = pos - start.gather(1, b_sorted)
    take_sorted = (b_sorted < NB) & (rank < alloc_p.gather(1, b_sorted))
    return torch.zeros_like(usable).scatter(1, order, take_sorted)
