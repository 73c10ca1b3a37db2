"""The Python API: :class:`Decoder` turns prompts (and compiled constraints) into outputs.

>>> from fstbeam import Decoder, compile_constraints          # doctest: +SKIP
>>> dec = Decoder()                                           # the default model, CPU or CUDA
>>> cc = compile_constraints(cefr="A1", tokenizer="default")
>>> [r] = dec.generate(["Question: What do you eat for breakfast?\\nAnswer:"], cc, max_new_tokens=40)
>>> r.text, r.satisfied
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator, Literal, Sequence

import torch

from ..errors import DecodeError, TokenizerMismatchError
from .adapters import adapter_for
from .packed_model import check_mode as check_packed_mode
from .results import GenerationResult, Hypothesis
from .config import SearchConfig, resolve_config, stop_ids
from .explain import ExplainContext
from .search import RawResult, Request, SearchEngine
from .tables import InputConstraints

__all__ = ["Decoder", "SearchConfig"]

PromptFormat = Literal["auto", "raw", "chat"]


def resolve_device(device) -> torch.device:
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _is_adapter(obj) -> bool:
    return all(hasattr(obj, name) for name in ("prefill", "step", "select", "concat", "vocab_size"))


class Decoder:
    """Constrained beam search over a Hugging Face model.

    ``model``: ``None`` (the default Gemma 3 270M, converted once and cached), a path or hub id
    (``AutoModelForCausalLM`` / ``AutoModelForSeq2SeqLM``), a loaded model, or a model adapter.
    ``tokenizer``: ``None`` (the model's own), a path, a Hugging Face tokenizer, or a
    ``fstbeam.contract.vocab.Vocab`` (then prompts must be token id lists).
    ``prompt_format``: ``"raw"`` (prompts as text continuations), ``"chat"`` (the tokenizer's chat
    template with a generation prompt), ``"auto"`` (chat when the tokenizer has a template; the
    default Gemma 3 270M is a base model without one), or a template string with ``{prompt}``.
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
        self.device = resolve_device(device)
        check_packed_mode(packed_weights)
        default_eos: tuple[int, ...] = ()
        if model is None:
            from ..files.default_model import default_eos_ids, load_default_model, load_default_tokenizer

            model = load_default_model(self.device, dtype)
            tokenizer = tokenizer if tokenizer is not None else load_default_tokenizer()
            default_eos = default_eos_ids()
        elif isinstance(model, (str, os.PathLike)):
            from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

            from ..files.status import status

            cfg = AutoConfig.from_pretrained(str(model))
            cls = AutoModelForSeq2SeqLM if getattr(cfg, "is_encoder_decoder", False) else AutoModelForCausalLM
            path = str(model)
            with status(f"loading the model {path}"):
                model = cls.from_pretrained(path, dtype=dtype or torch.float32).to(self.device)
            if tokenizer is None:
                tokenizer = _load_tokenizer(path)
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = _load_tokenizer(tokenizer)
        if _is_adapter(model):
            self.adapter = model
            self.model = getattr(model, "model", None)
        else:
            if dtype is not None:
                model = model.to(dtype)
            model = model.to(self.device)
            self.model = model
            self.adapter = adapter_for(model, packed_weights)
        self.tokenizer = tokenizer
        self._vocab = tokenizer if _is_vocab(tokenizer) else None
        self.eos_ids = self._check_eos(eos_ids if eos_ids is not None else (default_eos or self._model_eos()))
        if not self.eos_ids:
            raise DecodeError("no EOS token id: pass eos_ids=[...] (the model config and tokenizer name none)")
        self.prompt_format = prompt_format
        self._checked: dict[int, Any] = {}
        self.last_stats = None

    def _check_eos(self, eos_ids) -> tuple[int, ...]:
        """EOS ids as ints inside the model's vocabulary, or a DecodeError naming the bad one."""
        if isinstance(eos_ids, (int, str, bytes)) or not hasattr(eos_ids, "__iter__"):
            eos_ids = [eos_ids]
        out = []
        V = self.vocab_size
        for e in eos_ids:
            if isinstance(e, bool) or not isinstance(e, (int,)) and not (hasattr(e, "__index__")):
                raise DecodeError(f"eos_ids must be token ids (ints), not {type(e).__name__} {e!r}")
            if not 0 <= int(e) < V:
                raise DecodeError(f"EOS id {int(e)} is outside the model's vocabulary of {V} ids: pass ids in [0, {V})")
            out.append(int(e))
        return tuple(out)

    # ---- model facts -----------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return int(self.adapter.vocab_size)

    def _model_eos(self) -> tuple[int, ...]:
        out: list[int] = []
        gen = getattr(self.model, "generation_config", None)
        for src in (getattr(gen, "eos_token_id", None), getattr(getattr(self.model, "config", None), "eos_token_id", None),
                    getattr(self.tokenizer, "eos_token_id", None)):
            for e in (src if isinstance(src, (list, tuple)) else [src]):
                if e is not None and int(e) not in out and 0 <= int(e) < self.vocab_size:
                    out.append(int(e))
            if out:
                break
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

    def encode(self, prompt) -> list[int]:
        """Token ids of one prompt (a string, formatted per ``prompt_format``, or ids as is)."""
        if isinstance(prompt, str):
            if self.tokenizer is None or _is_vocab(self.tokenizer):
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
            return [int(i) for i in self.tokenizer(prompt)["input_ids"]]
        try:
            return [int(i) for i in prompt]
        except TypeError as exc:
            raise DecodeError(f"a prompt must be a string or a list of token ids, not {type(prompt).__name__}") from exc

    def newline_ids(self) -> tuple[int, ...]:
        """Ids of the tokens made only of newlines (``stop_at="line"`` adds them to the EOS ids: a
        base model answering a question otherwise goes on to the next one)."""
        return tuple(i for i, b in enumerate(self.vocab.token_bytes) if b and not b.strip(b"\r\n"))

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of generated tokens: the concatenation of their bytes (special tokens omitted)."""
        tb = self.vocab.token_bytes
        return b"".join(tb[t] or b"" for t in token_ids if 0 <= t < len(tb)).decode("utf-8", "replace")

    # ---- constraints --------------------------------------------------------------------------
    def _unconstrained(self, allow_control_tokens: bool) -> InputConstraints:
        """Constraints of a prompt without any: every text token of the tokenizer (special and
        control tokens are never output text, see ``Vocab``); every id when asked for, or when
        the decoder has no tokenizer to tell text from control tokens."""
        if allow_control_tokens or self.tokenizer is None:
            return InputConstraints(constrained=False)
        if getattr(self, "_text_only", None) is None:
            self._text_only = InputConstraints(text_ids=self.vocab.text_ids)
        return self._text_only

    def _check(self, cc) -> InputConstraints:
        if cc is None:
            return InputConstraints(constrained=False)
        key = id(cc)
        hit = self._checked.get(key)
        if hit is not None and hit[0] is cc:
            return hit[1]
        if not hasattr(cc, "vocab") or not hasattr(cc, "phrases"):
            raise DecodeError(f"constraints must be CompiledConstraints (from compile_constraints / load_constraints), not {type(cc).__name__}")
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
        inp = InputConstraints.from_compiled(cc)
        self._checked[key] = (cc, inp)
        return inp

    # ---- decoding -----------------------------------------------------------------------------
    def generate(self, prompts, constraints=None, config: SearchConfig | None = None, **overrides) -> list[GenerationResult]:
        """Decode every prompt; one :class:`GenerationResult` per prompt, in order.

        ``constraints``: ``None``, one ``CompiledConstraints`` for all prompts, or a list with one
        (or ``None``) per prompt. ``config``: a :class:`SearchConfig` (default ``SearchConfig()``);
        ``overrides``: any of its fields for this call, e.g. ``beam_size=8``,
        ``stop_at="line"`` (stop at the end of a line too), ``length_reward=1.0``,
        ``min_new_tokens=2``, ``no_repeat_ngram=4`` (see docs/decoding.md;
        ``fstbeam.runtime.defaults.generate_defaults()`` are the settings ``fstbeam generate`` uses). An unknown
        setting or a bad value raises :class:`~fstbeam.errors.DecodeError` naming it.
        """
        if isinstance(prompts, str):
            prompts = [prompts]
        prompts = list(prompts)
        if not prompts:
            raise DecodeError("no prompts: pass a list with at least one prompt")
        if constraints is not None and not hasattr(constraints, "vocab"):
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
        cfg = self._config(config, overrides)
        eos_ids = self._check_eos(stop_ids(cfg, self.eos_ids, self.newline_ids))
        max_new_tokens = cfg.max_new_tokens
        free = self._unconstrained(cfg.allow_control_tokens)
        shared = constraints is None or hasattr(constraints, "vocab")
        cons_iter = None if shared else iter(constraints)
        texts: dict[int, Any] = {}
        phrase_texts: dict[int, tuple[str, ...]] = {}
        context: dict[int, ExplainContext] = {}  # for GenerationResult.explain()

        def requests() -> Iterator[Request]:
            missing = object()
            for i, p in enumerate(prompts):
                cc = constraints if shared else next(cons_iter, missing)
                if cc is missing:
                    raise DecodeError(f"constraints ran out at prompt {i}: give one constraint set (or None) per prompt")
                inp = free if cc is None else self._check(cc)
                phrase_texts[i] = inp.phrase_texts
                context[i] = ExplainContext(self, p, cc, cfg)
                texts[i] = p if isinstance(p, str) else None
                error = None
                try:
                    ids = self.encode(p)
                except DecodeError as exc:
                    ids, error = [], str(exc)
                if error is None and (not ids or (isinstance(p, str) and not p.strip())):
                    error = "empty prompt: nothing to condition on (give some text, or token ids)"
                V = self.vocab_size
                bad = next((t for t in ids if not 0 <= t < V), None) if error is None else None
                if bad is not None:
                    error = (f"prompt token id {bad} is outside the model's vocabulary of {V} ids: "
                             "encode the prompt with this model's tokenizer")
                maxpos = getattr(self.adapter, "max_positions", None)
                if error is None and maxpos and self.adapter.kind == "causal" and len(ids) + max_new_tokens > maxpos:
                    error = (f"prompt of {len(ids)} tokens + max_new_tokens={max_new_tokens} exceeds the model's context "
                             f"of {maxpos} positions: shorten the prompt or lower max_new_tokens")
                if error is None and maxpos and self.adapter.kind == "seq2seq" and len(ids) > maxpos:
                    error = f"source of {len(ids)} tokens exceeds the model's {maxpos} positions"
                yield Request(i, ids, inp, error)

        engine = SearchEngine(self.adapter, cfg, eos_ids=eos_ids, device=self.device)
        self.last_stats = engine.stats
        held: dict[int, GenerationResult] = {}
        nxt = 0
        with torch.inference_mode():
            for raw in engine.run(requests()):
                res = self._result(raw, texts.get(raw.index), phrase_texts.get(raw.index, ()))
                res = replace(res, _context=context.pop(raw.index, None))
                for w in res.warnings:
                    warnings.warn(w, stacklevel=2)
                if not ordered:
                    yield res
                    continue
                held[res.index] = res
                while nxt in held:
                    yield held.pop(nxt)
                    nxt += 1
        for i in sorted(held):
            yield held[i]

    def _config(self, config: SearchConfig | None, overrides: dict) -> SearchConfig:
        cfg = resolve_config(config, overrides)
        if cfg.expand == "least_advanced" and not hasattr(self.adapter, "take"):
            raise DecodeError(f"expand='least_advanced' needs an adapter with take(); {type(self.adapter).__name__} has none")
        return cfg

    def _result(self, raw: RawResult, prompt, phrases: tuple[str, ...]) -> GenerationResult:
        if raw.error is not None:
            return GenerationResult(raw.index, "", (), float("-inf"), float("-inf"), False, phrases,
                                    tuple(False for _ in phrases), 0, "error", (), (f"input {raw.index}: {raw.error}",),
                                    raw.error, prompt)
        hyps = tuple(
            Hypothesis(self.decode(h.tokens), tuple(h.tokens), h.score, h.logprob, h.satisfied, h.phrases_met, h.finish_reason)
            for h in raw.hypotheses
        )
        best = hyps[0]
        return GenerationResult(raw.index, best.text, best.token_ids, best.score, best.logprob, best.satisfied, phrases,
                                best.phrases_met, raw.steps, best.finish_reason, hyps, tuple(raw.warnings), None, prompt)

    # ---- re-scoring -----------------------------------------------------------------------------
    @torch.inference_mode()
    def score(self, prompt, token_ids: Sequence[int], *, eos: bool = True) -> float:
        """Log-probability of ``token_ids`` (then EOS, the first of ``eos_ids``, when ``eos``)
        after ``prompt`` under the model, from one uncached forward pass."""
        ids = self.encode(prompt)
        cont = list(token_ids) + ([self.eos_ids[0]] if eos else [])
        if self.model is None:
            raise DecodeError("score() needs a Hugging Face model")
        dev = self.device
        if getattr(self.model.config, "is_encoder_decoder", False):
            start = getattr(self.model.config, "decoder_start_token_id", 0) or 0
            dec = torch.tensor([[start] + cont[:-1]], device=dev)
            logits = self.model(input_ids=torch.tensor([ids], device=dev), decoder_input_ids=dec).logits[0].float()
            lp = torch.log_softmax(logits, -1)
            return float(lp[torch.arange(len(cont)), torch.tensor(cont, device=dev)].sum())
        seq = torch.tensor([ids + cont], device=dev)
        logits = self.model(seq).logits[0, len(ids) - 1 : -1].float()
        lp = torch.log_softmax(logits, -1)
        return float(lp[torch.arange(len(cont)), torch.tensor(cont, device=dev)].sum())


def _load_tokenizer(path):
    """A Hugging Face tokenizer from a folder or file; a broken one (say, a tokenizer.json holding
    a list) is a TokenizerError naming the path, not whatever transformers raises."""
    from transformers import AutoTokenizer

    from ..errors import TokenizerError

    try:
        return AutoTokenizer.from_pretrained(str(path))
    except Exception as exc:  # noqa: BLE001 - transformers raises many kinds for a bad folder
        raise TokenizerError(f"cannot load a tokenizer from {path} ({type(exc).__name__}: {str(exc)[:200]}): pass a "
                             "folder with a valid tokenizer.json (and tokenizer_config.json)") from None


def _is_vocab(obj) -> bool:
    return obj is not None and hasattr(obj, "token_bytes") and hasattr(obj, "fingerprint")
