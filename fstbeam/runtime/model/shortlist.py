"""Shortlist output layer: logits only for the tokens some live hypothesis may take next.

On the default model the output projection (262,144 x 640) is most of a decode step, and under
constraints most of its logits are masked away. Marian's lexical shortlists (Hoang et al. 2018)
compute only the logits of a candidate set; here the automata give the set exactly: the union
of the live rows' allowed-token bitmask rows, plus the EOS ids. When scores are renormalized over
the allowed tokens (``renormalize=True``) nothing outside that set contributes to any score, so:

1. the union ``U`` (sorted ids) is an OR over the mask rows, unpacked once;
2. the rows ``W[U]`` of the output projection are gathered (into a reused buffer: a fresh
   allocation of that size page-faults on every step) and ``hidden @ W[U].T`` computed, with the
   model's bias and final soft-capping (Gemma 2/3), which are elementwise, in the model's order;
3. each row's mask is remapped to the columns of ``U`` and the masked top-k runs over
   ``[R, |U|]``; column ``j`` is token ``U[j]``. ``U`` is sorted, so "lower id first" among ties
   is the same order, and the renormalized scores are the same numbers as with the full head up
   to float rounding (the log-sum-exp is taken over a different set and shifted back).

Whether it pays depends on ``|U|`` against ``V`` and on the rows: :func:`pays` encodes the crossover
measured by ``benchmarks/bench_shortlist.py``.

**Static shortlist.** Steps 1-2 cost a union, a host read (``|U|`` shapes the gather) and a copy
of ``|U|`` weight rows per step. When every input of the batch has a word list or grammar (a hard
automaton), the set ``S`` of tokens that *any* of its states allows is known when the tables are
built (an OR of the artifact's dense mask rows plus its sparse tokens; light automata and output
guards only clear bits). ``W[S]`` is gathered once per model and artifact set and kept
(:class:`OutputHead`), so a step is one ``[R, d] x [d, |S|]`` product and a bit remap, with no
union, no gather and no host read. ``S`` is larger than a step's union (CEFR A1: 21,172 against
about 15,000 for 40 rows) but streaming ``W[S]`` once costs less than reading, writing and reading
again ``W[U]``; it is used while ``|S| <= STATIC_MAX_FRACTION * V`` (the cached rows' memory),
else the per-step union. On CPU a step whose rows need only the tokens earlier steps needed runs
on a plan of those rows only (:mod:`.used_rows`; A1: about 16,200 of the 21,174), and the
gathered rows go through MKL's packed GEMM (:mod:`fstbeam.kernels.packed_gemm`). Every-token
logits (the full head) go into one buffer reused across steps, computed on the CPU in blocks of
the vocabulary (:func:`head_blocks`: MKL is about 1.4x faster that way round, and a row's logits
are the same whatever the rows beside it). The output layer comes from the
model adapter (:meth:`CausalLMAdapter.output_projection`), checked once against the model's own
logits, so a model whose logits are not ``softcap(hidden @ W.T + b)`` (a logit scale, a
non-linear head) keeps the full head.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import torch

from ...errors import DecodeError
from ...kernels.bitmask import pack_bool_mask_torch, unpack_bitmask_torch
from ...kernels.packed_gemm import PackedLinear
from ..config import ShortlistMode
from ..identity import IdentityCache, identity_key
from .used_rows import UsedRows

__all__ = ["OutputHead", "HiddenTap", "probe_output_head", "StepLogits", "Shortlist", "StaticPlan", "pays", "union_ids",
           "sub_mask", "sub_mask_torch", "static_ids", "head_blocks"]

# Measured crossover (benchmarks/bench_shortlist.py -> results/shortlist_crossover.json, 2-core CPU,
# V=262144, d=640): the shortlist step is faster while |U| / V stays below about 0.2 (a loaded
# machine, memory bandwidth shared) to 0.35 (a quiet one) for 5-40 rows; with one row the full
# head is a matrix-vector product that streams W once, and the gather (read, write, read again)
# pays only below about 0.15.
MAX_FRACTION_ONE_ROW = 0.15
MAX_FRACTION = 0.25
# The static shortlist is used up to this share of V: always cheaper than the full head (a subset
# of its rows, streamed once), bounded for the memory of the cached rows (at most 0.35 * 671 MB
# for the default model; CEFR A1 0.08, B1 0.21, B2 0.27).
STATIC_MAX_FRACTION = 0.35
# The full head on the CPU: output rows per GEMM block (:func:`head_blocks`), and the most model
# rows it is used for (measured faster up to 160 rows; a prefill of many rows runs one GEMM).
HEAD_BLOCK = 2048
HEAD_BLOCK_MAX_ROWS = 256
HEAD_MIN_ROWS = 16  # fewer rows are padded (one kernel whatever the rows: see head_blocks)
_STATIC_ENTRIES = 2  # cached row sets per output head (e.g. two word lists used in turn)
# Static rows up to this size are also kept packed for MKL (one more copy; CEFR A1 54 MB, B1
# 142 MB for the default model): :mod:`fstbeam.kernels.packed_gemm`.
PLAN_PACK_MAX_BYTES = 160 << 20


def pays(columns: int, rows: int, vocab: int) -> bool:
    """Whether the shortlist of ``columns`` ids beats the full head for ``rows`` rows."""
    limit = MAX_FRACTION_ONE_ROW if rows <= 1 else MAX_FRACTION
    return columns <= limit * vocab


# ---------------------------------------------------------------------------------------------
# The output layer
# ---------------------------------------------------------------------------------------------
@dataclass(eq=False)
class OutputHead:
    """``logits = softcap(hidden @ weight.T + bias)`` (the model's dtype, then float32)."""

    weight: torch.Tensor  # [V, d], tied embeddings included
    bias: torch.Tensor | None  # [V]
    softcap: float | None
    _buf: torch.Tensor | None = field(default=None, repr=False)  # gathered rows, reused across searches
    _full: torch.Tensor | None = field(default=None, repr=False)  # every id's logits of one step (``reuse``)
    _static: OrderedDict = field(default_factory=OrderedDict, repr=False)  # key -> StaticPlan

    def _gather(self, ids: torch.Tensor) -> torch.Tensor:
        """``weight[ids]`` into a buffer that only grows (by a quarter at least): no page faults
        per step (at most the "auto" fraction of the weight, about 200 MB for the default model)."""
        M, w = int(ids.shape[0]), self.weight
        if self._buf is None or self._buf.shape[0] < M:
            rows = min(M + M // 4, w.shape[0])
            self._buf = torch.empty(rows, w.shape[1], dtype=w.dtype, device=w.device)
        return torch.index_select(w, 0, ids, out=self._buf[:M])

    def static_plan(self, key: tuple, ids: torch.Tensor, keep: tuple, packed: bool = False) -> "StaticPlan":
        """The rows ``weight[ids]`` (and bias) gathered once and kept under ``key`` (with the
        weight's version: an in-place change of the weight drops them); ``key`` names objects by
        :func:`~.identity.identity_key` (never reused), ``keep`` holds objects the plan needs. ``packed``:
        multiply them through MKL's packed GEMM (up to ``PLAN_PACK_MAX_BYTES``)."""
        key = key + (identity_key(self.weight), self.weight._version, packed)
        plan = self._static.get(key)
        if plan is None:
            plan = self.rows_plan(ids, packed, keep)
            self._static[key] = plan
            while len(self._static) > _STATIC_ENTRIES:
                self._static.popitem(last=False)
        self._static.move_to_end(key)
        return plan

    def rows_plan(self, ids: torch.Tensor, packed: bool, keep: tuple = ()) -> "StaticPlan":
        """A plan over the sorted ``ids``: their output rows gathered (packed for MKL if ``packed``,
        up to ``PLAN_PACK_MAX_BYTES``)."""
        b = self.bias.index_select(0, ids).contiguous() if self.bias is not None else None
        plan = StaticPlan(ids, self.weight.index_select(0, ids).contiguous(), b, keep)
        plan.linear.enabled &= packed and plan.weight.numel() * plan.weight.element_size() <= PLAN_PACK_MAX_BYTES
        return plan

    def logits(self, hidden: torch.Tensor, ids: torch.Tensor | None = None, *, plan: "StaticPlan | None" = None,
               reuse: bool = False) -> torch.Tensor:
        """Logits of every id, of ``ids`` only, or of a static plan's ids (rows already gathered).
        ``reuse``: every id's logits go into one buffer kept by the head, overwritten by the next
        such call (for a search step: a fresh ``[R, V]`` tensor per step is page-faulted in)."""
        w, b = self.weight, self.bias
        if plan is not None:  # the same rows every step: MKL's packed GEMM where it pays
            x = plan.linear(hidden.to(plan.weight.dtype))
        elif ids is None and reuse:
            x = self._full_logits(hidden.to(w.dtype))
        else:
            if ids is not None:
                w = self._gather(ids)
                b = b.index_select(0, ids) if b is not None else None
            x = torch.nn.functional.linear(hidden.to(w.dtype), w, b)
        if self.softcap is not None:  # Gemma 2/3's order of operations (in place: x is new or the buffer)
            x.div_(self.softcap).tanh_().mul_(self.softcap)
        return x.float()

    def _full_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """``hidden @ weight.T + bias`` into the reused buffer (grown to the rows when needed);
        on the CPU in blocks of the vocabulary (:func:`head_blocks`)."""
        R, w = int(hidden.shape[0]), self.weight
        if self._full is None or self._full.shape[0] < R:
            self._full = torch.empty(R, w.shape[0], dtype=w.dtype, device=w.device)
        out = self._full[:R]
        if w.device.type == "cpu" and w.dtype == torch.float32 and R <= HEAD_BLOCK_MAX_ROWS:
            return head_blocks(hidden, w, self.bias, out)
        if self.bias is None:
            return torch.mm(hidden, w.t(), out=out)
        return torch.addmm(self.bias, hidden, w.t(), out=out)  # as linear() computes it


def head_blocks(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor) -> torch.Tensor:
    """``out [R, V] = hidden @ weight.T + bias`` as ``weight[a:b] @ hidden.T`` per block of
    ``HEAD_BLOCK`` output rows, each block's ``[C, R]`` result (it stays in cache) copied
    transposed into ``out``. MKL multiplies a few dozen rows by the whole ``[V, d]`` weight
    much slower than the other way round (2-core dev machine, V=262144, d=640, float32: 40 rows
    170 -> 135 ms, 80 rows 284 -> 195 ms; benchmarks/bench_head.py). Fewer than
    ``HEAD_MIN_ROWS`` rows are padded with zero rows: below 12 rows MKL takes another kernel that
    rounds differently, and a row's logits must not depend on how many rows share the step (an
    input's result would depend on its batch). So every row gets the same numbers whatever the
    rows beside it (tests/runtime/test_shortlist.py), equal to one GEMM's from 12 rows on."""
    V, R = int(weight.shape[0]), int(hidden.shape[0])
    if R < HEAD_MIN_ROWS:
        hidden = torch.nn.functional.pad(hidden, (0, 0, 0, HEAD_MIN_ROWS - R))
    ht = hidden.t()
    block = torch.empty(min(HEAD_BLOCK, V), ht.shape[1], dtype=weight.dtype, device=weight.device)
    for a in range(0, V, HEAD_BLOCK):
        b = min(a + HEAD_BLOCK, V)
        if bias is None:
            part = torch.mm(weight[a:b], ht, out=block[: b - a])
        else:
            part = torch.addmm(bias[a:b, None], weight[a:b], ht, out=block[: b - a])
        out[:, a:b].copy_(part[:, :R].t())
    return out


class HiddenTap:
    """Captures the input of the model's output layer during one forward call; with
    ``skip_head`` the layer gets an empty slice of it instead (no logits are computed)."""

    def __init__(self, model, *, skip_head: bool):
        self.module = model.get_output_embeddings()
        self.skip = skip_head
        self.hidden: torch.Tensor | None = None

    def _hook(self, module, args):
        h = args[0]
        self.hidden = h
        if self.skip and h.dim() == 3:
            return (h[:, :0, :],) + tuple(args[1:])
        return None

    def __enter__(self) -> "HiddenTap":
        self._handle = self.module.register_forward_pre_hook(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        self._handle.remove()

    def last_hidden(self) -> torch.Tensor:
        if self.hidden is None:
            raise DecodeError("the model's forward did not call its output layer; use shortlist='off'")
        h = self.hidden
        return h[:, -1, :] if h.dim() == 3 else h


def probe_output_head(model, vocab_size: int, device, softcap: float | None) -> tuple[OutputHead | None, str | None]:
    """The output layer of a causal LM, if its logits are exactly ``softcap(hidden @ W.T + b)``
    (``softcap`` from the model's configuration, :mod:`.hf_model`): checked on a short probe
    sequence against the model's own logits. Else ``(None, reason)``."""
    lin = model.get_output_embeddings()
    if not isinstance(lin, torch.nn.Linear):
        return None, f"{type(model).__name__} has no linear output layer"
    if lin.weight.dim() != 2 or lin.weight.shape[0] != vocab_size:
        return None, f"{type(model).__name__}'s output layer is not [vocab={vocab_size}, hidden]"
    head = OutputHead(lin.weight.detach(), lin.bias.detach() if lin.bias is not None else None, softcap)
    ids = (torch.arange(1, 4, device=device) % vocab_size)[None]
    with torch.inference_mode(), HiddenTap(model, skip_head=False) as tap:
        ref = model(input_ids=ids, use_cache=False).logits[:, -1, :].float()
    if tap.hidden is None:
        return None, f"{type(model).__name__}'s forward does not call its output layer"
    mine = head.logits(tap.last_hidden())
    scale = float(ref.abs().max()) + 1.0
    if mine.shape != ref.shape or not torch.allclose(mine, ref, rtol=1e-5, atol=1e-5 * scale):
        return None, (f"{type(model).__name__}'s logits are not its output projection of the final hidden state "
                      "(e.g. a logit scale): they cannot be computed for a subset")
    return head, None


# ---------------------------------------------------------------------------------------------
# The shortlist of one step
# ---------------------------------------------------------------------------------------------
@dataclass
class StepLogits:
    """One step's logits over ``columns`` (``ids[j]`` is the token of column ``j``; ``ids=None``:
    every token, column = id), the rows' masks over those columns and the EOS columns."""

    logits: torch.Tensor  # [R, M] float32
    mask: torch.Tensor  # [R, ceil(M/32)] int32
    ids: torch.Tensor | None  # [M] int64, sorted
    eos_cols: torch.Tensor  # [E] int64

    def to_ids(self, cols: torch.Tensor) -> torch.Tensor:
        """Token ids of columns (-1 stays -1)."""
        if self.ids is None:
            return cols
        return torch.where(cols >= 0, self.ids[cols.clamp(min=0)], cols)

    def to_cols(self, tokens: torch.Tensor) -> torch.Tensor:
        """Columns of token ids; -1 for -1 and for ids outside the shortlist."""
        if self.ids is None:
            return tokens
        pos = torch.searchsorted(self.ids, tokens.clamp(min=0)).clamp(max=self.ids.shape[0] - 1)
        return torch.where((tokens >= 0) & (self.ids[pos] == tokens), pos, torch.full_like(tokens, -1))


def _or_rows(mask: torch.Tensor) -> torch.Tensor:
    """Bitwise OR of the rows of ``mask`` [R, W] (a tree of log2(R) row operations)."""
    m = mask
    while m.shape[0] > 1:
        if m.shape[0] % 2:
            m = torch.cat([m, torch.zeros_like(m[:1])])
        m = m[0::2] | m[1::2]
    return m[0] if m.shape[0] else torch.zeros(mask.shape[1], dtype=mask.dtype, device=mask.device)


def union_ids(mask: torch.Tensor, vocab: int, extra: torch.Tensor) -> torch.Tensor:
    """Sorted ids allowed in any row of ``mask`` [R, W], plus ``extra`` ids."""
    allowed = unpack_bitmask_torch(_or_rows(mask)[None], vocab)[0]
    allowed[extra] = True
    return allowed.nonzero().squeeze(1)


def sub_mask_torch(mask: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The rows of ``mask`` [R, W] over the columns ``ids`` [M]: int32 [R, ceil(M/32)]."""
    words = mask.index_select(1, ids >> 5)  # [R, M]
    bits = (words >> (ids & 31).to(torch.int32)) & 1
    return pack_bool_mask_torch(bits.bool())


def _cpu_bits():
    try:
        from ...kernels import cpu_bits
    except ImportError:  # no numba: the torch version
        return None
    return cpu_bits


def sub_mask(mask: torch.Tensor, ids: torch.Tensor, words: torch.Tensor | None = None,
             shifts: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`sub_mask_torch`, by the numba kernel on CPU (``words``/``shifts``: ``ids >> 5``,
    ``ids & 31``, when the caller keeps them)."""
    kernel = _cpu_bits() if mask.device.type == "cpu" else None
    if kernel is None:
        return sub_mask_torch(mask, ids)
    if words is None:
        words, shifts = ids >> 5, ids & 31
    return kernel.select_bits(mask, words, shifts)


# ---------------------------------------------------------------------------------------------
# The static shortlist of a batch's tables
# ---------------------------------------------------------------------------------------------
@dataclass(eq=False)
class StaticPlan:
    """The tokens any state of a batch's automata allows (plus EOS) and their output rows."""

    ids: torch.Tensor  # [M] int64, sorted
    weight: torch.Tensor  # [M, d]
    bias: torch.Tensor | None  # [M]
    keep: tuple = field(default=(), repr=False)
    words: torch.Tensor = field(init=False, repr=False)
    shifts: torch.Tensor = field(init=False, repr=False)
    linear: PackedLinear = field(init=False, repr=False)
    used: UsedRows = field(init=False, repr=False)  # the part decoding uses (:mod:`.used_rows`)

    def __post_init__(self):
        self.words, self.shifts = self.ids >> 5, self.ids & 31
        self.linear = PackedLinear(self.weight, self.bias)
        self.used = UsedRows()


_ARTIFACT_IDS: IdentityCache[np.ndarray] = IdentityCache(maxsize=4)  # hard tables -> ids


def _artifact_ids(hard) -> np.ndarray:
    """Sorted ids some state of one hard automaton allows: the OR of its dense mask rows and
    its sparse tokens (cached per artifact)."""
    hit = _ARTIFACT_IDS.get(hard)
    if hit is not None:
        return hit
    from ...contract.bitmask import unpack_bitmask

    V = int(hard.width)
    dense = np.asarray(hard.dense_masks, np.int32)
    row = np.bitwise_or.reduce(dense, axis=0) if dense.shape[0] else np.zeros(-(-V // 32), np.int32)
    ids = np.union1d(np.flatnonzero(unpack_bitmask(row.astype(np.int32), V)),
                     np.asarray(hard.state_sparse_tokens, np.int64)).astype(np.int64)
    _ARTIFACT_IDS[hard] = ids
    return ids


def static_ids(inputs, eos: torch.Tensor, vocab: int) -> tuple[np.ndarray | None, tuple]:
    """The ids any state of the inputs' hard automata allows, plus ``eos`` (sorted), and the hard
    automata; ``None`` when an input has none (unconstrained: every token; lights only: every
    text token) or the set exceeds ``STATIC_MAX_FRACTION`` of the vocabulary."""
    hards: list = []
    for inp in inputs:
        if not inp.constrained or inp.hard is None:
            return None, ()
        if all(h is not inp.hard for h in hards):
            hards.append(inp.hard)
    if not hards:
        return None, ()
    ids = np.unique(np.concatenate([_artifact_ids(h) for h in hards] + [eos.cpu().numpy().astype(np.int64)]))
    if ids.size > STATIC_MAX_FRACTION * vocab or (ids.size and (ids[0] < 0 or ids[-1] >= vocab)):
        return None, ()
    return ids, tuple(hards)


class Shortlist:
    """Per search: computes each step's logits from the model's hidden states, over the shortlist
    when it pays (``mode="auto"``), always (``"on"``), or never (full head from hidden states)."""

    def __init__(self, head: OutputHead, mode: ShortlistMode, vocab: int, eos: torch.Tensor, packed: bool = False):
        self.head, self.mode, self.V, self.eos, self.packed = head, mode, int(vocab), eos, packed
        self._tables = None  # the tables the static plan below was made for
        self._plan: tuple | None = None  # (StaticPlan, EOS columns)

    def _static(self, tables) -> tuple | None:
        """The static plan of ``tables`` (made once per tables object: per batch composition)."""
        if tables is None:
            return None
        if tables is not self._tables:
            self._tables, self._plan = tables, None
            ids, hards = static_ids(tables.inputs, self.eos, self.V)
            if ids is not None:
                ids_t = torch.as_tensor(ids, device=self.head.weight.device)
                plan = self.head.static_plan(tuple(identity_key(h) for h in hards), ids_t, hards, self.packed)
                self._plan = (plan, torch.searchsorted(plan.ids, self.eos))
        return self._plan

    def logits(self, hidden: torch.Tensor, mask: torch.Tensor, tables=None) -> StepLogits:
        """The step's logits from the final hidden states; ``tables`` (the batch's pooled
        :class:`~.tables.Tables`) enables the static shortlist."""
        R = int(hidden.shape[0])
        static = self._static(tables) if self.mode != "off" else None
        if static is not None:
            plan, eos_cols = static
            if mask.device.type == "cpu":  # the used part of the static set, where a step needs no more
                used = plan.used.choose(_or_rows(mask), plan, lambda ids: self.head.rows_plan(ids, self.packed),
                                        self.eos, self.V)
                plan, eos_cols = used if used is not None else (plan, eos_cols)
            logits = self.head.logits(hidden, plan=plan)
            return StepLogits(logits, sub_mask(mask, plan.ids, plan.words, plan.shifts), plan.ids, eos_cols)
        if self.mode != "off":
            ids = union_ids(mask, self.V, self.eos)
            M = int(ids.shape[0])
            if self.mode == "on" or pays(M, R, self.V):
                logits = self.head.logits(hidden, ids)
                return StepLogits(logits, sub_mask(mask, ids), ids, torch.searchsorted(ids, self.eos))
        return StepLogits(self.head.logits(hidden, reuse=True), mask, None, self.eos)


def resolve(adapter, config, eos: torch.Tensor, vocab: int) -> Shortlist | None:
    """The search's shortlist, or ``None`` (the adapter returns full logits); ``adapter`` is a
    :class:`~.adapter_protocol.ModelAdapter` (its capabilities decide). ``config`` is a
    validated :class:`~.config.SearchConfig` (it refuses ``"on"`` without ``renormalize``);
    ``"on"`` also refuses a model whose head cannot give exact subset logits, instead of falling back."""
    shortlist = config.renormalize and config.shortlist != "off"
    if not shortlist and adapter.device.type != "cpu":
        return None  # every logit, from the model (an accelerator's allocator reuses the memory)
    head = adapter.output_projection()
    if head is None or not shortlist:
        if head is not None:  # every logit, into the head's reused buffer (CPU: no page faults per step)
            return Shortlist(head, "off", vocab, eos)
        if config.shortlist == "on":
            why = adapter.no_head_reason or f"{type(adapter).__name__}.output_projection() gives no output layer"
            raise DecodeError(f"shortlist='on' is not possible: {why}; use shortlist='auto' or 'off'")
        return None
    packing = adapter.packing  # the model's packed-weights setting covers the static rows
    return Shortlist(head, config.shortlist, vocab, eos, packed=packing is not None and packing.mode != "off")
