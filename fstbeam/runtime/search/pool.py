"""Finished hypotheses: each slot's n-best pool, its best partial output, the stopping test and
the results handed back (the ``pool`` stage of the search step; see :mod:`.search`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from .beam import NEG_INF, STOP_EOS, BeamState

__all__ = ["RawHypothesis", "RawResult", "merge_finished", "record_partial", "done_slots", "host_rows", "raw_result",
           "FAILED_CHECK_TIER"]

#: Added to a finished output's pool tier where its input's output check fails
#: (`InputConstraints.output_check`: a JSON Schema's validation, for what the automaton
#: approximates): it is returned after every output that passes, and never certifies the stop.
FAILED_CHECK_TIER = 3


@dataclass
class RawHypothesis:
    tokens: list[int]
    eos: int | None
    score: float
    logprob: float
    satisfied: bool
    phrases_met: tuple[bool, ...]
    finish_reason: str  # "eos" | "length" | "incomplete" | "stop"
    cut: int = 0  # bytes a stop string took from the end of the tokens' text (:mod:`.stops`)


@dataclass
class RawResult:
    index: int
    hypotheses: list[RawHypothesis]
    steps: int
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


def merge_finished(beam: BeamState, ok, raw, length, eos_tok, hist, met, scoring, tier: int = 0, cut=None,
                   slots=None) -> None:
    """Candidates ``ok [n, k]`` (log-prob ``raw``, ``length`` with EOS, EOS id ``eos_tok`` or -1
    (-2: a stop string, with ``cut [n, k]`` bytes to drop), tokens ``hist [n, k, L]``, phrases
    ``met [n, k, P]`` or None) enter each slot's n-best pool, ordered by tier (lower first:
    ``end_in_top_k``; an output that fails its input's check after every one that passes:
    `checked_tiers`, with ``slots`` the engine's), then by rank."""
    n, k = raw.shape
    nb, L = beam.fin_rank.shape[1], beam.fin_hist.shape[2]
    rank = scoring.rank(raw, length, beam.target[:, None].expand(n, k))
    rank = torch.where(ok, rank, torch.full_like(rank, NEG_INF))
    all_rank = torch.cat([beam.fin_rank, rank], 1)  # [n, nb + k]
    all_tier = torch.cat([beam.fin_tier, checked_tiers(ok, length, eos_tok, hist, tier, cut, slots)], 1)
    # lexicographic (tier, rank): rank's order within a tier, exact in float64 (|rank| << 1e9)
    _, idx = (all_rank.double() - 1e9 * all_tier.double()).topk(nb, dim=1)
    best = all_rank.gather(1, idx)
    beam.fin_tier = all_tier.gather(1, idx)
    from_pool = idx < nb
    pi = idx.clamp(max=nb - 1)
    ci = (idx - nb).clamp(min=0)
    beam.fin_logp = torch.where(from_pool, beam.fin_logp.gather(1, pi), raw.gather(1, ci))
    beam.fin_len = torch.where(from_pool, beam.fin_len.gather(1, pi), length.gather(1, ci))
    beam.fin_eos = torch.where(from_pool, beam.fin_eos.gather(1, pi), eos_tok.gather(1, ci))
    new_cut = torch.zeros_like(eos_tok) if cut is None else cut
    beam.fin_cut = torch.where(from_pool, beam.fin_cut.gather(1, pi), new_cut.gather(1, ci))
    beam.fin_hist = torch.where(from_pool[:, :, None], beam.fin_hist.gather(1, pi[:, :, None].expand(n, nb, L)),
                                hist.gather(1, ci[:, :, None].expand(n, nb, L)))
    if met is not None:
        P = met.shape[2]
        beam.fin_met = torch.where(from_pool[:, :, None], beam.fin_met.gather(1, pi[:, :, None].expand(n, nb, P)),
                                   met.gather(1, ci[:, :, None].expand(n, nb, P)))
    beam.fin_rank = best


def checked_tiers(ok, length, eos_tok, hist, tier: int, cut, slots) -> torch.Tensor:
    """int64 ``[n, m]``: each candidate's pool tier, ``tier``, plus `FAILED_CHECK_TIER` where
    its slot's input has an output check (``slots[i].req.constraints.output_check``) that the
    candidate's output fails. Only the slots with a check and a candidate are read to the host
    (their tokens, in one read), and only when such a candidate ends."""
    tiers = torch.full_like(eos_tok, tier)
    which = [i for i, sl in enumerate(slots or ()) if sl.req.constraints.output_check is not None]
    if not which:
        return tiers
    idx = torch.tensor(which, dtype=torch.long, device=ok.device)
    sub_ok = ok.index_select(0, idx)
    if not bool(sub_ok.any()):
        return tiers
    m, L = sub_ok.shape[1], hist.shape[2]
    n_text = length.index_select(0, idx) - (eos_tok.index_select(0, idx) >= 0).long()  # (EOS is not in the text)
    sub_cut = cut.index_select(0, idx) if cut is not None else torch.zeros_like(n_text)
    host = torch.cat([sub_ok.long(), n_text, sub_cut, hist.index_select(0, idx).reshape(len(which), m * L)], 1).tolist()
    failed = []
    for row, i in zip(host, which):
        check = slots[i].req.constraints.output_check
        for j in range(m):
            toks = row[3 * m + j * L:3 * m + j * L + row[m + j]]
            if row[j] and not check(toks, row[2 * m + j]):
                failed.append((i, j))
    if failed:
        at = torch.tensor(failed, dtype=torch.long, device=tiers.device)
        tiers[at[:, 0], at[:, 1]] += FAILED_CHECK_TIER
    return tiers


def pool_eos(beam: BeamState, rows, scored, eos: torch.Tensor, tables, scoring, loose: bool = False,
             slots=None) -> None:
    """Merge this step's EOS candidates (``scored.fin_raw`` of each row) into the pools; with
    ``loose`` (``end_in_top_k``) also the endings below the row's top tokens (``scored.fin_loose``),
    in the pool's second tier: returned only after every output that ended by the rule.
    ``slots``: the engine's, for the inputs' output checks (`checked_tiers`)."""
    n, k = beam.alive.shape
    P, dev = beam.P, beam.cum.device
    eos_tok = torch.full((n * k,), -1, dtype=torch.long, device=dev)
    eos_tok[rows.idx] = eos[scored.eos_which]
    length = (beam.length + 1)[:, None].expand(n, k)
    met = None
    for tier, fin in ((0, scored.fin_raw), (1, scored.fin_loose if loose else None)):
        if fin is None:
            continue
        raw = torch.full((n * k,), NEG_INF, device=dev)
        raw[rows.idx] = fin
        if not bool(torch.isfinite(raw).any()):  # nothing may end here (the common case): skip the merge
            continue
        if P and met is None:
            met = torch.zeros(n * k, P, dtype=torch.bool, device=dev)
            met[rows.idx] = tables.met(rows.s)
            met = met.view(n, k, P)
        raw = raw.view(n, k)
        merge_finished(beam, torch.isfinite(raw), raw, length, eos_tok.view(n, k), beam.hist, met, scoring, tier,
                       slots=slots)


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


def finish_at_limit(beam: BeamState, at_limit: torch.Tensor, tables, scoring, cut_tier: int = 0,
                    slots=None) -> None:
    """Hypotheses reaching ``max_new_tokens``: accepting ones finish (reason "length") in the pool's
    tier ``cut_tier`` (2 with ``end_in_top_k``: after every output that ended), the best other one
    is kept as the partial output. ``slots``: as for `pool_eos`."""
    n, k = beam.alive.shape
    acc = tables.accepting(beam.hstate.view(-1), beam.flat_lstate()).view(n, k)
    fin = beam.alive & acc & at_limit[:, None]
    if bool(fin.any()):
        raw = torch.where(fin, beam.cum, torch.full_like(beam.cum, NEG_INF))
        met = tables.met(beam.flat_lstate()).view(n, k, beam.P) if beam.P else None
        eos_tok = torch.full((n, k), -1, dtype=torch.long, device=raw.device)
        merge_finished(beam, fin, raw, beam.length[:, None].expand(n, k), eos_tok, beam.hist, met, scoring, cut_tier,
                       slots=slots)
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
    certified = torch.isfinite(nth) & (beam.fin_tier[:, -1] == 0) & (nth >= ub)  # (a later tier never certifies)
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


_RESULT_FIELDS = ("fin_rank", "fin_logp", "fin_len", "fin_eos", "fin_cut", "fin_hist", "fin_met", "part_logp", "part_len", "part_hist",
                  "part_met")


def _reshape(vals: list, shape):
    if len(shape) == 0:
        return vals[0]
    if len(shape) == 1:
        return vals
    step = math.prod(shape[1:])
    return [_reshape(vals[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def raw_result(h: dict, slot, steps: int, max_new_tokens: int) -> RawResult:
    """The result of one slot (``h``: its :func:`host_rows` entry): its finished n-best, or else
    its best partial output (with a warning). With ``end_in_top_k`` the pool's tiers put the
    outputs that ended by the rule first, then those that ended where the stop id ranked lower
    ("Die Verifizierung Steuert" over a run-on of "Konten des Servers" to the limit), then the
    ones the limit cut."""
    np_ = slot.n_phrases
    hyps: list[RawHypothesis] = []
    rank, logp, lens, eos = h["fin_rank"], h["fin_logp"], h["fin_len"], h["fin_eos"]
    for j in range(len(rank)):
        if not math.isfinite(rank[j]):
            continue
        e = eos[j]
        ntext = lens[j] - (1 if e >= 0 else 0)
        met = tuple(bool(x) for x in h["fin_met"][j][:np_]) if np_ else ()
        why = "eos" if e >= 0 else "stop" if e == STOP_EOS else "length"
        hyps.append(RawHypothesis(h["fin_hist"][j][:ntext], e if e >= 0 else None, rank[j], logp[j], True, met, why,
                                  h["fin_cut"][j]))
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
