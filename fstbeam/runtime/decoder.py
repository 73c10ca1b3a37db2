"""The Python API: :class:`Decoder` turns prompts (and compiled constraints) into outputs.

>>> from fstbeam import Decoder, compile_constraints          # doctest: +SKIP
>>> dec = Decoder()                                           # the default model, CPU or CUDA
>>> cc = compile_constraints(cefr="A1", tokenizer="default")
>>> [r] = dec.generate(["Question: What do you eat for breakfast?\\nAnswer:"], cc, max_new_tokens=40)
>>> r.text, r.satisfied
"""
from __future__ import annotations

import operator
import os
import warnings
from dataclasses import replace
from typing import Any, Iterable, Iterator, Sequence

import torch

from ..contract.compiled import CompiledConstraints
from ..contract.vocab import Vocab
from ..errors import DecodeError, InputError, TokenizerMismatchError
from ..validate import (
    check_device,
    check_model_path,
    check_prompt,
    check_prompt_format,
    check_prompts,
    check_tokenizer_path,
)
from .config import SearchConfig, resolve_config, stop_ids
from .explain import ExplainContext
from .identity import IdentityCache
from .model.adapter_protocol import ModelAdapter, check_adapter
from .model.adapters import adapter_for
from .model.hf_model import is_encoder_decoder, load_tokenizer
from .model.packed_model import check_mode as check_packed_mode
from .presets import config_overrides, preset_for_format, search_config
from .results import GenerationResult
from .search.engine import RawResult, Request, SearchEngine
from .search.length_target import query_tokens
from .search.stops import StopRule
from .search.tables import InputConstraints
from .stop_rules import empty_reason, ends_at_line, hypotheses, numbered, runs_by_stop
from .structured_check import check_result, with_output_check
from .templates import check_format
from .templates import prompt_format as expand_format

__all__ = ["Decoder", "SearchConfig"]

class Decoder:
    """Constrained beam search over a Hugging Face model.

    ``model``: ``None`` (the default Gemma 3 270M, converted once and cached), a path or hub id
    (``AutoModelForCausalLM`` / ``AutoModelForSeq2SeqLM``), a loaded model, or a model adapter.
    ``tokenizer``: ``None`` (the model's own), a path, a Hugging Face tokenizer, or a
    ``fstbeam.contract.vocab.Vocab`` (then prompts must be token id lists).
    ``prompt_format``: ``"raw"`` (prompts as text continuations), ``"chat"`` (the tokenizer's chat
    template with a generation prompt), ``"auto"`` (chat when the tokenizer has a template; the
    default Gemma 3 270M is a base model without one), ``"qa"`` (``Question: ...\nAnswer:``), or
    a template string with ``{prompt}`` (`fstbeam.runtime.templates`).
    ``packed_weights``: on CPU, run the model's linear layers through MKL's packed GEMM (one more
    copy of their weights, 7-16% shorter steps; :mod:`.packed_model`): ``"auto"`` (models up to
    1 GB of linear weights), ``"on"``, ``"off"``. Ignored for a model adapter.
    """

    def __init__(
        self,
        model=None,
        tokenizer=None,
        *,
        device="auto",
        dtype: torch.dtype | None = None,
        eos_ids: Sequence[int] | None = None,
        prompt_format: str = "auto",
        packed_weights: str = "auto",
    ):
        # Every argument is checked before a model is loaded (docs/trust.md).
        self.prompt_format_name = check_format(prompt_format)  # before the model loads
        self.device: torch.device = check_device(device, "device")  # one that exists here
        check_packed_mode(packed_weights)
        check_prompt_format(prompt_format, "prompt_format")
        if dtype is not None and not isinstance(dtype, torch.dtype):
            raise DecodeError(f"dtype must be a torch.dtype such as torch.float32, not {type(dtype).__name__} {dtype!r:.40}")
        if isinstance(model, (str, os.PathLike)):
            model = check_model_path(model, "model")
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = check_tokenizer_path(tokenizer, "tokenizer")
        default_eos: tuple[int, ...] = ()
        self._default_tokenizer = model is None and tokenizer is None  # its Vocab is cached on disk
        if model is None:
            from ..files.default_model import default_eos_ids, load_default_model, load_default_tokenizer

            model = load_default_model(self.device, dtype)
            tokenizer = tokenizer if tokenizer is not None else load_default_tokenizer()
            default_eos = default_eos_ids()
        elif isinstance(model, (str, os.PathLike)):
            from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

            from ..files.status import status

            path = str(model)
            try:
                cfg = AutoConfig.from_pretrained(path)
                cls = AutoModelForSeq2SeqLM if is_encoder_decoder(cfg) else AutoModelForCausalLM
                with status(f"loading the model {path}"):
                    model = cls.from_pretrained(path, dtype=dtype or torch.float32).to(self.device)
            except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:  # transformers' many kinds
                raise InputError(f"cannot load a model from {path} ({type(exc).__name__}: {str(exc)[:200]}): give a "
                                 "Hugging Face model folder with config.json and its weights") from None
            if tokenizer is None:
                tokenizer = load_tokenizer(path)
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = load_tokenizer(tokenizer)
        self.adapter: ModelAdapter
        if not isinstance(model, torch.nn.Module):  # not a Hugging Face model: an adapter
            self.adapter = check_adapter(model)
            self.model = self.adapter.model
        else:
            if dtype is not None:
                model = model.to(dtype)
            model = model.to(self.device)
            self.model = model
            self.adapter = adapter_for(model, packed_weights)
        self.tokenizer = tokenizer
        self._vocab = tokenizer if isinstance(tokenizer, Vocab) else None
        self.eos_ids = self._check_eos(eos_ids if eos_ids is not None else (default_eos or self._model_eos()))
        if not self.eos_ids:
            raise DecodeError("no EOS token id: pass eos_ids=[...] (the model config and tokenizer name none)")
        self.prompt_format = expand_format(prompt_format)
        self._text_only: InputConstraints | None = None
        self._checked: IdentityCache[InputConstraints] = IdentityCache()  # constraints -> checked form
        self.last_stats = None

    def _check_eos(self, eos_ids) -> tuple[int, ...]:
        """EOS ids as ints inside the model's vocabulary, or a DecodeError naming the bad one."""
        if isinstance(eos_ids, (int, str, bytes)) or not isinstance(eos_ids, Iterable):
            eos_ids = [eos_ids]
        out = []
        V = self.vocab_size
        for e in eos_ids:
            try:
                i = operator.index(e)  # ints, numpy and torch integers
            except TypeError:
                i = None
            if isinstance(e, bool) or i is None:
                raise DecodeError(f"eos_ids must be token ids (ints), not {type(e).__name__} {e!r}")
            if not 0 <= i < V:
                raise DecodeError(f"EOS id {i} is outside the model's vocabulary of {V} ids: pass ids in [0, {V})")
            out.append(i)
        return tuple(out)

    def __repr__(self) -> str:
        return (f"Decoder({type(self.model).__name__}, {self.adapter.kind}, vocab {self.vocab_size}, device='{self.device}', "
                f"prompt_format={self.prompt_format_name!r}, preset={self.preset!r})")

    # ---- model facts -----------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return int(self.adapter.vocab_size)

    def _model_eos(self) -> tuple[int, ...]:
        """EOS ids the model names (its adapter read them), else the tokenizer's."""
        out = list(self.adapter.model_eos_ids)
        # A Hugging Face tokenizer names its EOS; a Vocab (or no tokenizer) has none here.
        src = None if out or self._vocab is not None else getattr(self.tokenizer, "eos_token_id", None)
        for e in (src if isinstance(src, (list, tuple)) else [src]):
            if e is not None and int(e) not in out and 0 <= int(e) < self.vocab_size:
                out.append(int(e))
        if self._vocab is not None and not out:
            out = list(self._vocab.eos_ids)
        return tuple(out)

    @property
    def vocab(self):
        """The token-id -> bytes table of this decoder's tokenizer at the model's output width."""
        if self._vocab is None:
            from ..contract.vocab import Vocab

            if self.tokenizer is None:
                raise DecodeError("this decoder has no tokenizer: pass tokenizer=... to decode text")
            if self._default_tokenizer:  # the same table, from fstbeam's cache (2.4 s -> 0.3 s)
                from ..contract.vocab import load_vocab

                self._vocab = load_vocab("default", width=self.vocab_size)
            else:
                self._vocab = Vocab.from_hf_tokenizer(self.tokenizer, width=self.vocab_size)
        return self._vocab

    # ---- prompts ----------------------------------------------------------------------------
    @property
    def continues_text(self) -> bool:
        """Whether string prompts are continued as text (raw or a template) rather than answered
        in a chat turn: a continuation usually starts with a space (compile word lists with
        ``leading_space=True`` for it)."""
        fmt = self.prompt_format
        if fmt == "auto":
            fmt = "chat" if getattr(self.tokenizer, "chat_template", None) else "raw"
        return fmt != "chat"

    @property
    def preset(self) -> str:
        """The search preset every door uses for this decoder's prompt format
        (`fstbeam.runtime.presets`): ``answer`` for qa and chat, ``continuation`` otherwise."""
        return preset_for_format(self.prompt_format_name, self.continues_text)

    def encode(self, prompt, *, where: str = "prompt") -> list[int]:
        """Token ids of one prompt (a string, formatted per ``prompt_format``, or ids as is).
        A bad prompt (a lone surrogate, a float or out-of-range id, bytes) raises DecodeError."""
        prompt = check_prompt(prompt, where, vocab_size=self.vocab_size)
        if isinstance(prompt, str):
            if self.tokenizer is None or isinstance(self.tokenizer, Vocab):
                raise DecodeError("string prompts need a Hugging Face tokenizer; pass token id lists instead")
            fmt = self.prompt_format
            if fmt == "auto":
                fmt = "chat" if getattr(self.tokenizer, "chat_template", None) else "raw"
            if fmt == "chat":
                ids = self.tokenizer.apply_chat_template(
                    [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True
                )
                if isinstance(ids, dict) or hasattr(ids, "input_ids"):
                    ids = ids["input_ids"]
                return [int(i) for i in ids]
            if fmt != "raw":
                if "{prompt}" not in fmt:
                    raise DecodeError(f"prompt_format {fmt!r}: use 'raw', 'chat', 'auto' or a template with {{prompt}}")
                prompt = fmt.replace("{prompt}", prompt)
            try:
                return [int(i) for i in self.tokenizer(prompt)["input_ids"]]
            except Exception as exc:  # noqa: BLE001 - the tokenizer's own failure on this one input
                raise DecodeError(f"the tokenizer cannot encode this prompt ({type(exc).__name__}: {str(exc)[:120]})") from None
        return prompt

    def query_tokens(self, prompt, ids: Sequence[int]) -> int:
        """Tokens of the prompt's query, what ``length_ratio`` multiplies (:mod:`.length_target`)."""
        fmt = self.prompt_format
        if isinstance(prompt, str) and fmt != "raw" and self.tokenizer is not None and not isinstance(self.tokenizer, Vocab):
            if fmt != "auto" or getattr(self.tokenizer, "chat_template", None):
                ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        return query_tokens(ids, self.vocab.token_bytes)

    def newline_ids(self) -> tuple[int, ...]:
        """Ids of the tokens made only of newlines (``stop_at="line"`` adds them to the EOS ids: a
        base model answering a question otherwise goes on to the next one)."""
        return tuple(i for i, b in enumerate(self.vocab.token_bytes) if b and not b.strip(b"\r\n"))

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of generated tokens: the concatenation of their bytes (special tokens omitted)."""
        tb = self.vocab.token_bytes
        return b"".join(tb[t] or b"" for t in token_ids if 0 <= t < len(tb)).decode("utf-8", "replace")

    # ---- the streaming interface: what a server driving its own search loop needs ---------------
    # (fstbeam.serve runs ContinuousEngine with these; Decoder.stream is the same three steps)
    def input_constraints(self, cc, *, allow_control_tokens: bool = False) -> InputConstraints:
        """The search's form of ``cc`` (``CompiledConstraints`` checked against this model and
        tokenizer, cached per object), to pass to :meth:`request`. ``None``: every text token
        (special and control tokens are never output text, see ``Vocab``); every id with
        ``allow_control_tokens``, or when the decoder has no tokenizer to tell them apart."""
        if cc is not None:
            return self._check(cc)
        if allow_control_tokens or self.tokenizer is None:
            return InputConstraints(constrained=False)
        if self._text_only is None:
            self._text_only = InputConstraints(text_ids=self.vocab.text_ids)
        return self._text_only

    def stop_ids(self, config: SearchConfig) -> tuple[int, ...]:
        """The token ids that end an output under ``config`` (its ``stop_at``/``eos_ids``), checked."""
        return self._check_eos(stop_ids(config, self.eos_ids, self.newline_ids))

    def _check(self, cc) -> InputConstraints:
        hit = self._checked.get(cc)
        if hit is not None:
            return hit
        if not isinstance(cc, CompiledConstraints):
            raise DecodeError("constraints must be CompiledConstraints (from compile_constraints / load_constraints), "
                              f"not {type(cc).__name__}")
        V = self.vocab_size
        if cc.vocab.width != V:
            raise TokenizerMismatchError(
                f"the constraints were compiled for {cc.vocab.width} token ids ({cc.vocab.describe()}) but the model "
                f"produces {V} logits: compile them with this model's tokenizer"
            )
        if self.tokenizer is not None:
            mine = self.vocab
            if mine.fingerprint != cc.vocab.fingerprint and mine.token_bytes != cc.vocab.token_bytes:
                diff = next(i for i, (a, b) in enumerate(zip(mine.token_bytes, cc.vocab.token_bytes)) if a != b)
                raise TokenizerMismatchError(
                    f"the constraints were compiled for another tokenizer ({cc.vocab.describe()}): token {diff} is "
                    f"{cc.vocab.token_bytes[diff]!r} there and {mine.token_bytes[diff]!r} here; recompile them with "
                    "this decoder's tokenizer"
                )
        inp = with_output_check(InputConstraints.from_compiled(cc), cc)  # (a JSON Schema's outputs validated)
        self._checked[cc] = inp
        return inp

    # ---- decoding -----------------------------------------------------------------------------
    def generate(self, prompts, constraints=None, config: SearchConfig | None = None, **overrides) -> list[GenerationResult]:
        """Decode every prompt; one :class:`GenerationResult` per prompt, in order.

        ``constraints``: ``None``, one ``CompiledConstraints`` for all prompts, or a list with one
        (or ``None``) per prompt. ``overrides``: any :class:`SearchConfig` field for this call,
        e.g. ``beam_size=8``, ``stop_at="line"``, ``length_reward=1.0`` (docs/decoding.md), on top
        of the task preset of this decoder's prompt format, as every command applies it
        (`fstbeam.runtime.presets`; ``preset=`` names another: ``"answer"``, ``"continuation"``,
        ``"translation"``, ``"plain"`` for log-probability ranking alone). ``config``: a whole
        :class:`SearchConfig`, taken as it is (no preset unless ``preset=`` is given too). An
        unknown setting or a bad value raises :class:`~fstbeam.errors.DecodeError` naming it.
        """
        prompts = check_prompts(prompts)
        if not prompts:
            raise DecodeError("no prompts: pass a list with at least one prompt")
        if constraints is not None and not isinstance(constraints, CompiledConstraints):
            if isinstance(constraints, (str, bytes, dict)) or not isinstance(constraints, Iterable):
                raise DecodeError(f"constraints must be CompiledConstraints (compile_constraints / load_constraints), a "
                                  f"list with one per prompt, or None; not {type(constraints).__name__} {constraints!r:.40}")
            constraints = list(constraints)
            if len(constraints) != len(prompts):
                raise DecodeError(f"{len(constraints)} constraint sets for {len(prompts)} prompts: give one per prompt (or one for all)")
        results = list(self.stream(prompts, constraints, config, **overrides))
        results.sort(key=lambda r: r.index)
        return results

    def stream(self, prompts: Iterable, constraints=None, config: SearchConfig | None = None, *, ordered: bool = False,
               **overrides) -> Iterator[GenerationResult]:
        """Decode an iterable of prompts, yielding results as inputs finish (in input order when
        ``ordered=True``). ``config`` and ``overrides`` as for :meth:`generate`."""
        if isinstance(prompts, str):
            prompts = [prompts]
        elif prompts is None or isinstance(prompts, (bytes, bytearray, dict)) or not isinstance(prompts, Iterable):
            check_prompts(prompts)  # raises, naming what was passed
        cfg = self._config(config, overrides)
        shared = constraints is None or isinstance(constraints, CompiledConstraints)
        items = numbered(prompts, constraints, shared)
        # stop_at="auto": a prompt ending in a cue line ("German:") is answered in one line, else until EOS
        auto = cfg.stop_at == "auto" and cfg.eos_ids is None
        runs = runs_by_stop(items, cfg, self.ends_at_line) if auto else [(cfg, items)]
        held: dict[int, GenerationResult] = {}
        nxt = 0
        for run_cfg, group in runs:
            for res in self._run(group, run_cfg):
                if not ordered:
                    yield res
                    continue
                held[res.index] = res
                while nxt in held:
                    yield held.pop(nxt)
                    nxt += 1
        for i in sorted(held):
            yield held[i]

    def ends_at_line(self, prompt) -> bool:
        """Whether ``stop_at="auto"`` ends this prompt's output at its line (`.stop_rules`)."""
        return ends_at_line(self, prompt)

    def _run(self, items: Iterable[tuple[int, Any, Any]], cfg: SearchConfig) -> Iterator[GenerationResult]:
        """Results of ``(index, prompt, constraints)`` items under one config, as they finish."""
        eos_ids = self.stop_ids(cfg)
        max_new_tokens = cfg.max_new_tokens
        free = self.input_constraints(None, allow_control_tokens=cfg.allow_control_tokens)
        texts: dict[int, Any] = {}
        phrase_texts: dict[int, tuple[str, ...]] = {}
        context: dict[int, ExplainContext] = {}  # for GenerationResult.explain()

        def requests() -> Iterator[Request]:
            for i, p, cc in items:
                inp = free if cc is None else self.input_constraints(cc)
                phrase_texts[i] = inp.phrase_texts
                context[i] = ExplainContext(self, p, cc, cfg)
                texts[i] = p if isinstance(p, str) else None
                yield self.request(i, p, inp, max_new_tokens, want_query=cfg.length_ratio is not None, stop=cfg.stop)

        search = replace(cfg, nbest=cfg.beam_size) if cfg.stop else cfg  # stop: n distinct of the beam's outputs
        engine = SearchEngine(self.adapter, search, eos_ids=eos_ids, device=self.device)
        self.last_stats = engine.stats
        with torch.inference_mode():
            for raw in engine.run(requests()):
                ctx = context.pop(raw.index, None)
                res = self.result(raw, texts.get(raw.index), phrase_texts.get(raw.index, ()), cfg,
                                  ctx.constraints if ctx is not None else None)
                res = replace(res, _context=ctx)
                for w in res.warnings:
                    warnings.warn(w, stacklevel=3)
                yield res

    def request(self, index: int, prompt, inp: InputConstraints, max_new_tokens: int, *,
                want_query: bool = False, stop: Sequence[str] = ()) -> Request:
        """The search request of one prompt (string or ids); a prompt the model cannot take (empty, ids
        outside the vocabulary, longer than its context) gets ``error`` set instead. ``want_query``:
        count the prompt's query tokens (the length target's base); ``stop``: ``SearchConfig.stop``."""
        p, error = prompt, None
        try:
            ids = self.encode(p, where=f"prompt {index}")
        except DecodeError as exc:
            ids, error = [], str(exc)
        if error is None and (not ids or (isinstance(p, str) and not p.strip())):
            error = "empty prompt: nothing to condition on (give some text, or token ids)"
        V = self.vocab_size
        bad = next((t for t in ids if not 0 <= t < V), None) if error is None else None
        if bad is not None:
            error = (f"prompt token id {bad} is outside the model's vocabulary of {V} ids: "
                     "encode the prompt with this model's tokenizer")
        maxpos = self.adapter.max_positions
        if error is None and maxpos and self.adapter.kind == "causal" and len(ids) + max_new_tokens > maxpos:
            error = (f"prompt of {len(ids)} tokens + max_new_tokens={max_new_tokens} exceeds the model's context "
                     f"of {maxpos} positions: shorten the prompt or lower max_new_tokens")
        if error is None and maxpos and self.adapter.kind == "seq2seq" and len(ids) > maxpos:
            error = f"source of {len(ids)} tokens exceeds the model's {maxpos} positions"
        q = self.query_tokens(p, ids) if error is None and want_query else None
        rule = StopRule(stop, self.vocab.token_bytes) if stop else None
        return Request(index, ids, inp, error, q, rule)

    def _config(self, config: SearchConfig | None, overrides: dict) -> SearchConfig:
        # the preset (default: the prompt format's, as every door applies it), then the settings of
        # ``config`` that differ from SearchConfig()'s, then the keywords; a config a door built
        # from a preset (`search_config`) is taken whole, with the keywords over it
        preset = overrides.pop("preset", None)
        cfg = resolve_config(config, overrides)  # names an unknown keyword or a bad config at once
        if preset is None and config is not None and config.preset is not None:
            return cfg
        preset = preset or "auto"
        return search_config(self.preset if preset == "auto" else preset, {**config_overrides(config), **overrides})

    def result(self, raw: RawResult, prompt, phrases: tuple[str, ...], cfg: SearchConfig | None = None,
               constraints=None) -> GenerationResult:
        """The :class:`GenerationResult` of a search's raw result; ``prompt``: the text shown in
        it (None for ids), ``phrases``: the input's ``InputConstraints.phrase_texts``, ``cfg``: the
        search's config (an empty output says why), ``constraints``: the input's compiled
        constraints (a JSON output's ``satisfied`` also means it parses and validates)."""
        if raw.error is not None:
            return GenerationResult.failed(raw.index, raw.error, prompt=prompt, phrases=phrases,
                                           warnings=(f"input {raw.index}: {raw.error}",))
        hyps = hypotheses(raw.hypotheses, self.vocab.token_bytes, cfg)
        best = hyps[0]
        notes = tuple(raw.warnings)
        if not best.text.strip() and not notes:  # never an empty output without a word on why
            notes = (f"input {raw.index}: {empty_reason(best.finish_reason, cfg)}",)
        res = GenerationResult(index=raw.index, text=best.text, token_ids=best.token_ids, score=best.score,
                               logprob=best.logprob, satisfied=best.satisfied, phrases=phrases,
                               phrases_met=best.phrases_met, steps=raw.steps, finish_reason=best.finish_reason,
                               hypotheses=hyps, warnings=notes, prompt=prompt)
        return check_result(res, constraints)

    # ---- re-scoring -----------------------------------------------------------------------------
    def score(self, prompt, token_ids: Sequence[int], *, eos: bool = True) -> float:
        """Log-probability of ``token_ids`` (then EOS, the first of ``eos_ids``, when ``eos``)
        after ``prompt`` under the model, from one uncached forward pass."""
        from .rescore import score

        return score(self, prompt, token_ids, eos=eos)

