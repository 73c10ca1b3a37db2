"""The search: batched, DBA-banked, streaming beam search with optimal stopping.

One :class:`SearchEngine` decodes a stream of inputs with one model adapter. Up to
``batch_size`` inputs (*slots*) are live at a time, each with a beam of ``beam_size`` hypotheses.
The search state is a handful of tensors of shape ``[slots, beam]`` (scores, automaton states,
token history, the model row of each live hypothesis); the model runs only on live hypotheses.

One step (:meth:`SearchEngine._expand`), for every live hypothesis at once:

1. the allowed-token bitmask of its automaton states (``Tables.build_mask``);
2. masked log-softmax + top-k through the kernel dispatch (one read of the logits), EOS
   log-probabilities by a gather (EOS is allowed only in accepting states);
3. candidates: the top-k of each row; with must-include phrases (DBA) also each row's best
   token and each row's best token advancing each unmet phrase (``best_in_sets``);
4. next automaton states by table lookup, the fewest tokens each candidate still needs to become
   acceptable (candidates that cannot finish within ``max_new_tokens`` are dropped while others can);
5. selection: the best ``beam_size`` (plain) or the DBA bank allocation (see :mod:`.dba`);
6. finished hypotheses enter a per-input n-best pool; an input stops when its n-th best finished
   score reaches the upper bound of its live hypotheses (:mod:`.scoring`), or at the length limit.

Streaming (Yang et al. 2020): when the live inputs drop to ``refill * batch_size``, new inputs are
prefilled and join the batch; a finished input leaves it. With ``expand="least_advanced"``
(Yang et al.'s VAR-STREAM) only the inputs with the fewest output tokens are expanded: the others
are *parked* (their search tensors, pending logits and cache rows set aside) until the newcomers
catch up, then rejoin. With ``expand="all"`` every live input is expanded at every step. The rows
of one input never interact with other rows, and padding is masked exactly, so an input's result
does not depend on its batch or on the schedule.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Literal, Sequence

import torch

from . import _kernels
from .dba import allocate, num_banks
from .guards import ban_repeated_ngrams, eos_allowed
from .scoring import Scoring
from .tables import INF_DIST, InputConstraints, Tables

__all__ = ["SearchConfig", "Request", "RawHypothesis", "RawResult", "SearchEngine", "SearchStats"]

NEG_INF = float("-inf")


@dataclass(frozen=True)
class SearchConfig:
    beam_size: int = 5
    max_new_tokens: int = 64
    nbest: int = 1
    scoring: Scoring = Scoring()
    target_length: int | None = None
    length_ratio: float | None = None
    renormalize: bool = False
    prune_threshold: float | None = None
    max_per_parent: int | None = None
    dba: bool = True
    stopping: Literal["optimal", "exhaustive"] = "optimal"
    batch_size: int = 8
    refill: float = 1 / 6
    streaming: bool = True
    expand: Literal["all", "least_advanced"] = "all"
    kernel_backend: str = "auto"
    min_new_tokens: int = 0
    no_repeat_ngram: int = 0


@dataclass
class Request:
    index: int
    ids: Sequence[int]
    constraints: InputConstraints
    error: str | None = None


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


# Search tensors with one entry per slot (first dimension), moved together when slots leave,
# are parked, or rejoin.
_SLOT_TENSORS = ("cum", "alive", "hist", "hstate", "lstate", "length", "target", "nbanks", "hoff", "loff", "fin_rank",
                 "fin_logp", "fin_len", "fin_hist", "fin_eos", "fin_met", "part_logp", "part_len", "part_hist", "part_met")


@dataclass
class _Parked:
    """Inputs set aside by the least-advanced schedule: their slots, search tensors, the logits
    their live rows wait to expand, and their model state (cache rows)."""

    slots: list
    tensors: dict
    logits: torch.Tensor
    state: object

    @property
    def min_length(self) -> int:
        return int(self.tensors["length"].min())


@dataclass
class _Slot:
    req: Request
    n_phrases: int
    num_banks: int
    target: float
    warnings: list[str]


class SearchEngine:
    def __init__(self, adapter, config: SearchConfig, *, eos_ids: Sequence[int], device):
        self.adapter = adapter
        self.cfg = config
        self.eos_ids = tuple(int(e) for e in eos_ids)
        self.device = torch.device(device)
        self.V = int(adapter.vocab_size)
        self.stats = SearchStats()
        self._eos = torch.tensor(self.eos_ids, dtype=torch.long, device=self.device)

    # ============================================================================ driver
    def run(self, requests: Iterable[Request]) -> Iterator[RawResult]:
        """Decode ``requests``; yield each result as soon as its input finishes."""
        cfg = self.cfg
        pending = iter(requests)
        exhausted = False
        self._reset()
        # Models with absolute decoder positions cannot take rows mid-decode: refill when empty.
        can_join = cfg.streaming and getattr(self.adapter, "supports_refill", True)
        threshold = cfg.refill * cfg.batch_size if can_join else 0
        while True:
            # ---- refill -------------------------------------------------------------------
            live = len(self.slots) + (len(self.parked.slots) if self.parked else 0)
            if not exhausted and (live == 0 or live <= threshold):
                batch: list[Request] = []
                while len(batch) + live < cfg.batch_size:
                    try:
                        req = next(pending)
                    except StopIteration:
                        exhausted = True
                        break
                    if req.error is not None:
                        yield RawResult(req.index, [], 0, [], req.error)
                        continue
                    batch.append(req)
                if batch:
                    self._unpark()  # the pooled tables are rebuilt over every live input
                    new_logits, new_state = self._admit(batch)
                    self._join(new_logits, new_state)
            if cfg.expand == "least_advanced":  # (nothing is ever parked otherwise)
                self._schedule()
            if not self.slots:
                if exhausted:
                    return
                continue
            # ---- one step -------------------------------------------------------------------
            done = self._expand(self.logits)
            self.stats.steps += 1
            if self.parked:
                self.stats.paused += len(self.parked.slots)
            if done:
                for res in self._retire(done):
                    yield res
            if self.slots:
                tokens = self.pending_tokens
                self.logits = self.adapter.step(self.state, tokens)
                self.stats.model_rows += int(tokens.shape[0])
            else:
                self.logits = None
                self.state = None

    # ============================================================================ schedule
    def _schedule(self) -> None:
        """Yang et al.'s VAR-STREAM: expand only the inputs with the fewest output tokens. Parked
        inputs rejoin when the others have caught up with them (or have all finished)."""
        if self.parked is not None and (not self.slots or int(self.length.min()) >= self.parked.min_length):
            self._unpark()
        if len(self.slots) > 1:
            ahead = self.length > self.length.min()
            if bool(ahead.any()):
                self._park(ahead)

    def _rows_of(self, which: torch.Tensor) -> torch.Tensor:
        """Model rows of the slots in bool ``which`` [n] (rows are the live beam entries in order)."""
        flat = self.alive.reshape(-1)
        row_id = torch.cumsum(flat, 0) - 1
        return row_id[flat & which[:, None].expand_as(self.alive).reshape(-1)]

    def _park(self, which: torch.Tensor) -> None:
        """Move the slots in ``which`` out of the batch (into ``self.parked``)."""
        rows_out, rows_in = self._rows_of(which), self._rows_of(~which)
        out_i, in_i = torch.nonzero(which).flatten(), torch.nonzero(~which).flatten()
        flags = which.tolist()
        group = _Parked(
            [sl for sl, f in zip(self.slots, flags) if f],
            {name: getattr(self, name).index_select(0, out_i) for name in _SLOT_TENSORS},
            self.logits.index_select(0, rows_out),
            self.adapter.take(self.state, rows_out),
        )
        for name in _SLOT_TENSORS:
            setattr(self, name, getattr(self, name).index_select(0, in_i))
        self.slots = [sl for sl, f in zip(self.slots, flags) if not f]
        self.logits = self.logits.index_select(0, rows_in)
        self.state = self.adapter.select(self.state, rows_in)
        if self.parked is not None:  # one parked group: merge
            old = self.parked
            group = _Parked(old.slots + group.slots, {n: torch.cat([old.tensors[n], group.tensors[n]]) for n in _SLOT_TENSORS},
                            torch.cat([old.logits, group.logits]), self.adapter.concat([old.state, group.state]))
        self.parked = group

    def _unpark(self) -> None:
        """Parked slots rejoin the batch (after the live ones)."""
        group, self.parked = self.parked, None
        if group is None:
            return
        for name in _SLOT_TENSORS:
            setattr(self, name, torch.cat([getattr(self, name), group.tensors[name]]))
        self.slots = self.slots + group.slots
        self._join(group.logits, group.state)

    def _join(self, logits: torch.Tensor, state) -> None:
        """Rows of ``logits``/``state`` join the batch's model rows (after the live ones)."""
        if self.logits is None:
            self.logits, self.state = logits, state
        else:
            self.logits = torch.cat([self.logits, logits])
            self.state = self.adapter.concat([self.state, state])

    # ============================================================================ state
    def _reset(self) -> None:
        k, L = self.cfg.beam_size, self.cfg.max_new_tokens
        dev = self.device
        self.slots: list[_Slot] = []
        self.tables: Tables | None = None
        self.logits = None
        self.state = None
        self.parked: _Parked | None = None
        self.P = 0
        z = lambda *s, dtype=torch.long: torch.zeros(*s, dtype=dtype, device=dev)  # noqa: E731
        self.cum = torch.zeros(0, k, device=dev)
        self.alive = z(0, k, dtype=torch.bool)
        self.hist = z(0, k, L)
        self.hstate = z(0, k)
        self.lstate = z(0, k, 0)
        self.length = z(0)
        self.target = torch.zeros(0, device=dev)
        self.nbanks = z(0)  # DBA banks per slot (1 = no must-include phrase)
        self.hoff = z(0)
        self.loff = z(0, 0)
        nb = self.cfg.nbest
        self.fin_rank = torch.full((0, nb), NEG_INF, device=dev)
        self.fin_logp = torch.full((0, nb), NEG_INF, device=dev)
        self.fin_len = z(0, nb)
        self.fin_hist = z(0, nb, L)
        self.fin_eos = z(0, nb)
        self.fin_met = z(0, nb, 0, dtype=torch.bool)
        self.part_logp = torch.full((0,), NEG_INF, device=dev)
        self.part_len = z(0)
        self.part_hist = z(0, L)
        self.part_met = z(0, 0, dtype=torch.bool)
        self.pending_tokens = z(0)

    def _admit(self, batch: list[Request]):
        """Prefill ``batch`` and append its slots (model rows go after the live ones)."""
        cfg, dev, k, L = self.cfg, self.device, self.cfg.beam_size, self.cfg.max_new_tokens
        logits, state = self.adapter.prefill([r.ids for r in batch])
        self.stats.model_rows += len(batch)
        self.stats.refills += 1
        # Rebuild the pooled tables when new automata arrive (keeping only the live inputs' ones)
        # and move the live hypotheses' states to their new offsets.
        tables = self.tables
        if tables is None or not all(tables.contains(r.constraints) for r in batch):
            live = [sl.req.constraints for sl in self.slots]
            tables = Tables(live + [r.constraints for r in batch], vocab_width=self.V, eos_ids=self.eos_ids, device=dev)
            P = max(tables.P, 0)
            if self.slots:
                new_hoff = torch.tensor([tables.hard_offset(c) for c in live], device=dev, dtype=torch.long)
                new_loff = torch.tensor([tables.light_offsets(c, P) for c in live], device=dev, dtype=torch.long).view(len(live), P)
                self.lstate = _pad_last(self.lstate, P)[..., :P]
                self.loff = _pad_last(self.loff, P)[..., :P]
                moved = self.hstate >= 2  # states of a real hard automaton (0/1 are FREE/TEXT)
                self.hstate = torch.where(moved, self.hstate + (new_hoff - self.hoff)[:, None], self.hstate)
                self.lstate = self.lstate + (new_loff - self.loff)[:, None, :]
                self.hoff, self.loff = new_hoff, new_loff
            self.tables = tables
        P = tables.P
        if P != self.lstate.shape[2]:
            self.lstate = _pad_last(self.lstate, P)[..., :P]
            self.loff = _pad_last(self.loff, P)[..., :P]
        self.P = P
        self.fin_met = _pad_last(self.fin_met, P)[..., :P]
        self.part_met = _pad_last(self.part_met, P)[..., :P]

        n = len(batch)
        hs, ls, ho, lo = [], [], [], []
        for r in batch:
            hs.append(tables.hard_start(r.constraints))
            ls.append(tables.light_starts(r.constraints, P))
            ho.append(tables.hard_offset(r.constraints))
            lo.append(tables.light_offsets(r.constraints, P))
        h0 = torch.tensor(hs, device=dev)
        l0 = torch.tensor(ls, device=dev, dtype=torch.long).view(n, P)
        lb = tables.lower_bound(h0, l0)
        new_slots = []
        for i, r in enumerate(batch):
            c = r.constraints
            warn = []
            d = int(lb[i])
            if d >= INF_DIST:
                warn.append("the constraints cannot be satisfied from the start state (no accepting state is reachable)")
            elif d > L:
                what = [f"phrase {t!r}" for t in c.phrase_texts] + (["the prefix"] if any(a.kind == "prefix" for a in c.lights) else [])
                warn.append(
                    f"max_new_tokens={L} is too small: satisfying the constraints ({', '.join(what) or 'word list'}) "
                    f"needs at least {d} tokens; returning the best partial output"
                )
            nbanks = num_banks(c.lights[: c.n_phrases])
            if cfg.target_length is not None:
                tgt = float(cfg.target_length)
            elif cfg.length_ratio is not None:
                tgt = float(cfg.length_ratio) * len(r.ids)
            else:
                tgt = float(L)
            new_slots.append(_Slot(r, c.n_phrases, nbanks, tgt, warn))
        self.slots.extend(new_slots)
        # Beams: one live hypothesis per new input (beam position 0).
        nb = cfg.nbest
        cat = lambda a, b: torch.cat([a, b])  # noqa: E731
        cum = torch.full((n, k), NEG_INF, device=dev)
        cum[:, 0] = 0.0
        alive = torch.zeros(n, k, dtype=torch.bool, device=dev)
        alive[:, 0] = True
        self.cum = cat(self.cum, cum)
        self.alive = cat(self.alive, alive)
        self.hist = cat(self.hist, torch.zeros(n, k, L, dtype=torch.long, device=dev))
        self.hstate = cat(self.hstate, h0[:, None].expand(n, k).clone())
        self.lstate = cat(self.lstate, l0[:, None, :].expand(n, k, P).clone())
        self.length = cat(self.length, torch.zeros(n, dtype=torch.long, device=dev))
        self.target = cat(self.target, torch.tensor([s.target for s in new_slots], device=dev))
        self.nbanks = cat(self.nbanks, torch.tensor([s.num_banks for s in new_slots], dtype=torch.long, device=dev))
        self.hoff = cat(self.hoff, torch.tensor(ho, device=dev, dtype=torch.long))
        self.loff = cat(self.loff, torch.tensor(lo, device=dev, dtype=torch.long).view(n, P))
        self.fin_rank = cat(self.fin_rank, torch.full((n, nb), NEG_INF, device=dev))
        self.fin_logp = cat(self.fin_logp, torch.full((n, nb), NEG_INF, device=dev))
        self.fin_len = cat(self.fin_len, torch.zeros(n, nb, dtype=torch.long, device=dev))
        self.fin_hist = cat(self.fin_hist, torch.zeros(n, nb, L, dtype=torch.long, device=dev))
        self.fin_eos = cat(self.fin_eos, torch.full((n, nb), -1, dtype=torch.long, device=dev))
        self.fin_met = cat(self.fin_met, torch.zeros(n, nb, P, dtype=torch.bool, device=dev))
        self.part_logp = cat(self.part_logp, torch.full((n,), NEG_INF, device=dev))
        self.part_len = cat(self.part_len, torch.zeros(n, dtype=torch.long, device=dev))
        self.part_hist = cat(self.part_hist, torch.zeros(n, L, dtype=torch.long, device=dev))
        self.part_met = cat(self.part_met, torch.zeros(n, P, dtype=torch.bool, device=dev))
        return logits, state

    def _flat_lstate(self) -> torch.Tensor:
        n, k, P = self.lstate.shape
        return self.lstate.reshape(n * k, P)

    # ============================================================================ one step
    def _expand(self, logits: torch.Tensor) -> list[int]:
        """Expand every live hypothesis; update beams and finished pools; return finished slots."""
        cfg, tb = self.cfg, self.tables
        n, k = self.alive.shape
        P, L, V = self.P, cfg.max_new_tokens, self.V
        dev = self.device
        flat_alive = self.alive.view(-1)
        ridx = flat_alive.nonzero().squeeze(1)  # [R] beam entry of each model row (row order)
        R = int(ridx.shape[0])
        h = self.hstate.view(-1)[ridx]  # [R]
        s = self._flat_lstate()[ridx]  # [R, P]
        c = self.cum.view(-1)[ridx]  # [R]
        mask = tb.build_mask(h, s)  # [R, W]
        row_len = self.length.repeat_interleave(k)[ridx]  # output tokens so far, per row
        if cfg.no_repeat_ngram:
            ban_repeated_ngrams(mask, self.hist.view(n * k, L)[ridx], row_len, cfg.no_repeat_ngram)
        kk = min(k, cfg.max_per_parent or k, V)
        rows = torch.arange(R, device=dev)
        top = _kernels.masked_topk(logits, mask, rows, c, kk, allowed_lse=cfg.renormalize, backend=cfg.kernel_backend)
        self.stats.logits_elements += R * V
        lse = top.lse
        shift = torch.zeros_like(lse)
        eos_lp = logits.index_select(1, self._eos) - lse[:, None]  # [R, E]
        ok_eos = tb.accepting(h, s)
        if cfg.min_new_tokens:
            ok_eos = ok_eos & eos_allowed(row_len, cfg.min_new_tokens)
        if cfg.renormalize:  # normalizer over the allowed tokens, EOS included where allowed
            eos_allowed_lse = torch.logsumexp(torch.where(ok_eos[:, None], logits.index_select(1, self._eos), torch.full_like(eos_lp, NEG_INF)), 1)
            total = torch.logaddexp(top.allowed_lse, eos_allowed_lse)
            shift = lse - total
            eos_lp = eos_lp + shift[:, None]
        tok_scores = top.scores + shift[:, None]  # [R, kk]
        # ---- finished candidates (EOS) --------------------------------------------------------
        eos_best, eos_which = eos_lp.max(1)
        fin_raw = torch.where(ok_eos, c + eos_best, torch.full_like(c, NEG_INF))  # [R]
        # ---- text candidates, per slot ---------------------------------------------------------
        cand_s = torch.full((n * k, kk), NEG_INF, device=dev)
        cand_t = torch.full((n * k, kk), -1, dtype=torch.long, device=dev)
        cand_s[ridx] = tok_scores
        cand_t[ridx] = top.tokens
        cand_s = cand_s.view(n, k * kk)
        cand_t = cand_t.view(n, k * kk)
        cand_j = torch.arange(k, device=dev).repeat_interleave(kk).expand(n, k * kk)  # parent beam position
        if cfg.prune_threshold is not None:  # absolute threshold (Freitag & Al-Onaizan 2017)
            fin_slot = torch.full((n * k,), NEG_INF, device=dev)
            fin_slot[ridx] = fin_raw
            best = torch.maximum(cand_s.max(1).values, fin_slot.view(n, k).max(1).values)
            cand_s = torch.where(cand_s < best[:, None] - cfg.prune_threshold, torch.full_like(cand_s, NEG_INF), cand_s)
        has_phr = self.nbanks > 1
        use_dba = cfg.dba and any(sl.n_phrases for sl in self.slots)
        if use_dba:
            # Slots with phrases take DBA's candidate set, the others keep the plain one, so an
            # input's result does not depend on what else is in the batch.
            d_s, d_t, d_j = self._dba_candidates(logits, mask, lse, shift, ridx, s, c, cand_s, cand_t, cand_j, kk)
            N = max(d_s.shape[1], cand_s.shape[1])
            pad = lambda x, v: torch.nn.functional.pad(x, (0, N - x.shape[1]), value=v)  # noqa: E731
            hp = has_phr[:, None]
            cand_s = torch.where(hp, pad(d_s, NEG_INF), pad(cand_s, NEG_INF))
            cand_t = torch.where(hp, pad(d_t, -1), pad(cand_t, -1))
            cand_j = torch.where(hp, pad(d_j, 0), pad(cand_j, 0))
        cand_t = torch.where(torch.isfinite(cand_s), cand_t, torch.zeros_like(cand_t))
        # ---- next states of every candidate ---------------------------------------------------
        slot = torch.arange(n, device=dev)[:, None].expand_as(cand_j)
        parent = slot * k + cand_j  # flat beam entry
        ph = self.hstate.view(-1)[parent]
        ps = self._flat_lstate()[parent]
        nh = tb.hard_next(ph, cand_t)
        ns = tb.light_next(ps, cand_t)
        valid = torch.isfinite(cand_s) & (nh >= 0) & ((ns >= 0).all(-1) if P else True)
        cand_s = torch.where(valid, cand_s, torch.full_like(cand_s, NEG_INF))
        nh, ns = nh.clamp(min=0), ns.clamp(min=0)
        t_next = self.length[:, None] + 1
        feasible = (t_next + tb.lower_bound(nh, ns)) <= L
        self.stats.candidates += int(cand_s.shape[0] * cand_s.shape[1])
        # ---- selection ----------------------------------------------------------------------
        if use_dba:
            bank = tb.bank(ns)
            nbk = self.nbanks
            chosen = _select(cand_s, feasible, bank.clamp(max=int(nbk.max()) - 1), nbk, k)
        else:
            chosen = _select(cand_s, feasible, None, None, k)
        sel_s, sel_i = torch.where(chosen, cand_s, torch.full_like(cand_s, NEG_INF)).topk(k, dim=1)  # [n, k]
        sel_ok = torch.isfinite(sel_s)
        sel_parent = parent.gather(1, sel_i)
        sel_tok = cand_t.gather(1, sel_i)
        sel_h = nh.gather(1, sel_i)
        sel_l = ns.gather(1, sel_i[:, :, None].expand(n, k, P)) if P else ns[:, :k]
        # ---- finished pool update -------------------------------------------------------------
        self._pool_eos(ridx, fin_raw, eos_which, s)
        # Slots whose beam died without a finished hypothesis keep their best live one as partial.
        dead = ~sel_ok.any(1) & self.alive.any(1)
        if bool(dead.any()):
            self._record_partial_from_beam(dead)
        # ---- new beams ---------------------------------------------------------------------------
        flat_parent = sel_parent.view(-1)
        new_hist = self.hist.view(n * k, L)[flat_parent].view(n, k, L)
        pos = self.length.clamp(max=L - 1)
        new_hist.scatter_(2, pos[:, None, None].expand(n, k, 1), sel_tok.unsqueeze(-1))
        # model row of every beam entry before this step
        rowmap = torch.full((n * k,), -1, dtype=torch.long, device=dev)
        rowmap[ridx] = torch.arange(R, device=dev)
        self.hist = new_hist
        self.cum = torch.where(sel_ok, sel_s, torch.full_like(sel_s, NEG_INF))
        self.alive = sel_ok
        self.hstate = torch.where(sel_ok, sel_h, torch.zeros_like(sel_h))
        self.lstate = torch.where(sel_ok[:, :, None], sel_l, torch.zeros_like(sel_l)) if P else sel_l
        self.length = self.length + 1
        # ---- length limit: the beam finishes here ------------------------------------------------
        at_limit = self.length >= L
        if bool(at_limit.any()):
            self._finish_at_limit(at_limit)
        # ---- stopping -----------------------------------------------------------------------
        done = self._done(at_limit)
        # ---- rows for the next model call --------------------------------------------------------
        keep = self.alive & ~done[:, None]
        self.alive = keep
        new_rows = rowmap[flat_parent[keep.view(-1)]]
        self.state = self.adapter.select(self.state, new_rows)
        self.pending_tokens = sel_tok.view(-1)[keep.view(-1)]
        return torch.nonzero(done).flatten().tolist()

    def _dba_candidates(self, logits, mask, lse, shift, ridx, s, c, cand_s, cand_t, cand_j, kk):
        """Post & Vilar's candidate set: global top-k, each row's best, and for each unmet phrase
        each row's best token completing a word of it (or, when none is allowed, its best other
        advancing token); duplicates removed."""
        cfg, tb = self.cfg, self.tables
        n, k = self.alive.shape
        P, V, dev = self.P, self.V, self.device
        R = int(ridx.shape[0])
        # global top-k of the slot
        g_s, g_i = cand_s.topk(min(k, cand_s.shape[1]), dim=1)
        g_t, g_j = cand_t.gather(1, g_i), cand_j.gather(1, g_i)
        # each row's best
        b_s = cand_s.view(n, k, kk)[:, :, 0]
        b_t = cand_t.view(n, k, kk)[:, :, 0]
        b_j = torch.arange(k, device=dev).expand(n, k)
        # best advancing token per (row, phrase)
        sets = tb.advance_sets(s)  # [R, 2P, C]: word-completing tokens, then the other advancing ones
        a_t, a_lp = _kernels.best_in_sets(logits, mask, torch.arange(R, device=dev), sets, lse)
        self.stats.advance_elements += int(sets.numel())
        a_lp = _prefer_whole_words(a_lp)
        P = sets.shape[1]
        a_full_s = torch.full((n * k, P), NEG_INF, device=dev)
        a_full_t = torch.full((n * k, P), -1, dtype=torch.long, device=dev)
        a_full_s[ridx] = c[:, None] + a_lp + shift[:, None]
        a_full_t[ridx] = a_t
        a_s, a_t = a_full_s.view(n, k * P), a_full_t.view(n, k * P)
        a_j = torch.arange(k, device=dev).repeat_interleave(P).expand(n, k * P)
        if cfg.prune_threshold is not None:
            best = cand_s.max(1).values
            a_s = torch.where(a_s < best[:, None] - cfg.prune_threshold, torch.full_like(a_s, NEG_INF), a_s)
        S = torch.cat([g_s, b_s, a_s], 1)
        T = torch.cat([g_t, b_t, a_t], 1)
        J = torch.cat([g_j, b_j, a_j], 1)
        ok = torch.isfinite(S) & (T >= 0)
        S = torch.where(ok, S, torch.full_like(S, NEG_INF))
        # dedupe (parent, token): keep the first occurrence
        N = S.shape[1]
        key = torch.where(ok, J * V + T, -1 - torch.arange(N, device=dev).expand(n, N))
        sk, order = torch.sort(key, dim=1, stable=True)
        dup_sorted = torch.zeros_like(sk, dtype=torch.bool)
        dup_sorted[:, 1:] = sk[:, 1:] == sk[:, :-1]
        dup = torch.zeros_like(dup_sorted).scatter(1, order, dup_sorted)
        S = torch.where(dup, torch.full_like(S, NEG_INF), S)
        return S, T, J

    def _pool_eos(self, ridx, fin_raw, eos_which, s) -> None:
        """Merge this step's EOS candidates into each slot's n-best pool."""
        n, k = self.alive.shape
        L, P, dev = self.cfg.max_new_tokens, self.P, self.device
        nb = self.cfg.nbest
        raw = torch.full((n * k,), NEG_INF, device=dev)
        raw[ridx] = fin_raw
        if not bool(torch.isfinite(raw).any()):
            return
        eos_tok = torch.full((n * k,), -1, dtype=torch.long, device=dev)
        eos_tok[ridx] = self._eos[eos_which]
        met = torch.zeros(n * k, P, dtype=torch.bool, device=dev)
        if P:
            met[ridx] = self.tables.met(s)
        raw = raw.view(n, k)
        length = (self.length + 1)[:, None].expand(n, k)
        rank = self.cfg.scoring.rank(raw, length, self.target[:, None].expand(n, k))
        rank = torch.where(torch.isfinite(raw), rank, torch.full_like(rank, NEG_INF))
        all_rank = torch.cat([self.fin_rank, rank], 1)  # [n, nb + k]
        best, idx = all_rank.topk(nb, dim=1)
        from_pool = idx < nb
        pi = idx.clamp(max=nb - 1)
        ci = (idx - nb).clamp(min=0)
        gather2 = lambda a, i: a.gather(1, i)  # noqa: E731
        self.fin_logp = torch.where(from_pool, gather2(self.fin_logp, pi), gather2(raw, ci))
        self.fin_len = torch.where(from_pool, gather2(self.fin_len, pi), gather2(length, ci))
        self.fin_eos = torch.where(from_pool, gather2(self.fin_eos, pi), gather2(eos_tok.view(n, k), ci))
        hist_c = self.hist.gather(1, ci[:, :, None].expand(n, nb, L))
        hist_p = self.fin_hist.gather(1, pi[:, :, None].expand(n, nb, L))
        self.fin_hist = torch.where(from_pool[:, :, None], hist_p, hist_c)
        if P:
            met_c = met.view(n, k, P).gather(1, ci[:, :, None].expand(n, nb, P))
            met_p = self.fin_met.gather(1, pi[:, :, None].expand(n, nb, P))
            self.fin_met = torch.where(from_pool[:, :, None], met_p, met_c)
        self.fin_rank = best

    def _record_partial_from_beam(self, which: torch.Tensor) -> None:
        """Best live hypothesis of the slots in ``which`` becomes their partial (incomplete) output."""
        n, k = self.alive.shape
        sc = torch.where(self.alive, self.cum, torch.full_like(self.cum, NEG_INF))
        best, j = sc.max(1)
        better = which & (best > self.part_logp)
        self.part_logp = torch.where(better, best, self.part_logp)
        self.part_len = torch.where(better, self.length, self.part_len)
        hist = self.hist[torch.arange(n, device=self.device), j]
        self.part_hist = torch.where(better[:, None], hist, self.part_hist)
        if self.P:
            met = self.tables.met(self.lstate[torch.arange(n, device=self.device), j])
            self.part_met = torch.where(better[:, None], met, self.part_met)

    def _finish_at_limit(self, at_limit: torch.Tensor) -> None:
        """Hypotheses reaching ``max_new_tokens``: accepting ones finish (reason "length"), the
        best other one is kept as the partial output."""
        n, k = self.alive.shape
        L, P, nb, dev = self.cfg.max_new_tokens, self.P, self.cfg.nbest, self.device
        acc = self.tables.accepting(self.hstate.view(-1), self._flat_lstate()).view(n, k)
        fin = self.alive & acc & at_limit[:, None]
        if bool(fin.any()):
            raw = torch.where(fin, self.cum, torch.full_like(self.cum, NEG_INF))
            length = self.length[:, None].expand(n, k)
            rank = self.cfg.scoring.rank(raw, length, self.target[:, None].expand(n, k))
            rank = torch.where(fin, rank, torch.full_like(rank, NEG_INF))
            all_rank = torch.cat([self.fin_rank, rank], 1)
            best, idx = all_rank.topk(nb, dim=1)
            from_pool = idx < nb
            pi, ci = idx.clamp(max=nb - 1), (idx - nb).clamp(min=0)
            self.fin_logp = torch.where(from_pool, self.fin_logp.gather(1, pi), raw.gather(1, ci))
            self.fin_len = torch.where(from_pool, self.fin_len.gather(1, pi), length.gather(1, ci))
            self.fin_eos = torch.where(from_pool, self.fin_eos.gather(1, pi), torch.full_like(pi, -1))
            self.fin_hist = torch.where(
                from_pool[:, :, None], self.fin_hist.gather(1, pi[:, :, None].expand(n, nb, L)), self.hist.gather(1, ci[:, :, None].expand(n, nb, L))
            )
            if P:
                met = self.tables.met(self._flat_lstate()).view(n, k, P)
                self.fin_met = torch.where(
                    from_pool[:, :, None], self.fin_met.gather(1, pi[:, :, None].expand(n, nb, P)), met.gather(1, ci[:, :, None].expand(n, nb, P))
                )
            self.fin_rank = best
        rest = self.alive & ~acc & at_limit[:, None]
        if bool(rest.any()):
            saved = self.alive
            self.alive = rest
            self._record_partial_from_beam(rest.any(1))
            self.alive = saved

    def _done(self, at_limit: torch.Tensor) -> torch.Tensor:
        cfg, tb = self.cfg, self.tables
        n, k = self.alive.shape
        P = self.P
        alive = self.alive & ~at_limit[:, None]
        no_live = ~alive.any(1)
        if cfg.stopping != "optimal":
            return at_limit | no_live
        lb = tb.lower_bound(self.hstate.view(-1), self._flat_lstate()).view(n, k)
        feasible = alive & (self.length[:, None] + lb <= cfg.max_new_tokens)
        ub = cfg.scoring.upper_bound(self.cum, self.length[:, None].expand(n, k), lb.clamp(max=cfg.max_new_tokens), self.target[:, None].expand(n, k), cfg.max_new_tokens)
        ub = torch.where(feasible, ub, torch.full_like(ub, NEG_INF)).max(1).values
        nth = self.fin_rank[:, -1]
        have = torch.isfinite(nth)
        certified = have & (nth >= ub)
        return at_limit | no_live | certified

    # ============================================================================ retire
    def _retire(self, done: list[int]) -> list[RawResult]:
        n, k = self.alive.shape
        out = []
        for i in done:
            out.append(self._result(i))
        keep = torch.ones(n, dtype=torch.bool, device=self.device)
        keep[torch.tensor(done, device=self.device)] = False
        ki = torch.nonzero(keep).flatten()
        for name in _SLOT_TENSORS:
            setattr(self, name, getattr(self, name).index_select(0, ki))
        done_set = set(done)
        self.slots = [s for i, s in enumerate(self.slots) if i not in done_set]
        return out

    def _result(self, i: int) -> RawResult:
        slot = self.slots[i]
        np_ = slot.n_phrases
        hyps: list[RawHypothesis] = []
        rank = self.fin_rank[i].tolist()
        logp = self.fin_logp[i].tolist()
        lens = self.fin_len[i].tolist()
        eos = self.fin_eos[i].tolist()
        for j in range(self.cfg.nbest):
            if not math.isfinite(rank[j]):
                continue
            e = eos[j]
            ntext = lens[j] - (1 if e >= 0 else 0)
            met = tuple(bool(x) for x in self.fin_met[i, j, :np_].tolist()) if np_ else ()
            hyps.append(
                RawHypothesis(self.fin_hist[i, j, :ntext].tolist(), e if e >= 0 else None, rank[j], logp[j], True, met,
                              "eos" if e >= 0 else "length")
            )
        warn = list(slot.warnings)
        if not hyps:
            plen = int(self.part_len[i])
            met = tuple(bool(x) for x in self.part_met[i, :np_].tolist()) if np_ else ()
            pl = float(self.part_logp[i])
            hyps.append(RawHypothesis(self.part_hist[i, :plen].tolist(), None, pl, pl, False, met, "incomplete"))
            unmet = [t for t, m in zip(slot.req.constraints.phrase_texts, met) if not m]
            why = f"phrases not met: {unmet}" if unmet else "the output does not end in an accepting state"
            warn.append(
                f"input {slot.req.index}: no output satisfies the constraints within max_new_tokens="
                f"{self.cfg.max_new_tokens} ({why}); returning the best partial output (satisfied=False)"
            )
        return RawResult(slot.req.index, hyps, int(self.length[i]), warn)


def _prefer_whole_words(a_lp: torch.Tensor) -> torch.Tensor:
    """``[R, 2P]`` best-advancing scores (word-completing sets, then the others): a phrase's
    partial advance (" T" for "Things") is offered only where no allowed token completes the word,
    so DBA never plants a prefix the model may abandon as a fragment."""
    P = a_lp.shape[1] // 2
    done = torch.isfinite(a_lp[:, :P])
    return torch.cat([a_lp[:, :P], a_lp[:, P:].masked_fill(done, NEG_INF)], 1)


def _pad_last(x: torch.Tensor, size: int) -> torch.Tensor:
    """Zero-pad the last dimension of ``x`` up to ``size`` (no-op when already as large)."""
    extra = size - x.shape[-1]
    return torch.nn.functional.pad(x, (0, extra)) if extra > 0 else x


def _select(score: torch.Tensor, feasible: torch.Tensor, bank, num_banks, k: int) -> torch.Tensor:
    """bool ``[n, N]``: at most ``k`` candidates per row.

    Feasible candidates first: by DBA bank allocation when ``bank`` is given (then the best
    remaining feasible ones fill unused slots), else simply the best ``k``. A row without any
    feasible candidate keeps its best ``k`` infeasible ones (best partial output).
    """
    n, N = score.shape
    dev = score.device
    valid = torch.isfinite(score)
    vf = valid & feasible
    neg = torch.full_like(score, NEG_INF)
    if bank is None:
        chosen = _top_mask(torch.where(vf, score, neg), k)
    else:
        NB = int(num_banks.max())
        b = torch.where(vf, bank, torch.full_like(bank, NB))
        counts = torch.zeros(n, NB + 1, dtype=torch.long, device=dev).scatter_add_(1, b, torch.ones_like(b))[:, :NB]
        alloc = allocate(counts, num_banks, k)  # [n, NB], sum == k per row
        # rank of each candidate within its bank, best score first
        o1 = torch.argsort(torch.where(vf, score, neg), dim=1, descending=True, stable=True)
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
        chosen = torch.zeros_like(vf).scatter(1, order, take_sorted)
        # fill slots the allocation could not use with the best remaining feasible candidates
        room = (k - chosen.sum(1)).clamp(min=0)
        rest = torch.where(vf & ~chosen, score, neg)
        chosen |= _top_mask(rest, room)
    none = ~vf.any(1)
    if bool(none.any()):
        fallback = _top_mask(torch.where(valid, score, neg), k)
        chosen = torch.where(none[:, None], fallback, chosen)
    return chosen


def _top_mask(score: torch.Tensor, k) -> torch.Tensor:
    """bool mask of the ``k`` (int or ``[n]``) best finite entries per row."""
    n, N = score.shape
    order = torch.argsort(score, dim=1, descending=True, stable=True)
    pos = torch.arange(N, device=score.device).expand(n, N)
    kk = k if isinstance(k, torch.Tensor) else torch.full((n,), int(k), device=score.device)
    take_sorted = (pos < kk[:, None]) & torch.isfinite(score.gather(1, order))
    return torch.zeros_like(take_sorted).scatter(1, order, take_sorted)
