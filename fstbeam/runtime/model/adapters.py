"""Model adapters: one language-model step for a set of rows, whose caches can be reordered,
dropped and extended (new inputs joining) without recomputing live rows.

The operations and capabilities the search uses are the :class:`~.adapter_protocol.ModelAdapter`
protocol (``prefill``, ``step``, ``select``, ``take``, ``concat``; ``supports_refill``,
``output_projection``, ``packing``...). What a model supports is read once, in an adapter's
constructor (:func:`.hf_model.model_facts`), and kept in typed attributes.

On CPU the model's linear layers run through MKL's packed GEMM during these calls
(:mod:`.packed_model`, ``packed_weights="auto"|"on"|"off"``).

The shortlist output layer (:mod:`.shortlist`): ``output_projection()`` returns the model's
output layer as an :class:`~.shortlist.OutputHead` (or ``None``, reason in ``no_head_reason``),
and ``prefill(..., hidden=True)`` / ``step(..., hidden=True)`` return the final hidden state
``[R, d]`` (the head's input) instead of the logits.

Prompts of different lengths are *left*-padded. The adapter records, for every cache column of
every row, the real position of the token there (``-1`` for padding), and passes the model an
explicit 4-D additive attention mask built from those positions (plus explicit ``position_ids``),
so padding never changes a row's result: a row decoded in a batch attends to exactly what it
attends to alone, sliding windows included (Gemma 3 alternates sliding and full layers; the
window is measured in real positions, as in an unpadded decode).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ...errors import DecodeError
from .adapter_protocol import AdapterKind, ModelAdapter
from .cache import RowCache, concat_caches, fork_cache
from .hf_model import is_encoder_decoder, model_facts
from .packed_model import ModelPacking, PackedWeights
from .shortlist import HiddenTap, OutputHead, probe_output_head

__all__ = ["ModelAdapter", "CausalLMAdapter", "Seq2SeqAdapter", "adapter_for"]


def _adopt(adapter, model, packed_weights: PackedWeights):
    """What every Hugging Face adapter keeps of its model: the model, its packed weights and the
    facts read once from it (`hf_model.model_facts`)."""
    adapter.model = model.eval()
    adapter.packing = ModelPacking(model, packed_weights)
    facts = model_facts(model)
    adapter.facts = facts
    adapter.vocab_size = facts.vocab_size
    adapter.device = facts.device
    adapter.dtype = facts.dtype
    adapter.max_positions = facts.max_positions
    adapter.model_eos_ids = facts.eos_ids
    return facts


# ---------------------------------------------------------------------------------------------
# Causal LMs
# ---------------------------------------------------------------------------------------------
@dataclass
class CausalState:
    cache: RowCache
    kv_pos: torch.Tensor  # [R, T] int64: real position of each cache column, -1 = padding
    next_pos: torch.Tensor  # [R] int64: position of the next token

    @property
    def rows(self) -> int:
        return int(self.next_pos.shape[0])


class CausalLMAdapter:
    """Any ``AutoModelForCausalLM`` whose attention takes a prepared 4-D mask (every model built on
    ``transformers.masking_utils``, e.g. Llama, Gemma 2/3, Qwen 2/3, Mistral, GPT-2)."""

    kind: AdapterKind = "causal"
    supports_refill = True  # rows may join mid-decode (positions are explicit)
    decoder_start = None

    def __init__(self, model, packed_weights: PackedWeights = "auto"):
        facts = _adopt(self, model, packed_weights)
        self.windows, self.window = facts.windows, facts.window
        self._keep = facts.keeps_logits
        self._mask_2d = facts.mask_2d  # ALiBi models (see hf_model)
        self.forward_rows = 0  # rows through the model (counted work)
        self.forward_calls = 0
        self._head: OutputHead | None | bool = False  # False: not probed yet
        self.no_head_reason: str | None = None

    # -- output layer (shortlist capability) ----------------------------------------------------
    def output_projection(self) -> OutputHead | None:
        """The output layer as weight/bias/soft-cap, checked once against the model's own logits;
        ``None`` (reason in ``no_head_reason``) when the logits are not reproducible from it."""
        if self._head is False:
            self._head, self.no_head_reason = probe_output_head(self.model, self.vocab_size, self.device, self.facts.softcap)
        return self._head

    # -- masks ----------------------------------------------------------------------------------
    def _mask(self, q_pos: torch.Tensor, kv_pos: torch.Tensor, window: int | None) -> torch.Tensor:
        """Additive mask ``[R, 1, Q, K]``: query at ``q_pos [R, Q]`` sees key ``kv_pos [R, K]``."""
        q = q_pos.unsqueeze(-1)  # [R, Q, 1]
        k = kv_pos.unsqueeze(1)  # [R, 1, K]
        ok = (k >= 0) & (k <= q)
        if window is not None:
            ok &= (q - k) < window
        m = torch.zeros(ok.shape, dtype=self.dtype, device=ok.device)
        m.masked_fill_(~ok, torch.finfo(self.dtype).min)
        return m.unsqueeze(1)

    def _masks(self, q_pos, kv_pos):
        if self._mask_2d:
            return (kv_pos >= 0).long()
        if self.windows is not None:
            return {name: self._mask(q_pos, kv_pos, w) for name, w in self.windows.items()}
        return self._mask(q_pos, kv_pos, self.window)

    def _forward(self, ids, mask, pos, cache, hidden: bool = False) -> torch.Tensor:
        kw = {"input_ids": ids, "attention_mask": mask, "position_ids": pos, self.facts.cache_kwarg: cache, "use_cache": True}
        if self._keep:
            kw["logits_to_keep"] = 1
        self.forward_rows += int(ids.shape[0])
        self.forward_calls += 1
        with self.packing.routing():
            if hidden:  # the output layer runs on an empty slice; its input is returned
                with HiddenTap(self.model, skip_head=True) as tap:
                    self.model(**kw)
                return tap.last_hidden()
            out = self.model(**kw)
        return out.logits[:, -1, :].float()

    # -- operations -----------------------------------------------------------------------------
    @torch.inference_mode()
    def prefill(self, prompts: Sequence[Sequence[int]], hidden: bool = False) -> tuple[torch.Tensor, CausalState]:
        n = len(prompts)
        T0 = max(len(p) for p in prompts)
        if T0 == 0:
            raise DecodeError("empty prompt: a causal LM needs at least one token (e.g. BOS)")
        ids = torch.zeros((n, T0), dtype=torch.long)
        kv_pos = torch.full((n, T0), -1, dtype=torch.long)
        for i, p in enumerate(prompts):
            L = len(p)
            ids[i, T0 - L :] = torch.as_tensor(list(p), dtype=torch.long)
            kv_pos[i, T0 - L :] = torch.arange(L)
        ids, kv_pos = ids.to(self.device), kv_pos.to(self.device)
        masks = self._masks(kv_pos, kv_pos)
        if T0 > 1:  # let padded queries see themselves, so no softmax row is empty
            pad = kv_pos < 0
            diag = torch.eye(T0, dtype=torch.bool, device=self.device)
            fix = pad.unsqueeze(-1) & diag  # [n, T0, T0]
            for m in () if self._mask_2d else masks.values() if isinstance(masks, dict) else (masks,):
                m.squeeze(1).masked_fill_(fix, 0)
        cache = RowCache()
        logits = self._forward(ids, masks, kv_pos.clamp(min=0), cache, hidden)
        lengths = torch.tensor([len(p) for p in prompts], dtype=torch.long, device=self.device)
        return logits, CausalState(cache, kv_pos, lengths)

    @torch.inference_mode()
    def step(self, state: CausalState, tokens: torch.Tensor, hidden: bool = False) -> torch.Tensor:
        pos = state.next_pos
        state.kv_pos = torch.cat([state.kv_pos, pos[:, None]], 1)
        masks = self._masks(pos[:, None], state.kv_pos)
        logits = self._forward(tokens.view(-1, 1).to(self.device), masks, pos[:, None], state.cache, hidden)
        state.next_pos = pos + 1
        return logits

    def select(self, state: CausalState, index: torch.Tensor) -> CausalState:
        index = index.to(self.device)
        state.cache.select(index)
        kv_pos = state.kv_pos.index_select(0, index)
        next_pos = state.next_pos.index_select(0, index)
        # Columns that are padding for every remaining row can go.
        if kv_pos.shape[0] and kv_pos.shape[1] > 1:
            real = (kv_pos >= 0).any(0)
            first = int(real.to(torch.int8).argmax()) if bool(real.any()) else 0
            if first > 0:
                state.cache.drop_left(first)
                kv_pos = kv_pos[:, first:]
        state.kv_pos, state.next_pos = kv_pos, next_pos
        return state

    def take(self, state: CausalState, index: torch.Tensor) -> CausalState:
        return self.select(CausalState(fork_cache(state.cache), state.kv_pos, state.next_pos), index)

    def concat(self, states: Sequence[CausalState]) -> CausalState:
        states = [s for s in states if s is not None and s.rows > 0]
        if len(states) == 1:
            return states[0]
        T = max(s.kv_pos.shape[1] for s in states)
        kv = torch.cat([torch.nn.functional.pad(s.kv_pos, (T - s.kv_pos.shape[1], 0), value=-1) for s in states])
        return CausalState(concat_caches([s.cache for s in states]), kv, torch.cat([s.next_pos for s in states]))


# ---------------------------------------------------------------------------------------------
# Encoder-decoder models
# ---------------------------------------------------------------------------------------------
@dataclass
class Seq2SeqState:
    self_cache: RowCache
    cross_cache: RowCache
    dec_valid: torch.Tensor  # [R, T] bool: decoder cache column holds a real token
    enc_h: torch.Tensor  # [R, S, d]
    enc_mask: torch.Tensor  # [R, S] int64

    @property
    def rows(self) -> int:
        return int(self.enc_h.shape[0])


class Seq2SeqAdapter:
    """Any ``AutoModelForSeq2SeqLM`` with relative decoder positions (T5, mT5, UMT5, LongT5...).

    Rows of a batch start decoding together, so decoder columns line up except after a streaming
    refill, where new rows are left-padded; with relative position biases the distance between
    two real tokens is unchanged by padding, so results equal an unpadded decode. Models with
    absolute decoder positions (BART, Marian) work for batches that start together; the decoder
    refuses to refill them mid-decode (:attr:`supports_refill` is False).
    """

    kind: AdapterKind = "seq2seq"

    def __init__(self, model, packed_weights: PackedWeights = "auto"):
        from transformers.cache_utils import EncoderDecoderCache  # noqa: F401 - fail early if missing

        facts = _adopt(self, model, packed_weights)
        self.decoder_start: int | None = facts.decoder_start
        self.supports_refill = facts.relative_positions
        self.no_head_reason: str | None = "encoder-decoder models keep the full output layer"
        self.forward_rows = 0
        self.forward_calls = 0

    def output_projection(self) -> OutputHead | None:
        """``None``: the search takes this model's own logits (see ``no_head_reason``)."""
        return None

    def _dec_mask(self, valid: torch.Tensor) -> torch.Tensor:
        m = torch.zeros(valid.shape, dtype=self.dtype, device=valid.device)
        m.masked_fill_(~valid, torch.finfo(self.dtype).min)
        return m[:, None, None, :]

    def _decode(self, state: Seq2SeqState, tokens: torch.Tensor) -> torch.Tensor:
        from transformers.cache_utils import EncoderDecoderCache
        from transformers.modeling_outputs import BaseModelOutput

        cache = EncoderDecoderCache(state.self_cache, state.cross_cache)
        if state.cross_cache.layers:
            for i in range(len(state.cross_cache.layers)):
                cache.is_updated[i] = True
        ones = torch.ones((state.dec_valid.shape[0], 1), dtype=torch.bool, device=state.dec_valid.device)
        state.dec_valid = torch.cat([state.dec_valid, ones], 1)
        self.forward_rows += int(tokens.shape[0])
        self.forward_calls += 1
        with self.packing.routing():
            out = self.model(
                encoder_outputs=BaseModelOutput(last_hidden_state=state.enc_h),
                attention_mask=state.enc_mask,
                decoder_input_ids=tokens.view(-1, 1).to(self.device),
                decoder_attention_mask=self._dec_mask(state.dec_valid),
                use_cache=True,
                **{self.facts.cache_kwarg: cache},
            )
        return out.logits[:, -1, :].float()

    @torch.inference_mode()
    def prefill(self, sources: Sequence[Sequence[int]], hidden: bool = False) -> tuple[torch.Tensor, Seq2SeqState]:
        _no_hidden(hidden)
        n = len(sources)
        S = max(len(s) for s in sources)
        if S == 0:
            raise DecodeError("empty source: an encoder-decoder model needs at least one token")
        ids = torch.zeros((n, S), dtype=torch.long)
        mask = torch.zeros((n, S), dtype=torch.long)
        for i, s in enumerate(sources):
            ids[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
            mask[i, : len(s)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        with self.packing.routing():
            enc = self.model.get_encoder()(input_ids=ids, attention_mask=mask)
        state = Seq2SeqState(
            RowCache(), RowCache(), torch.zeros((n, 0), dtype=torch.bool, device=self.device), enc.last_hidden_state, mask
        )
        start = torch.full((n,), int(self.decoder_start), dtype=torch.long, device=self.device)
        return self._decode(state, start), state

    @torch.inference_mode()
    def step(self, state: Seq2SeqState, tokens: torch.Tensor, hidden: bool = False) -> torch.Tensor:
        _no_hidden(hidden)
        return self._decode(state, tokens)

    def select(self, state: Seq2SeqState, index: torch.Tensor) -> Seq2SeqState:
        index = index.to(self.device)
        state.self_cache.select(index)
        state.cross_cache.select(index)
        state.dec_valid = state.dec_valid.index_select(0, index)
        state.enc_h = state.enc_h.index_select(0, index)
        state.enc_mask = state.enc_mask.index_select(0, index)
        if state.dec_valid.shape[0] and state.dec_valid.shape[1] > 1:
            real = state.dec_valid.any(0)
            first = int(real.to(torch.int8).argmax()) if bool(real.any()) else 0
            if first > 0:
                state.self_cache.drop_left(first)
                state.dec_valid = state.dec_valid[:, first:]
        return state

    def take(self, state: Seq2SeqState, index: torch.Tensor) -> Seq2SeqState:
        forked = Seq2SeqState(fork_cache(state.self_cache), fork_cache(state.cross_cache), state.dec_valid, state.enc_h, state.enc_mask)
        return self.select(forked, index)

    def concat(self, states: Sequence[Seq2SeqState]) -> Seq2SeqState:
        states = [s for s in states if s is not None and s.rows > 0]
        if len(states) == 1:
            return states[0]
        T = max(s.dec_valid.shape[1] for s in states)
        if not self.supports_refill and len({s.dec_valid.shape[1] for s in states}) > 1:
            raise DecodeError(f"{type(self.model).__name__} uses absolute decoder positions: rows cannot join mid-decode")
        S = max(s.enc_h.shape[1] for s in states)
        dec_valid = torch.cat([torch.nn.functional.pad(s.dec_valid, (T - s.dec_valid.shape[1], 0), value=False) for s in states])
        enc_h = torch.cat([torch.nn.functional.pad(s.enc_h, (0, 0, 0, S - s.enc_h.shape[1])) for s in states])
        enc_mask = torch.cat([torch.nn.functional.pad(s.enc_mask, (0, S - s.enc_mask.shape[1])) for s in states])
        self_cache = concat_caches([s.self_cache for s in states])
        # Cross-attention keys are padded on the right (source positions), masked by enc_mask.
        cross = RowCache()
        for i in range(len(states[0].cross_cache.layers)):
            layer = states[0].cross_cache.layers[i].__class__()
            ks = [s.cross_cache.layers[i].keys for s in states]
            vs = [s.cross_cache.layers[i].values for s in states]
            layer.keys = torch.cat([torch.nn.functional.pad(k, (0, 0, 0, S - k.shape[2])) for k in ks]).contiguous()
            layer.values = torch.cat([torch.nn.functional.pad(v, (0, 0, 0, S - v.shape[2])) for v in vs]).contiguous()
            cross.layers.append(layer)
        return Seq2SeqState(self_cache, cross, dec_valid, enc_h, enc_mask)


def _no_hidden(hidden: bool) -> None:
    if hidden:
        raise DecodeError("this encoder-decoder adapter returns logits only (its output_projection() is None)")


def adapter_for(model, packed_weights: PackedWeights = "auto") -> ModelAdapter:
    """The adapter for a Hugging Face model (encoder-decoder or causal)."""
    if is_encoder_decoder(model.config):
        return Seq2SeqAdapter(model, packed_weights)
    return CausalLMAdapter(model, packed_weights)
