"""Search quality next to DBA: the plain track (no search error against the unconstrained beam)
and constraint-aware ending (a term goes inside the sentence, not after it).

**The plain track.** DBA splits a beam of ``k`` over ``1 + words`` banks, so with 3 one-word
constraints and ``k = 5`` the hypotheses that meet nothing yet keep 1-2 places, and the best
unconstrained path is often pruned early: the search returned an output that scores *lower* than
the unconstrained beam's even where that output already met every constraint (37 of 59 such
CommonGen items). So each input with must-include phrases also runs, in the same beam, the beam
search *without* its must-include phrases (same model, same hard constraints, the same avoid and
prefix constraints, the same scoring, guards and ``k``): the *plain track*. Every hypothesis
carries two membership flags, ``plain`` and ``cons``; the beam has room for ``2k`` hypotheses and
holds the union of the two selections, so a hypothesis both choose is computed once:

- the plain selection is exactly the unconstrained search's: the best ``k`` of the plain members'
  top tokens, EOS where the hard automaton (and avoid / prefix) accept, feasibility by their
  distances only; its finished outputs update the track's best score ``pl_best``;
- the constrained (DBA) selection takes its global top-k and each row's best from its own
  members (as without the plain track), and its phrase advances from *every* live hypothesis,
  plain ones included: a term can be placed into the best unconstrained prefixes, while the plain
  members' ordinary continuations do not crowd DBA's banks (40 items each: WMT en-de chrF 50.9 ->
  52.0, en-es 60.4 -> 61.8, outputs cut 10 -> 7.5%; CommonGen unchanged, BLEU 18.2 / 18.0);
- every finished output that meets all constraints enters the n-best pool, whichever track found
  it. So when the unconstrained beam's result meets every constraint it is in the pool, and the
  constrained result scores at least as well. (With ``end_in_top_k`` both tracks end by its rule
  and the guarantee is among outputs that end so: an output that ends by the rule is preferred
  to a higher-scoring one the length limit cuts.)

The plain track stops, and its plain-only hypotheses leave the beam, once no live plain member can
still meet every phrase within the length limit *and* beat ``max(pl_best, best constrained
output)`` (Huang et al.'s bound, :mod:`.scoring`, from the distances with the phrases): past that
point the unconstrained result is settled, beaten already, or misses a phrase (then it is no
search error whatever it becomes). It
is exact for ``renormalize=False`` and ``prune_threshold=None`` (the defaults): with
renormalization the plain members use the constrained rows' normalizer, with a threshold the
slot's best. Cost: up to ``2k`` model rows per input while the plain track lives, whatever the
number of phrases (:mod:`.dba`'s per-step work stays flat); ``plain_track=False`` turns it off.

**Constraint-aware ending.** A hypothesis whose model would end here (the best stop id, EOS or a
newline with ``stop_at="line"``, scores at least the best allowed text token) while a must-include
phrase is unmet, and which the hard constraints would let end, has *closed its answer*: whatever
follows ("... sein. 1. 2. ... 14. Provider:") tacks the term on after it. It and all its
descendants are marked ``over``; the DBA bank allocation fills its places with the other
candidates first and takes ``over`` ones only for places left empty. And an ``over`` hypothesis
may only move towards meeting its phrases (:func:`closing_only`): a token that brings no unmet
phrase closer (no phrase automaton's distance falls) is not a constrained candidate of it. Where no
better placement survives, the terms then follow at once, instead of after a run-on that the
length limit cuts ("... gesetzt. (This is the default setting ... If you want to set Einrichten
Aufbewahrungszeitraum") or a loop of near misses ("zugeordnet zugeordneten zugeordnet ..."). The model decides where its
answer ends, so the rule needs no sentence splitter, language or tokenizer knowledge; a source of
several sentences is no exception (the model does not end after the first). Scores are never
changed, so the optimal-stopping certificate and the plain track's guarantee are untouched.
"""
from __future__ import annotations

import torch

from .beam import NEG_INF

__all__ = ["closing_only", "merge_tracks", "plain_best", "plain_fit", "plain_view", "stop_plain", "would_end"]


def plain_view(tables, s: torch.Tensor) -> torch.Tensor:
    """Light states ``[..., P]`` with every must-include phrase replaced by the identity state:
    what the plain track's feasibility and EOS see."""
    if s.shape[-1] == 0:
        return s
    return torch.where(tables.l_is_phrase[s], torch.zeros_like(s), s)


def plain_fit(tables, nh: torch.Tensor, ns: torch.Tensor, length: torch.Tensor, L: int) -> torch.Tensor:
    """The feasibility tier of :func:`~.step.advance` without the must-include phrases."""
    lower, need = tables.bounds(nh, plain_view(tables, ns))
    room = L - 1 - length[:, None]
    return (lower <= room).to(torch.int8) + (need <= room).to(torch.int8)


def would_end(scored, rows, ok_all: torch.Tensor, ok_plain: torch.Tensor) -> torch.Tensor:
    """bool ``[R]``: the model's best next token is a stop id and only unmet phrases forbid it."""
    best_text = scored.tok_scores[:, 0] - rows.c  # -inf where no text token is allowed
    return (scored.eos_best >= best_text) & ok_plain & ~ok_all


def merge_tracks(cand, plain_part, V: int):
    """One candidate list from the constrained set ``cand`` (DBA's, or the plain top tokens for
    slots without phrases) and ``plain_part`` (the plain members' top tokens): ``(Candidates,
    in_cons, in_plain)``; a (parent, token) pair in both is kept once, with both flags."""
    from .beam import Candidates

    S = torch.cat([cand.s, plain_part.s], 1)
    T = torch.cat([cand.t, plain_part.t], 1)
    J = torch.cat([cand.j, plain_part.j], 1)
    n, N = S.shape
    N1 = cand.s.shape[1]
    ok = torch.isfinite(S) & (T >= 0)
    pos = torch.arange(N, device=S.device).expand(n, N)
    in_cons, in_plain = ok & (pos < N1), ok & (pos >= N1)
    key = torch.where(ok, J * V + T, -1 - pos)
    sk, order = torch.sort(key, dim=1, stable=True)
    new_group = torch.ones_like(sk, dtype=torch.bool)
    new_group[:, 1:] = sk[:, 1:] != sk[:, :-1]
    gid = torch.cumsum(new_group.to(torch.long), 1) - 1  # group of each sorted entry
    flags = torch.stack([in_cons.gather(1, order), in_plain.gather(1, order)], -1).to(torch.long)
    merged = torch.zeros(n, N, 2, dtype=torch.long, device=S.device).scatter_reduce_(
        1, gid[:, :, None].expand(n, N, 2), flags, reduce="amax")
    back = merged.gather(1, gid[:, :, None].expand(n, N, 2)).bool()  # group flags per sorted entry
    first = torch.zeros_like(new_group).scatter(1, order, new_group)
    flags_at = torch.zeros(n, N, 2, dtype=torch.bool, device=S.device).scatter(1, order[:, :, None].expand(n, N, 2), back)
    keep = first & ok
    S = torch.where(keep, S, torch.full_like(S, NEG_INF))
    return Candidates(S, T, J), flags_at[..., 0] & keep, flags_at[..., 1] & keep


def plain_best(beam, rows, scored, ok_plain: torch.Tensor, scoring) -> None:
    """The plain members that may end here update their slot's ``pl_best``."""
    n, K = beam.alive.shape
    member = beam.plain.view(-1)[rows.idx] & ok_plain & scored.ranked  # (no host read: computed whatever it holds)
    raw = torch.full((n * K,), NEG_INF, device=beam.cum.device)
    raw[rows.idx] = torch.where(member, rows.c + scored.eos_best, torch.full_like(rows.c, NEG_INF))
    length = (beam.length + 1)[:, None].expand(n, K)
    rank = scoring.rank(raw.view(n, K), length, beam.target[:, None].expand(n, K))
    beam.pl_best = torch.maximum(beam.pl_best, rank.max(1).values)


def stop_plain(beam, tables, cfg) -> None:
    """End the plain track of the slots where no live plain member can still meet every phrase
    within the length limit and beat ``max(pl_best, best constrained output)``; their plain-only
    hypotheses leave the beam."""
    n, K = beam.alive.shape
    L = cfg.max_new_tokens
    live = beam.plain & beam.alive
    # Full distances (with the must-include phrases): only an output that meets every phrase can
    # be a search error, and it needs at least that many more tokens.
    lb = tables.lower_bound(beam.hstate.view(-1), beam.flat_lstate()).view(n, K)
    ok = live & (beam.length[:, None] + lb <= L)
    ub = cfg.scoring.upper_bound(beam.cum, beam.length[:, None].expand(n, K), lb.clamp(max=L),
                                 beam.target[:, None].expand(n, K), L)
    ub = torch.where(ok, ub, torch.full_like(ub, NEG_INF)).max(1).values
    best_cons = torch.where(beam.fin_tier[:, 0] == 0, beam.fin_rank[:, 0], torch.full_like(beam.pl_best, NEG_INF))
    settled = torch.maximum(beam.pl_best, best_cons)  # (an ending by the pool's first tier only)
    stop = ~ok.any(1) | (ub <= settled)
    beam.plain = beam.plain & ~stop[:, None]
    beam.alive = beam.alive & (beam.plain | beam.cons)


def closing_only(tables, beam, over: torch.Tensor, cand_j: torch.Tensor, ns: torch.Tensor) -> torch.Tensor:
    """bool ``[n, N]``: candidates of ``over`` parents (``[n, K]``; ``cand_j`` their places,
    ``ns`` the candidates' light states ``[n, N, P]``) that bring no unmet phrase closer: no light
    automaton's distance falls. (Per phrase, not their sum: where phrases overlap, "Beleg" and
    "Belege", the token that completes one puts the other further away, and the sum never falls.)"""
    n, N = cand_j.shape
    if ns.shape[-1] == 0:
        return torch.zeros(n, N, dtype=torch.bool, device=cand_j.device)
    P = ns.shape[-1]
    parent_l = beam.lstate.gather(1, cand_j[:, :, None].expand(n, N, P))
    closer = (tables.l_dist[ns] < tables.l_dist[parent_l]).any(-1)
    return over.gather(1, cand_j) & ~closer
