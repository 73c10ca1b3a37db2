"""The search: batched, DBA-banked, streaming beam search with optimal stopping.

One :class:`SearchEngine` decodes a stream of inputs with one model adapter. Up to
``batch_size`` inputs (*slots*) are live at a time, each with a beam of ``beam_size`` hypotheses.
The search state is a :class:`~.beam.BeamState`: tensors of shape ``[slots, beam, ...]`` (scores,
automaton states, token history, finished pool); the model runs only on live hypotheses.

One step (:meth:`SearchEngine._expand`, the stages in :mod:`.step`, :mod:`.dba` and :mod:`.pool`),
for every live hypothesis at once:

1. the allowed-token bitmask of its automaton states (``Tables.build_mask``); with
   ``renormalize=True`` the logits may be computed only for the union of the rows' allowed tokens
   (the shortlist output layer, :mod:`.shortlist`: the model then returns its final hidden states
   and the search computes the logits; columns are mapped back to token ids);
2. masked log-softmax + top-k through the kernel dispatch (one read of the logits), EOS
   log-probabilities by a gather (EOS is allowed only in accepting states);
3. candidates: the top-k of each row; with must-include phrases (DBA) also each row's best
   token and each row's best token advancing each unmet phrase (``best_in_sets``);
4. next automaton states by table lookup, the fewest tokens each candidate still needs to become
   acceptable (candidates that cannot finish within ``max_new_tokens`` are dropped while others can);
5. selection: the best ``beam_size`` (plain) or the DBA bank allocation (see :mod:`.dba`); with
   phrases, next to it the *plain track* (the same search without the must-include phrases, whose
   outputs that meet every constraint enter the pool, so the result never scores below an
   unconstrained result that meets them) and constraint-aware ending (:mod:`.tracks`);
6. finished hypotheses enter a per-input n-best pool (with ``end_in_top_k`` in tiers: endings
   whose stop id ranks among the row's top tokens, other endings, cut outputs; :mod:`.pool`); an
   input stops when its n-th best finished score reaches the upper bound of its live hypotheses
   (:mod:`.scoring`), or at the length limit. A candidate whose text reaches one of its input's
   ``stop`` strings finishes too, cut before it, into the same pool (:mod:`.stops`, after stage 4).

Streaming (Yang et al. 2020): when the live inputs drop to ``refill * batch_size``, new inputs are
prefilled and join the batch; a finished input leaves it. With ``expand="least_advanced"``
(Yang et al.'s VAR-STREAM) only the inputs with the fewest output tokens are expanded: the others
are *parked* (their search tensors, pending logits and cache rows set aside) until the newcomers
catch up, then rejoin (:mod:`.schedule`). With ``expand="all"`` every live input is expanded at every step. The rows
of one input never interact with other rows, and padding is masked exactly, so an input's result
does not depend on its batch or on the schedule.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import torch

from ..config import SearchConfig
from ..model.shortlist import StepLogits
from ..model.shortlist import resolve as resolve_shortlist
from . import dba, pool, step, tracks
from .beam import BeamState, Rows, prompt_tails
from .pool import RawHypothesis, RawResult
from .schedule import LeastAdvancedSchedule, Parked
from .stops import StopRule, pool_stops
from .tables import INF_DIST, InputConstraints, Tables

__all__ = ["SearchConfig", "Request", "RawHypothesis", "RawResult", "SearchEngine", "SearchStats"]


@dataclass
class Request:
    index: int
    ids: Sequence[int]
    constraints: InputConstraints
    error: str | None = None
    query_tokens: int | None = None  # tokens of the prompt's query (length_target.py); None: all of ids
    stop: StopRule | None = None  # stop strings that end its hypotheses (:mod:`.stops`)


@dataclass
class SearchStats:
    """Counted work (for the flat-cost checks and benchmarks)."""

    steps: int = 0  # search steps (one model call over the live rows each)
    model_rows: int = 0  # rows through the model, prefill included
    logits_elements: int = 0  # elements of logits read by masked top-k
    advance_elements: int = 0  # (row, phrase, token) entries read by best_in_sets
    candidates: int = 0  # candidates considered by the selection
    refills: int = 0
    paused: int = 0  # input-steps spent parked (expand="least_advanced")
    shortlist_steps: int = 0  # steps whose logits were computed over a shortlist


@dataclass
class _Slot:
    """Host-side facts of one live input (in the order of the beam's slots)."""

    req: Request
    n_phrases: int
    num_banks: int
    target: float
    warnings: list[str]
    steps: int = 0  # tokens generated so far (= the beam's ``length`` of the slot, kept on the host)

    @property
    def stop(self) -> StopRule | None:
        return self.req.stop


@dataclass(frozen=True)
class _StepFacts:
    """Who is live in one step (:meth:`SearchEngine._expand`) and which search modes run."""

    n: int  # live inputs
    K: int  # places per input: beam_size, or twice it with the plain track (:mod:`.tracks`)
    k: int  # beam_size
    R: int  # live rows (model rows this step)
    kk: int  # candidates per row (max_per_parent)
    rows: Rows  # the live rows' indices, automaton and light states
    use_dba: bool  # some input has must-include phrases
    two: bool  # the plain track and constraint-aware ending run beside DBA


class SearchEngine(LeastAdvancedSchedule):
    def __init__(self, adapter, config: SearchConfig, *, eos_ids: Sequence[int], device):
        self.adapter = adapter
        self.cfg = config
        self.eos_ids = tuple(int(e) for e in eos_ids)
        self.device = torch.device(device)
        self.V = int(adapter.vocab_size)
        self.stats = SearchStats()
        self._eos = torch.tensor(self.eos_ids, dtype=torch.long, device=self.device)
        # With a shortlist the adapter returns hidden states (``self.logits`` holds them) and
        # :meth:`_output_layer` computes the logits.
        self.shortlist = resolve_shortlist(adapter, config, self._eos, self.V)
        self._hidden = {"hidden": True} if self.shortlist is not None else {}
        # room for the plain track next to DBA's beam (:mod:`.tracks`)
        self.width = 2 * config.beam_size if config.dba and config.plain_track else config.beam_size

    # ============================================================================ driver
    def run(self, requests: Iterable[Request]) -> Iterator[RawResult]:
        """Decode ``requests``; yield each result as soon as its input finishes."""
        cfg = self.cfg
        pending = iter(requests)
        exhausted = False
        self._reset()
        # Models with absolute decoder positions cannot take rows mid-decode: refill when empty.
        can_join = cfg.streaming and self.adapter.supports_refill
        threshold = cfg.refill * cfg.batch_size if can_join else 0
        while True:
            live = len(self.slots) + (len(self.parked.slots) if self.parked else 0)
            if not exhausted and (live == 0 or live <= threshold):
                batch: list[Request] = []
                exhausted = yield from self._take(pending, cfg.batch_size - live, batch)
                if batch:
                    self._unpark()  # the pooled tables are rebuilt over every live input
                    self._join(*self._admit(batch))
            if cfg.expand == "least_advanced":  # (nothing is ever parked otherwise)
                self._schedule()
            if not self.slots:
                if exhausted:
                    return
                continue
            done = self._expand(self.logits)
            self.stats.steps += 1
            if self.parked:
                self.stats.paused += len(self.parked.slots)
            if done:
                yield from self._retire(done)
            if self.slots:
                tokens = self.pending_tokens
                self.logits = self.adapter.step(self.state, tokens, **self._hidden)
                self.stats.model_rows += int(tokens.shape[0])
            else:
                self.logits = None
                self.state = None

    @staticmethod
    def _take(pending: Iterator[Request], room: int, batch: list) -> Iterator[RawResult]:
        """Append up to ``room`` requests to ``batch``, yielding those with an error as results;
        returns whether ``pending`` ran out."""
        while len(batch) < room:
            try:
                req = next(pending)
            except StopIteration:
                return True
            if req.error is not None:
                yield RawResult(req.index, [], 0, [], req.error)
                continue
            batch.append(req)
        return False

    def _join(self, logits: torch.Tensor, state) -> None:
        """Rows of ``logits``/``state`` join the batch's model rows (after the live ones)."""
        if self.logits is None:
            self.logits, self.state = logits, state
        else:
            self.logits = torch.cat([self.logits, logits])
            self.state = self.adapter.concat([self.state, state])

    # ============================================================================ admit
    def _reset(self) -> None:
        self.slots: list[_Slot] = []
        self.tables: Tables | None = None
        self.logits = None
        self.state = None  # the model adapter's state (cache) of the live rows
        self.parked: Parked | None = None
        self.beam = BeamState.empty(self.width, self.cfg.max_new_tokens, self.cfg.nbest, self.device)
        self.pending_tokens = torch.zeros(0, dtype=torch.long, device=self.device)

    def _admit(self, batch: list[Request]):
        """Prefill ``batch`` and append its slots (model rows go after the live ones)."""
        logits, state = self.adapter.prefill([r.ids for r in batch], **self._hidden)
        self.stats.model_rows += len(batch)
        self.stats.refills += 1
        tables = self._pool_tables([r.constraints for r in batch])
        P = tables.P
        dev, n = self.device, len(batch)
        h0 = torch.tensor([tables.hard_start(r.constraints) for r in batch], device=dev)
        l0 = torch.tensor([tables.light_starts(r.constraints, P) for r in batch], device=dev, dtype=torch.long).view(n, P)
        lower = tables.lower_bound(h0, l0).tolist()
        new_slots = [self._new_slot(r, d) for r, d in zip(batch, lower)]
        self.slots.extend(new_slots)
        cfg = self.cfg
        fresh = BeamState.fresh(
            h0, l0, torch.tensor([s.target for s in new_slots], device=dev),
            torch.tensor([s.num_banks for s in new_slots], dtype=torch.long, device=dev),
            torch.tensor([tables.hard_offset(r.constraints) for r in batch], device=dev, dtype=torch.long),
            torch.tensor([tables.light_offsets(r.constraints, P) for r in batch], device=dev, dtype=torch.long).view(n, P),
            prompt_tails([r.ids for r in batch], dev), k=self.width, L=cfg.max_new_tokens, nb=cfg.nbest,
            plain_track=self.width > cfg.beam_size)
        self.beam = self.beam.cat(fresh)
        return logits, state

    def _pool_tables(self, incoming: list[InputConstraints]) -> Tables:
        """The pooled tables with ``incoming``'s automata: rebuilt (over the live inputs' and the
        new ones only) when some are missing, moving the live hypotheses' states to their new
        offsets; the beam's light dimension is brought to the pool's ``P``."""
        tables = self.tables
        if tables is None or not all(tables.contains(c) for c in incoming):
            live = [sl.req.constraints for sl in self.slots]
            tables = Tables(live + incoming, vocab_width=self.V, eos_ids=self.eos_ids, device=self.device)
            if self.slots:
                P, b, dev = max(tables.P, 0), self.beam, self.device
                new_hoff = torch.tensor([tables.hard_offset(c) for c in live], device=dev, dtype=torch.long)
                new_loff = torch.tensor([tables.light_offsets(c, P) for c in live], device=dev, dtype=torch.long).view(len(live), P)
                b = b.pad_phrases(P)
                moved = b.hstate >= 2  # states of a real hard automaton (0/1 are FREE/TEXT)
                b.hstate = torch.where(moved, b.hstate + (new_hoff - b.hoff)[:, None], b.hstate)
                # (state 0 is the identity automaton: padding and dead entries keep it)
                b.lstate = torch.where(b.lstate > 0, b.lstate + (new_loff - b.loff)[:, None, :], b.lstate)
                b.hoff, b.loff = new_hoff, new_loff
                self.beam = b
            self.tables = tables
        self.beam = self.beam.pad_phrases(tables.P)
        return tables

    def _new_slot(self, r: Request, lower: int) -> _Slot:
        """Host facts of a new input, with warnings when its constraints cannot be met in time."""
        c, L, cfg = r.constraints, self.cfg.max_new_tokens, self.cfg
        warn = []
        if lower >= INF_DIST:
            warn.append("the constraints cannot be satisfied from the start state (no accepting state is reachable)")
        elif lower > L:
            what = [f"phrase {t!r}" for t in c.phrase_texts] + (["the prefix"] if any(a.kind == "prefix" for a in c.lights) else [])
            warn.append(
                f"max_new_tokens={L} is too small: satisfying the constraints ({', '.join(what) or 'word list'}) "
                f"needs at least {lower} tokens; returning the best partial output"
            )
        nbanks = dba.num_banks(c.lights[: c.n_phrases])
        if cfg.target_length is not None:
            tgt = float(cfg.target_length)
        elif cfg.length_ratio is not None:
            tgt = float(cfg.length_ratio) * (r.query_tokens or len(r.ids))  # the query, not few-shot examples
        else:
            tgt = float(L)
        return _Slot(r, c.n_phrases, nbanks, tgt, warn)

    # ============================================================================ one step
    def _output_layer(self, model_out: torch.Tensor, mask: torch.Tensor) -> StepLogits:
        """The step's logits: the model's as they are, or computed from its hidden states over the
        shortlist of allowed tokens (or over every token where that does not pay). The static
        shortlist of the batch's tables costs no host read; a per-step union costs one (its
        size shapes the gathered weight rows)."""
        if self.shortlist is None:
            return StepLogits(model_out, mask, None, self._eos)
        out = self.shortlist.logits(model_out, mask, self.tables)
        self.stats.shortlist_steps += out.ids is not None
        return out

    def _expand(self, model_out: torch.Tensor) -> list[int]:
        """One search step over every live hypothesis, in the module docstring's six stages;
        updates the beams and returns the slots that finished. Shapes: ``n`` live inputs, ``K``
        places per input (``beam_size``, twice it with the plain track), ``R`` live rows (at most
        ``n * K``), ``W`` mask words, ``M`` output columns (the vocabulary or a shortlist), ``C``
        candidates per input."""
        st = self._step_facts(model_out)
        ok_eos, ok_plain, out = self._stage_mask_and_logits(st, model_out)     # 1.
        scored = step.score_rows(out, st.rows, ok_eos, st.kk, self.cfg)       # 2. top-k of [R, M]
        self.stats.logits_elements += st.R * int(out.logits.shape[1])
        cand, tracks_in, over = self._stage_candidates(st, scored, out, ok_eos, ok_plain)   # 3.
        adv = step.advance(cand, self.beam, self.tables, self.cfg.max_new_tokens)           # 4.
        if any(sl.stop is not None for sl in self.slots):  # stop strings end hypotheses (:mod:`.stops`)
            adv = (pool_stops(self.beam, self.slots, adv, self.tables, self.cfg.scoring, self.cfg.min_new_tokens), *adv[1:])
        chosen = self._stage_select(st, cand, adv, tracks_in, over)                         # 5.
        return self._stage_commit(st, scored, ok_plain, adv, chosen, over)                  # 6.

    def _step_facts(self, model_out: torch.Tensor) -> _StepFacts:
        """Who is live this step and which search modes run."""
        cfg, beam = self.cfg, self.beam
        n, K = beam.alive.shape
        R = int(model_out.shape[0])
        use_dba = cfg.dba and any(sl.n_phrases for sl in self.slots)
        return _StepFacts(n=n, K=K, k=cfg.beam_size, R=R, kk=min(cfg.beam_size, cfg.max_per_parent or cfg.beam_size, self.V),
                          rows=step.live_rows(beam, R), use_dba=use_dba, two=use_dba and K > cfg.beam_size)

    def _stage_mask_and_logits(self, st: _StepFacts, model_out: torch.Tensor):
        """1. The allowed tokens of each row's automaton states (``mask`` [R, W] bits), the output
        guards (``ok_eos`` [R]: may end; with the plain track ``ok_plain`` [R] too), then the output
        layer over every token or a shortlist (``out`` [R, M])."""
        tb, rows = self.tables, st.rows
        mask = tb.build_mask(rows.h, rows.s)  # [R, W] over every token
        acc = tb.accepting(rows.h, rows.s)  # [R]
        ok_plain = None
        if st.two:  # before the shortlist's union
            plain_acc = tb.accepting(rows.h, tracks.plain_view(tb, rows.s))
            ok_eos, ok_plain = step.apply_guards(mask, acc, rows, self.beam, self.cfg, plain_acc)
        else:
            ok_eos = step.apply_guards(mask, acc, rows, self.beam, self.cfg)
        return ok_eos, ok_plain, self._output_layer(model_out, mask)

    def _stage_candidates(self, st: _StepFacts, scored, out, ok_eos, ok_plain):
        """3. Candidates ``cand`` ([n, C] scores, tokens, parents): each row's top-k; with DBA also
        its best phrase advances (:mod:`.dba`); with the plain track the two tracks merged, with
        ``tracks_in`` = (in DBA's track, in the plain track) [n, C] and ``over`` [n, K] (answers
        closed with a phrase unmet). Without the plain track both are ``None``."""
        cfg, beam = self.cfg, self.beam
        cand = step.plain_candidates(scored, st.rows, st.n, st.K, st.kk, cfg.prune_threshold)
        if not st.use_dba:
            return cand, None, None
        # DBA's global top-k and row bests from its own members, its phrase advances from every
        # live hypothesis (plain ones included: a term placed into the best plain prefixes)
        own = step.only_parents(cand, beam.cons) if st.two else cand
        d = dba.candidates(own, st.rows, scored, out, self.tables, k=st.k, kk=st.kk, prune_threshold=cfg.prune_threshold,
                           stats=self.stats, last=step.last_tokens(beam, st.rows))
        dcand = step.with_dba(cand, d, beam.nbanks > 1)
        if not st.two:
            return dcand, None, None
        merged, in_cons, in_plain = tracks.merge_tracks(dcand, step.only_parents(cand, beam.plain), self.V)
        over = self._over_entries(scored, st.rows, ok_eos, ok_plain)  # [n, K]
        return merged, (in_cons, in_plain), over

    def _stage_select(self, st: _StepFacts, cand, adv, tracks_in, over):
        """5. Which candidates ([n, C] bool) become next step's beams: the best ``beam_size``, or
        DBA's bank allocation; with the plain track each track chooses its own ``beam_size``.
        Returns (chosen, chosen by DBA's track or None, chosen by the plain track or None)."""
        cfg, tb, beam, k = self.cfg, self.tables, self.beam, st.k
        cand_s, cand_t, parent, nh, ns, fit = adv  # [n, C] each; ns: [n, C, P] light states
        self.stats.candidates += int(cand_s.shape[0] * cand_s.shape[1])
        if not st.use_dba:
            return step.select(cand_s, fit, k), None, None
        NB = max(sl.num_banks for sl in self.slots)  # the largest bank count, known on the host
        bank = tb.bank(ns, beam.flat_lstate()[parent], cand_t).clamp(max=NB - 1)  # [n, C]
        if not st.two:
            return step.select(cand_s, fit, k, bank, beam.nbanks, NB), None, None
        in_cons, in_plain = tracks_in
        demote = over.gather(1, cand.j)
        in_cons = in_cons & ~tracks.closing_only(tb, beam, over, cand.j, ns)  # a closed answer only moves towards its unmet phrases
        neg = torch.full_like(cand_s, float("-inf"))
        chosen_c = step.select(torch.where(in_cons, cand_s, neg), fit, k, bank, beam.nbanks, NB, demote)
        chosen_p = step.select(torch.where(in_plain, cand_s, neg), tracks.plain_fit(tb, nh, ns, beam.length, cfg.max_new_tokens), k)
        return chosen_c | chosen_p, chosen_c, chosen_p

    def _stage_commit(self, st: _StepFacts, scored, ok_plain, adv, chosen, over) -> list[int]:
        """6. Finished hypotheses enter the pool (:mod:`.pool`); the ``K`` places of each input
        take the chosen candidates in score order; returns the slots that finished."""
        beam, cfg, n, K = self.beam, self.cfg, st.n, st.K
        cand_s, cand_t, parent, nh, ns, _ = adv
        chosen, chosen_c, chosen_p = chosen
        sel_s, sel_i = torch.where(chosen, cand_s, torch.full_like(cand_s, float("-inf"))).topk(K, dim=1)  # [n, K]
        sel_parent, sel_ok = parent.gather(1, sel_i), torch.isfinite(sel_s)
        places = step.keep_places(sel_parent, sel_ok, K)
        sel_s, sel_i, sel_parent, sel_ok = (t.gather(1, places) for t in (sel_s, sel_i, sel_parent, sel_ok))
        pool.pool_eos(beam, st.rows, scored, self._eos, self.tables, cfg.scoring, loose=cfg.end_in_top_k, slots=self.slots)
        if st.two:
            tracks.plain_best(beam, st.rows, scored, ok_plain, cfg.scoring)
            flags = (chosen_c.gather(1, sel_i) & sel_ok, chosen_p.gather(1, sel_i) & sel_ok,
                     over.view(-1)[sel_parent.view(-1)].view(n, K) & sel_ok)
        else:
            flags = (sel_ok, torch.zeros_like(sel_ok), torch.zeros_like(sel_ok))
        # Slots whose beam died without a finished hypothesis keep their best live one as partial.
        dead = ~sel_ok.any(1) & beam.alive.any(1)
        if bool(dead.any()):
            pool.record_partial(beam, dead, beam.alive, self.tables)
        sel_tok = cand_t.gather(1, sel_i)  # [n, K]
        P = beam.P
        sel_l = ns.gather(1, sel_i[:, :, None].expand(n, K, P)) if P else ns[:, :K]  # [n, K, P]
        self._new_beams(sel_s, sel_ok, sel_parent, sel_tok, nh.gather(1, sel_i), sel_l, flags)
        return self._finish_step(st.rows, sel_parent, sel_tok)

    def _over_entries(self, scored, rows, ok_eos, ok_plain) -> torch.Tensor:
        """bool ``[n, K]``: live hypotheses that have closed their answer with a phrase unmet
        (before or at this step; :mod:`.tracks`)."""
        b = self.beam
        n, K = b.alive.shape
        now = torch.zeros(n * K, dtype=torch.bool, device=self.device)
        now[rows.idx] = tracks.would_end(scored, rows, ok_eos, ok_plain)
        return b.over | now.view(n, K)

    def _new_beams(self, sel_s, sel_ok, sel_parent, sel_tok, sel_h, sel_l, flags) -> None:
        """The selected candidates become the beams (history extended by their token);
        ``flags``: their track memberships and ``over`` marks (:mod:`.tracks`)."""
        b, L = self.beam, self.cfg.max_new_tokens
        b.cons, b.plain, b.over = flags
        n, k = sel_s.shape
        new_hist = b.hist.view(n * k, L)[sel_parent.view(-1)].view(n, k, L)
        pos = b.length.clamp(max=L - 1)
        new_hist.scatter_(2, pos[:, None, None].expand(n, k, 1), sel_tok.unsqueeze(-1))
        b.hist = new_hist
        b.cum = torch.where(sel_ok, sel_s, torch.full_like(sel_s, float("-inf")))
        b.alive = sel_ok
        b.hstate = torch.where(sel_ok, sel_h, torch.zeros_like(sel_h))
        b.lstate = torch.where(sel_ok[:, :, None], sel_l, torch.zeros_like(sel_l)) if b.P else sel_l
        b.length = b.length + 1
        for sl in self.slots:
            sl.steps += 1

    def _finish_step(self, rows, sel_parent, sel_tok) -> list[int]:
        """Length limit and stopping; the model rows and tokens of the next call. Returns the
        finished slots (one read from the device: which slots stopped, and how many rows live on)."""
        b, tb, cfg = self.beam, self.tables, self.cfg
        L = cfg.max_new_tokens
        at_limit = b.length >= L
        if any(sl.steps >= L for sl in self.slots):  # the host knows the lengths
            pool.finish_at_limit(b, at_limit, tb, cfg.scoring, cut_tier=2 if cfg.end_in_top_k else 0, slots=self.slots)
        if b.alive.shape[1] > cfg.beam_size and any(sl.n_phrases for sl in self.slots):  # (known on the host)
            tracks.stop_plain(b, tb, cfg)
        done = pool.done_slots(b, at_limit, tb, cfg)
        keep = b.alive & ~done[:, None]
        b.alive = keep
        flat_keep = keep.view(-1)
        info = torch.cat([done.long(), flat_keep.sum().view(1)]).tolist()
        n_keep = info.pop()
        kidx = torch.nonzero_static(flat_keep, size=n_keep).squeeze(1)
        # model row of every beam entry before this step
        n, k = keep.shape
        rowmap = torch.full((n * k,), -1, dtype=torch.long, device=self.device)
        rowmap[rows.idx] = torch.arange(rows.idx.shape[0], device=self.device)
        self.state = self.adapter.select(self.state, rowmap[sel_parent.view(-1)[kidx]])
        self.pending_tokens = sel_tok.view(-1)[kidx]
        return [i for i, d in enumerate(info) if d]

    # ============================================================================ retire
    def _retire(self, done: list[int]) -> list[RawResult]:
        host = pool.host_rows(self.beam, done)
        out = [pool.raw_result(h, self.slots[i], self.slots[i].steps, self.cfg.max_new_tokens) for h, i in zip(host, done)]
        done_set = set(done)
        keep = [i for i in range(len(self.slots)) if i not in done_set]
        self.beam = self.beam.select(torch.tensor(keep, dtype=torch.long, device=self.device))
        self.slots = [self.slots[i] for i in keep]
        return out
