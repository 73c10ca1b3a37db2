"""The stages of one search step, each a function over tensors (no state of its own):

    live_rows -> output guards (apply_guards) -> output layer (:class:`~.shortlist.StepLogits`)
    -> score_rows (masked top-k, EOS) -> plain_candidates (+ dba.candidates)
    -> advance (next automaton states, feasibility) -> select (beam or DBA banks)

then :mod:`.pool` merges the finished hypotheses. :meth:`SearchEngine._expand` runs them in turn.
No stage reads a tensor value back to the host except the guard in :func:`select` (a row with
no feasible candidate): shapes the host knows (the number of model rows, the largest number of
DBA banks) are passed in rather than read from the device.
"""
from __future__ import annotations

import torch

from ...kernels import dispatch as kd
from ..model.shortlist import StepLogits
from . import dba, guards
from .beam import NEG_INF, BeamState, Candidates, Rows, Scored

__all__ = ["live_rows", "score_rows", "apply_guards", "plain_candidates", "with_dba", "only_parents", "advance", "select",
           "top_mask", "keep_places"]


def live_rows(beam: BeamState, R: int) -> Rows:
    """The ``R`` live hypotheses (``R`` = rows of the logits, known on the host)."""
    ridx = torch.nonzero_static(beam.alive.view(-1), size=R).squeeze(1)
    return Rows(ridx, beam.hstate.view(-1)[ridx], beam.flat_lstate()[ridx], beam.cum.view(-1)[ridx])


def last_tokens(beam: BeamState, rows: Rows) -> torch.Tensor:
    """``[R]`` each live row's last token: of its output, or of the prompt before the first
    (-1 where there is none)."""
    n, k = beam.alive.shape
    slot = rows.idx // k
    length = beam.length[slot]
    hist = beam.hist.view(n * k, -1)[rows.idx]
    out_last = hist.gather(1, (length - 1).clamp(min=0)[:, None]).squeeze(1)
    return torch.where(length > 0, out_last, beam.ptail[slot, -1])


def score_rows(out: StepLogits, rows: Rows, ok_eos: torch.Tensor, kk: int, cfg) -> Scored:
    """Masked top-``kk`` (one read of the logits) and the best EOS of each row where ``ok_eos``
    (accepting states, after the output guards of :func:`apply_guards`). ``out``'s columns are
    every token or a shortlist; the tokens returned are ids."""
    logits, mask = out.logits, out.mask  # [R, M], [R, ceil(M/32)]
    R = rows.idx.shape[0]
    top = kd.masked_topk(logits, mask, torch.arange(R, device=logits.device), rows.c, kk, allowed_lse=cfg.renormalize,
                         backend=cfg.kernel_backend)
    lse = top.lse  # over the columns: with a shortlist, cancelled by the renormalizing shift
    shift = torch.zeros_like(lse)
    eos_logits = logits.index_select(1, out.eos_cols)
    eos_lp = eos_logits - lse[:, None]  # [R, E]
    if cfg.renormalize:  # normalizer over the allowed tokens, EOS included where allowed
        eos_allowed_lse = torch.logsumexp(torch.where(ok_eos[:, None], eos_logits, torch.full_like(eos_lp, NEG_INF)), 1)
        total = torch.logaddexp(top.allowed_lse, eos_allowed_lse)
        shift = lse - total
        eos_lp = eos_lp + shift[:, None]
    eos_best, eos_which = eos_lp.max(1)
    tok_scores = top.scores + shift[:, None]
    ranked = end_ranked(eos_best, tok_scores, rows.c) if cfg.end_in_top_k else torch.ones_like(ok_eos)
    neg = torch.full_like(rows.c, NEG_INF)
    fin_raw = torch.where(ok_eos & ranked, rows.c + eos_best, neg)
    fin_loose = torch.where(ok_eos & ~ranked, rows.c + eos_best, neg)
    return Scored(mask, lse, shift, tok_scores, out.to_ids(top.tokens), fin_raw, eos_best, eos_which, ranked, fin_loose)


def end_ranked(eos_best: torch.Tensor, tok_scores: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """bool ``[R]``: the best stop id ranks among the ``kk`` tokens each row expands (its
    log-probability at least the ``kk``-th best allowed text token's; ``end_in_top_k``). Beam search
    that expands each hypothesis's top tokens ends it only there; the pool would otherwise take an
    ending the model ranks far below going on: "... but we all gaze" + a newline at rank 168, once
    a forced phrase has filled the length target, over finishing the sentence. (Such endings go to
    the pool's second tier: returned only after every output that ends by the rule,
    :func:`.pool.pool_eos`.)"""
    return eos_best >= tok_scores[:, -1] - c


def apply_guards(mask: torch.Tensor, ok_eos: torch.Tensor, rows: Rows, beam: BeamState, cfg, ok_plain=None):
    """``no_repeat_ngram`` clears tokens in ``mask`` (in place); returns ``ok_eos`` without the
    rows shorter than ``min_new_tokens`` (:mod:`.guards`: both only remove options); with
    ``ok_plain`` (the plain track's EOS rows) returns both."""
    ok_eos = _apply_guards(mask, ok_eos, rows, beam, cfg)
    if ok_plain is None:
        return ok_eos
    if cfg.min_new_tokens:
        n, k, _ = beam.hist.shape
        ok_plain = ok_plain & guards.eos_allowed(beam.length.repeat_interleave(k)[rows.idx], cfg.min_new_tokens)
    return ok_eos, ok_plain


def _apply_guards(mask: torch.Tensor, ok_eos: torch.Tensor, rows: Rows, beam: BeamState, cfg) -> torch.Tensor:
    if not (cfg.no_repeat_ngram or cfg.min_new_tokens):
        return ok_eos
    n, k, L = beam.hist.shape
    out_len = beam.length.repeat_interleave(k)[rows.idx]  # output tokens so far, per row
    if cfg.no_repeat_ngram:
        hist, seen = beam.hist.view(n * k, L)[rows.idx], out_len
        if cfg.no_repeat_prompt:  # the prompt's n-grams count too: an answer does not echo its question
            tail = beam.ptail[rows.idx // k]
            hist, seen = torch.cat([tail, hist], 1), out_len + tail.shape[1]
        guards.ban_repeated_ngrams(mask, hist, seen, cfg.no_repeat_ngram)
    if cfg.min_new_tokens:
        ok_eos = ok_eos & guards.eos_allowed(out_len, cfg.min_new_tokens)
    return ok_eos


def plain_candidates(scored: Scored, rows: Rows, n: int, k: int, kk: int, prune_threshold) -> Candidates:
    """The top-``kk`` tokens of every beam entry, laid out per slot ``[n, k * kk]``."""
    dev = scored.tokens.device
    cand_s = torch.full((n * k, kk), NEG_INF, device=dev)
    cand_t = torch.full((n * k, kk), -1, dtype=torch.long, device=dev)
    cand_s[rows.idx] = scored.tok_scores
    cand_t[rows.idx] = scored.tokens
    cand_s = cand_s.view(n, k * kk)
    cand_t = cand_t.view(n, k * kk)
    cand_j = torch.arange(k, device=dev).repeat_interleave(kk).expand(n, k * kk)  # parent beam position
    if prune_threshold is not None:  # absolute threshold (Freitag & Al-Onaizan 2017)
        fin_slot = torch.full((n * k,), NEG_INF, device=dev)
        fin_slot[rows.idx] = scored.fin_raw
        best = torch.maximum(cand_s.max(1).values, fin_slot.view(n, k).max(1).values)
        cand_s = torch.where(cand_s < best[:, None] - prune_threshold, torch.full_like(cand_s, NEG_INF), cand_s)
    return Candidates(cand_s, cand_t, cand_j)


def with_dba(plain: Candidates, dba_cands: tuple, has_phrases: torch.Tensor) -> Candidates:
    """Slots with phrases take DBA's candidate set, the others keep the plain one, so an input's
    result does not depend on what else is in the batch."""
    d_s, d_t, d_j = dba_cands
    N = max(d_s.shape[1], plain.s.shape[1])
    pad = lambda x, v: torch.nn.functional.pad(x, (0, N - x.shape[1]), value=v)  # noqa: E731
    hp = has_phrases[:, None]
    return Candidates(torch.where(hp, pad(d_s, NEG_INF), pad(plain.s, NEG_INF)), torch.where(hp, pad(d_t, -1), pad(plain.t, -1)),
                      torch.where(hp, pad(d_j, 0), pad(plain.j, 0)))


def only_parents(cand: Candidates, which: torch.Tensor) -> Candidates:
    """``cand`` with the candidates of parents not in bool ``which [n, K]`` set to -inf."""
    keep = which.gather(1, cand.j)
    return Candidates(torch.where(keep, cand.s, torch.full_like(cand.s, NEG_INF)), cand.t, cand.j)


def advance(cand: Candidates, beam: BeamState, tables, L: int):
    """Next states of every candidate; candidates the automata refuse get score -inf.

    Returns ``(scores, tokens, parent flat beam entry, next hard, next light, fit)``: ``fit`` is
    0 where the candidate cannot reach an accepting state within ``L`` tokens, 1 where it can by
    the lower bound, 2 where it can even when every must-include phrase needs its own tokens
    (:meth:`~.tables.Tables.bounds`; with several phrases the max-of-distances bound alone let
    the beam run out of room, leaving one phrase unmet)."""
    n, k = beam.alive.shape
    cand_s = cand.s
    cand_t = torch.where(torch.isfinite(cand_s), cand.t, torch.zeros_like(cand.t))
    slot = torch.arange(n, device=cand_s.device)[:, None].expand_as(cand.j)
    parent = slot * k + cand.j
    nh = tables.hard_next(beam.hstate.view(-1)[parent], cand_t)
    ns = tables.light_next(beam.flat_lstate()[parent], cand_t)
    valid = torch.isfinite(cand_s) & (nh >= 0) & ((ns >= 0).all(-1) if beam.P else True)
    cand_s = torch.where(valid, cand_s, torch.full_like(cand_s, NEG_INF))
    nh, ns = nh.clamp(min=0), ns.clamp(min=0)
    room = L - 1 - beam.length[:, None]
    lower, need = tables.bounds(nh, ns)
    fit = (lower <= room).to(torch.int8) + (need <= room).to(torch.int8)
    return cand_s, cand_t, parent, nh, ns, fit


def select(score: torch.Tensor, fit: torch.Tensor, k: int, bank=None, num_banks=None, NB: int = 0, demote=None) -> torch.Tensor:
    """bool ``[n, N]``: at most ``k`` candidates per row.

    Only the candidates of the row's best ``fit`` tier (:func:`advance`) take part: by DBA bank
    allocation when ``bank`` is given (then the best remaining ones fill unused slots), else
    simply the best ``k``. ``demote`` (bool ``[n, N]``, with ``bank``): candidates the allocation
    passes over, taken only for places left empty (:mod:`.tracks`, constraint-aware ending). A
    row without any feasible candidate keeps its best ``k`` infeasible ones (best partial output).
    """
    valid = torch.isfinite(score)
    tier = torch.where(valid, fit, torch.zeros_like(fit))
    best_tier = tier.max(1, keepdim=True).values
    vf = valid & (tier == best_tier) & (best_tier > 0)
    neg = torch.full_like(score, NEG_INF)
    if bank is None:
        chosen = top_mask(torch.where(vf, score, neg), k)
    else:
        chosen = dba.bank_choice(score, vf if demote is None else vf & ~demote, bank, num_banks, NB, k)
        # fill slots the allocation could not use with the best remaining feasible candidates
        # (demoted ones last)
        for pool_ in ((vf,) if demote is None else (vf & ~demote, vf)):
            room = (k - chosen.sum(1)).clamp(min=0)
            chosen |= top_mask(torch.where(pool_ & ~chosen, score, neg), room)
    none = ~vf.any(1)
    if bool(none.any()):
        fallback = top_mask(torch.where(valid, score, neg), k)
        chosen = torch.where(none[:, None], fallback, chosen)
    return chosen


def top_mask(score: torch.Tensor, k) -> torch.Tensor:
    """bool mask of the ``k`` (int or ``[n]``) best finite entries per row."""
    n, N = score.shape
    order = torch.argsort(score, dim=1, descending=True, stable=True)
    pos = torch.arange(N, device=score.device).expand(n, N)
    kk = k if isinstance(k, torch.Tensor) else torch.full((n,), int(k), device=score.device)
    take_sorted = (pos < kk[:, None]) & torch.isfinite(score.gather(1, order))
    return torch.zeros_like(take_sorted).scatter(1, order, take_sorted)


def keep_places(sel_parent: torch.Tensor, ok: torch.Tensor, k: int) -> torch.Tensor:
    """``[n, k]`` permutation of a slot's selected entries (new beam position -> entry): each
    parent's best child takes the parent's position, the other entries the free positions in
    order. Beam positions carry no meaning, but model rows follow them, so a child at its
    parent's position leaves its cache row in place (:meth:`~.cache.RowCache.select` copies only
    the rows that move). ``sel_parent``: flat parent index ``[n, k]``; ``ok``: a real entry."""
    n = sel_parent.shape[0]
    dev = sel_parent.device
    pos = torch.arange(k, device=dev)
    pq = torch.where(ok, sel_parent % k, torch.full_like(sel_parent, -1))  # parent's position
    earlier = pos[None, :] < pos[:, None]  # [c, c']: c' ranks before c
    same = (pq[:, :, None] == pq[:, None, :]) & ok[:, None, :] & earlier
    first = ok & ~same.any(2)  # the parent's best child
    claimed = (first[:, :, None] & (pq[:, :, None] == pos)).any(1)  # [n, k] positions taken
    free = torch.argsort(claimed.to(torch.int8), dim=1, stable=True)  # free positions first, in order
    rank = (torch.cumsum((~first).to(torch.long), 1) - 1).clamp(min=0)
    place = torch.where(first, pq, free.gather(1, rank))
    return torch.empty_like(place).scatter_(1, place, pos.expand(n, k))
