"""The part of the static shortlist that decoding actually uses (CPU).

The static set ``S`` (:mod:`.shortlist`) holds every token that *some* state of the batch's
automata allows: CEFR A1 has 21,174. The states a decode visits allow fewer: on the benchmark's
prompts the union over every step of the rows' allowed tokens settles at about 16,200 within a
few steps (rarely visited word-boundary states and mid-word states hold the rest). The output
layer streams its rows of ``W[S]`` from memory every step, so a plan over the used tokens only
is a quarter cheaper.

:class:`UsedRows` (one per static plan, so it lives as long as the plan's cache entry) keeps
``seen``, the OR of the allowed-token masks of the steps so far. Once ``SETTLE`` steps have added
to it, it gathers the output rows of ``seen`` plus EOS into a plan of their own; a step whose rows
allow nothing outside that plan uses it, any other step uses the full static plan and adds to
``seen`` (after ``SETTLE`` such steps the plan is rebuilt, at most ``MAX_BUILDS`` times). Both plans
list their ids in ascending order, so the columns keep the order of the ids (ties to the lower id)
and the results are those of the static plan. Only on CPU: the per-step check is a host read.
"""
from __future__ import annotations

import torch

from ...kernels.bitmask import unpack_bitmask_torch

__all__ = ["UsedRows", "SETTLE", "MAX_BUILDS", "MAX_SHARE"]

SETTLE = 4  # steps that add to ``seen`` before a plan is (re)built from it
MAX_BUILDS = 4  # plans built per static plan (a gather of the rows each time)
MAX_SHARE = 0.9  # a used set larger than this share of S is not worth a plan of its own


class UsedRows:
    def __init__(self):
        self.seen: torch.Tensor | None = None  # int32 [W]
        self.plan = None  # (StaticPlan over the used ids, their mask bits [W], EOS columns)
        self.misses = 0  # steps that added to ``seen`` since the last build
        self.builds = 0
        self.hits = 0  # steps served by the used plan

    def choose(self, union: torch.Tensor, static, make_plan, eos: torch.Tensor, vocab: int):
        """The plan for a step whose rows allow ``union`` (int32 ``[W]``, the OR of their masks):
        ``(plan, eos_cols)`` over the used ids, or ``None`` (use ``static``, the full static plan).
        ``make_plan(ids)`` gathers a plan over sorted ids."""
        if self.plan is not None:
            plan, bits, eos_cols = self.plan
            if not bool((union & ~bits).any()):
                self.hits += 1
                return plan, eos_cols
        self.seen = union.clone() if self.seen is None else self.seen | union
        self.misses += 1
        if self.misses >= SETTLE and self.builds < MAX_BUILDS:
            self._build(static, make_plan, eos, vocab)
        return None

    def _build(self, static, make_plan, eos: torch.Tensor, vocab: int) -> None:
        self.misses = 0
        self.builds += 1
        allowed = unpack_bitmask_torch(self.seen[None], vocab)[0]
        allowed[eos] = True
        ids = allowed.nonzero().squeeze(1)
        if ids.shape[0] > MAX_SHARE * static.ids.shape[0]:
            return
        plan = make_plan(ids)
        self.plan = (plan, self.seen.clone(), torch.searchsorted(ids, eos))
