"""Finished hypotheses: each slot's n-best pool, its best partial output, the stopping test and
the results handed back (the ``pool`` stage of the search step; see :mod:`.search`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from .beam import NEG_INF, BeamState

__all__ = ["RawHypothesis", "RawResult", "merge_finished", "record_partial", "done_slots", "host_rows", "raw_result"]


@dataclass
class RawHypothesis:
    tokens: list[int]
    eos: int | None
    score: float
    logprob: float
    satisfied: bool
    phrases_met: tuple[bool, ...]
    finish_reason: str  # "eos" | "length" | "incomplete"


@dataclass
class RawResult:
    index: int
    hypotheses: list[RawHypothesis]
    steps: int
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


def merge_finished(beam: BeamState, ok, raw, length, eos_tok, hist, met, scoring) -> None:
    """Candidates ``ok [n, k]`` (log-prob ``raw``, ``length`` with EOS, EOS id ``eos_tok`` or -1,
    tokens ``hist [n, k, L]``, phrases ``met [n, k, P]`` or None) enter each slot's n-best pool."""
    n, k = raw.shape
    nb, L = beam.fin_rank.shape[1], beam.fin_hist.shape[2]
    rank = scoring.rank(raw, length, beam.target[:, None].expand(n, k))
    rank = torch.where(ok, rank, torch.full_like(rank, NEG_INF))
    best, idx = torch.cat([beam.fin_rank, rank], 1).topk(nb, dim=1)  # of [n, nb + k]
    from_pool = idx < nb
    pi = idx.clamp(max=nb - 1)
    ci = (idx - nb).clamp(min=0)
    beam.fin_logp = torch.where(from_pool, beam.fin_logp.gather(1, pi), raw.gather(1, ci))
    beam.fin_len = torch.where(from_pool, beam.fin_len.gather(1, pi), length.gather(1, ci))
    beam.fin_eos = torch.where(from_pool, beam.fin_eos.gather(1, pi), eos_tok.gather(1, ci))
    beam.fin_hist = torch.where(from_pool[:, :, None], beam.fin_hist.gather(1, pi[:, :, None].expand(n, nb, L)),
                                hist.gather(1, ci[:, :, None].expand(n, nb, L)))
    if met is not None:
        P = met.shape[2]
        beam.fin_met = torch.where(from_pool[:, :, None], beam.fin_met.gather(1, pi[:, :, None].expand(n, nb, P)),
                                   met.gather(1, ci[:, :, None].expand(n, nb, P)))
    beam.fin_rank = best


def pool_eos(beam: BeamState, rows, scored, eos: torch.Tensor, tables, scoring, loose: bool = False) -> None:
    """Merge this step's EOS candidates (``scored.fin_raw`` of each row) into the pools; with
    ``loose`` (``end_in_top_k``) keep the best ending below the top tokens too (:func:`keep_loose`)."""
    n, k = beam.alive.shape
    P, dev = beam.P, beam.cum.device
    raw = torch.full((n * k,), NEG_INF, device=dev)
    raw[rows.idx] = scored.fin_raw
    if loose:
        keep_loose(beam, rows, scored, eos, scoring, torch.isfinite(raw).view(n, k).any(1))
    if not bool(torch.isfinite(raw).any()):  # nothing may end here (the common case): skip the merge
        return
    eos_tok = torch.full((n * k,), -1, dtype=torch.long, device=dev)
    eos_tok[rows.idx] = eos[scored.eos_which]
    met = None
    if P:
        met = torch.zeros(n * k, P, dtype=torch.bool, device=dev)
        met[rows.idx] = tables.met(rows.s)
        met = met.view(n, k, P)
    raw = raw.view(n, k)
    length = (beam.length + 1)[:, None].expand(n, k)
    merge_finished(beam, torch.isfinite(raw), raw, length, eos_tok.view(n, k), beam.hist, met, scoring)


def keep_loose(beam: BeamState, rows, scored, eos: torch.Tensor, scoring, ended_now: torch.Tensor) -> None:
    """Until an output of the slot ends by ``end_in_top_k``'s rule (``ended_now [n]``: one does at
    this step), its best ending whose stop id ranked below the row's top tokens
    (``scored.fin_loose``) is kept in ``lo_*``; from then on none is. Where either is, no output
    cut by the length limit is pooled (:func:`finish_at_limit`)."""
    n, k = beam.alive.shape
    beam.ended = beam.ended | ended_now
    beam.lo_rank = torch.where(beam.ended, torch.full_like(beam.lo_rank, NEG_INF), beam.lo_rank)
    raw = torch.full((n * k,), NEG_INF, device=beam.cum.device)
    raw[rows.idx] = scored.fin_loose
    raw = torch.where(beam.ended[:, None], NEG_INF, raw.view(n, k)).view(-1)
    if not bool(torch.isfinite(raw).any()):  # (every ending ranked, or ended)
        return
    eos_tok = torch.zeros(n * k, dtype=torch.long, device=raw.device)
    eos_tok[rows.idx] = eos[scored.eos_which]
    length = (beam.length + 1)[:, None].expand(n, k)
    rank = scoring.rank(raw.view(n, k), length, beam.target[:, None].expand(n, k))
    best, j = rank.max(1)
    better = best > beam.lo_rank
    slots = torch.arange(n, device=raw.device)
    beam.lo_rank = torch.where(better, best, beam.lo_rank)
    beam.lo_logp = torch.where(better, raw.view(n, k)[slots, j], beam.lo_logp)
    beam.lo_len = torch.where(better, beam.length + 1, beam.lo_len)
    beam.lo_eos = torch.where(better, eos_tok.view(n, k)[slots, j], beam.lo_eos)
    beam.lo_hist = torch.where(better[:, None], beam.hist[slots, j], beam.lo_hist)


def record_partial(beam: BeamState, which: torch.Tensor, alive: torch.Tensor, tables) -> None:
    """Best hypothesis among ``alive [n, k]`` of the slots in ``which`` becomes their partial
    (incomplete) output when it beats the one they have."""
    n = alive.shape[0]
    sc = torch.where(alive, beam.cum, torch.full_like(beam.cum, NEG_INF))
    best, j = sc.max(1)
    better = which & (best > beam.part_logp)
    beam.part_logp = torch.where(better, best, beam.part_logp)
    beam.part_len = torch.where(better, beam.length, beam.part_len)
    rows = torch.arange(n, device=alive.device)
    beam.part_hist = torch.where(better[:, None], beam.hist[rows, j], beam.part_hist)
    if beam.P:
        beam.part_met = torch.where(better[:, None], tables.met(beam.lstate[rows, j]), beam.part_met)


def finish_at_limit(beam: BeamState, at_limit: torch.Tensor, tables, scoring) -> None:
    """Hypotheses reaching ``max_new_tokens``: accepting ones finish (reason "length"), the best
    other one is kept as the partial output. With ``end_in_top_k`` an output that ended beats one
    the limit cuts: slots where one has ended (by the rule, or below it: ``lo_rank``) pool no cut output."""
    n, k = beam.alive.shape
    acc = tables.accepting(beam.hstate.view(-1), beam.flat_lstate()).view(n, k)
    ended = beam.ended | torch.isfinite(beam.lo_rank)
    fin = beam.alive & acc & at_limit[:, None] & ~ended[:, None]
    if bool(fin.any()):
        raw = torch.where(fin, beam.cum, torch.full_like(beam.cum, NEG_INF))
        met = tables.met(beam.flat_lstate()).view(n, k, beam.P) if beam.P else None
        eos_tok = torch.full((n, k), -1, dtype=torch.long, device=raw.device)
        merge_finished(beam, fin, raw, beam.length[:, None].expand(n, k), eos_tok, beam.hist, met, scoring)
    rest = beam.alive & ~acc & at_limit[:, None]
    if bool(rest.any()):
        record_partial(beam, rest.any(1), rest, tables)


def done_slots(beam: BeamState, at_limit: torch.Tensor, tables, cfg) -> torch.Tensor:
    """bool ``[n]``: slots that stop now (length limit, empty beam, or the optimal-stopping
    certificate: the n-th best finished score reaches the bound of every live hypothesis)."""
    n, k = beam.alive.shape
    L = cfg.max_new_tokens
    alive = beam.alive & ~at_limit[:, None]
    no_live = ~alive.any(1)
    if cfg.stopping != "optimal":
        return at_limit | no_live
    lb = tables.lower_bound(beam.hstate.view(-1), beam.flat_lstate()).view(n, k)
    feasible = alive & (beam.length[:, None] + lb <= L)
    ub = cfg.scoring.upper_bound(beam.cum, beam.length[:, None].expand(n, k), lb.clamp(max=L), beam.target[:, None].expand(n, k), L)
    ub = torch.where(feasible, ub, torch.full_like(ub, NEG_INF)).max(1).values
    nth = beam.fin_rank[:, -1]
    certified = torch.isfinite(nth) & (nth >= ub)
    return at_limit | no_live | certified


def host_rows(beam: BeamState, idx: list[int]) -> list[dict]:
    """The pools and partial outputs of slots ``idx`` on the host, in one read from the device
    (every field packed into one float64 row per slot: token ids and lengths are exact there)."""
    sub = beam.select(torch.tensor(idx, dtype=torch.long, device=beam.cum.device))
    parts = {name: getattr(sub, name) for name in _RESULT_FIELDS}
    flat = torch.cat([t.reshape(len(idx), -1).double() for t in parts.values()], 1).tolist()
    out = []
    for row in flat:
        d, pos = {}, 0
        for name, t in parts.items():
            size = math.prod(t.shape[1:])
            vals = row[pos:pos + size]
            pos += size
            if t.dtype != torch.float32:
                vals = [int(v) for v in vals]
            d[name] = _reshape(vals, t.shape[1:])
        out.append(d)
    return out


_RESULT_FIELDS = ("fin_rank", "fin_logp", "fin_len", "fin_eos", "fin_hist", "fin_met", "part_logp", "part_len", "part_hist",
                  "part_met", "lo_rank", "lo_logp", "lo_len", "lo_eos", "lo_hist")


def _reshape(vals: list, shape):
    if len(shape) == 0:
        return vals[0]
    if len(shape) == 1:
        return vals
    step = math.prod(shape[1:])
    return [_reshape(vals[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def raw_result(h: dict, slot, steps: int, max_new_tokens: int) -> RawResult:
    """The result of one slot (``h``: its :func:`host_rows` entry): its finished n-best, or else
    its best partial output (with a warning). With ``end_in_top_k`` an output that ends beats one
    the limit cuts: the outputs that ended by the rule, else the best that ended where its stop id
    ranked lower ("Die Verifizierung Steuert" over a run-on of "Konten des Servers" to the limit),
    else the cut ones."""
    np_ = slot.n_phrases
    hyps: list[RawHypothesis] = []
    rank, logp, lens, eos = h["fin_rank"], h["fin_logp"], h["fin_len"], h["fin_eos"]
    for j in range(len(rank)):
        if not math.isfinite(rank[j]):
            continue
        e = eos[j]
        ntext = lens[j] - (1 if e >= 0 else 0)
        met = tuple(bool(x) for x in h["fin_met"][j][:np_]) if np_ else ()
        hyps.append(RawHypothesis(h["fin_hist"][j][:ntext], e if e >= 0 else None, rank[j], logp[j], True, met,
                                  "eos" if e >= 0 else "length"))
    if math.isfinite(h["lo_rank"]):  # (kept only where nothing ended by the rule; no cut output was pooled then)
        met = (True,) * np_  # (an ending is allowed only where every constraint is met)
        hyps.insert(0, RawHypothesis(h["lo_hist"][:h["lo_len"] - 1], h["lo_eos"], h["lo_rank"], h["lo_logp"], True, met, "eos"))
        del hyps[len(rank):]
    warn = list(slot.warnings)
    if not hyps:
        plen = h["part_len"]
        met = tuple(bool(x) for x in h["part_met"][:np_]) if np_ else ()
        pl = h["part_logp"]
        hyps.append(RawHypothesis(h["part_hist"][:plen], None, pl, pl, False, met, "incomplete"))
        unmet = [t for t, m in zip(slot.req.constraints.phrase_texts, met) if not m]
        why = f"phrases not met: {unmet}" if unmet else "the output does not end in an accepting state"
        warn.append(f"input {slot.req.index}: no output satisfies the constraints within max_new_tokens="
                    f"{max_new_tokens} ({why}); returning the best partial output (satisfied=False)")
    return RawResult(slot.req.index, hyps, steps, warn)
