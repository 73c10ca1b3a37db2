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
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Literal, Sequence

import torch

from ..errors import DecodeError, TokenizerMismatchError
from .adapters import adapter_for
from .results import GenerationResult, Hypothesis
from .scoring import Scoring
from .search import RawResult, Request, SearchConfig, SearchEngine
from .tables import InputConstraints

__all__ = ["Decoder"]

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
    ``fstbeam.compiler.vocab.Vocab`` (then prompts must be token id lists).
    ``prompt_format``: ``"raw"`` (prompts as text continuations), ``"chat"`` (the tokenizer's chat
    template with a generation prompt), ``"auto"`` (chat when the tokenizer has a template; the
    default Gemma 3 270M is a base model without one), or a template string with ``{prompt}``.
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
    ):
        self.device = resolve_device(device)
        default_eos: tuple[int, ...] = ()
        if model is None:
            from ..default_model import default_eos_ids, load_default_model, load_default_tokenizer

            model = load_default_model(self.device, dtype)
            tokenizer = tokenizer if tokenizer is not None else load_default_tokenizer()
            default_eos = default_eos_ids()
        elif isinstance(model, (str, os.PathLike)):
            from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

            cfg = AutoConfig.from_pretrained(str(model))
            cls = AutoModelForSeq2SeqLM if getattr(cfg, "is_encoder_decoder", False) else AutoModelForCausalLM
            path = str(model)
            model = cls.from_pretrained(path, dtype=dtype or torch.float32).to(self.device)
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(path)
        if isinstance(tokenizer, (str, os.PathLike)):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
        if _is_adapter(model):
            self.adapter = model
            self.model = getattr(model, "model", None)
        else:
            if dtype is not None:
                model = model.to(dtype)
            model = model.to(self.device)
            self.model = model
            self.adapter = adapter_for(model)
        self.tokenizer = tokenizer
        self._vocab = tokenizer if _is_vocab(tokenizer) else None
        self.eos_ids = tuple(int(e) for e in (eos_ids if eos_ids is not None else (default_eos or self._model_eos())))
        if not self.eos_ids:
            raise DecodeError("no EOS token id: pass eos_ids=[...] (the model config and tokenizer name none)")
        self.prompt_format = prompt_format
        self._checked: dict[int, Any] = {}
        self.last_stats = None

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
            from ..compiler.vocab import Vocab

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
        """Ids of the tokens made only of newlines (pass them as extra ``eos_ids`` to stop at the
        end of a line: a base model answering a question otherwise goes on to the next one)."""
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
    def generate(
        self,
        prompts,
        constraints=None,
        *,
        beam_size: int = 5,
        max_new_tokens: int = 64,
        nbest: int = 1,
        **options,
    ) -> list[GenerationResult]:
        """Decode every prompt; one :class:`GenerationResult` per prompt, in order.

        ``constraints``: ``None``, one ``CompiledConstraints`` for all prompts, or a list with one
        (or ``None``) per prompt. Options: ``length_reward`` (r) with ``target_length`` or
        ``length_ratio`` (``l = ratio * prompt tokens``; default ``l = max_new_tokens``),
        ``length_normalization`` (alpha), ``renormalize`` (log-probs over the allowed tokens),
        ``prune_threshold`` (delta), ``max_per_parent`` (M), ``dba`` (default True),
        ``stopping`` (``"optimal"`` or ``"exhaustive"``: to the length limit), ``batch_size``
        (inputs decoded together, default 8), ``streaming`` (refill the batch as inputs finish,
        default True), ``refill`` (epsilon, default 1/6), ``expand`` (``"all"``: every live input
        each step, the default; ``"least_advanced"``: only the inputs with the fewest output
        tokens, the others wait, as in Yang et al.'s VAR-STREAM), ``eos_ids`` (end-of-output ids for this call,
        e.g. the decoder's plus newline tokens to stop at the end of a line; like EOS they are
        allowed only where the constraints accept and are not part of the text),
        ``min_new_tokens`` (EOS only after that many output tokens; default 0),
        ``no_repeat_ngram`` (n: no token n-gram twice in an output; default 0 = off),
        ``allow_control_tokens`` (default False: unconstrained decoding, like compiled
        constraints, never emits special or control tokens such as ``<start_of_image>``).
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
        results = list(self.stream(prompts, constraints, beam_size=beam_size, max_new_tokens=max_new_tokens, nbest=nbest, **options))
        results.sort(key=lambda r: r.index)
        return results

    def stream(
        self,
        prompts: Iterable,
        constraints=None,
        *,
        beam_size: int = 5,
        max_new_tokens: int = 64,
        nbest: int = 1,
        ordered: bool = False,
        **options,
    ) -> Iterator[GenerationResult]:
        """Decode an iterable of prompts, yielding results as inputs finish (in input order when
        ``ordered=True``). Options as for :meth:`generate`."""
        options = dict(options)
        eos_ids = tuple(int(e) for e in options.pop("eos_ids", None) or self.eos_ids)
        free = self._unconstrained(bool(options.pop("allow_control_tokens", False)))
        cfg = self._config(beam_size, max_new_tokens, nbest, options)
        shared = constraints is None or hasattr(constraints, "vocab")
        cons_iter = None if shared else iter(constraints)
        texts: dict[int, Any] = {}
        phrase_texts: dict[int, tuple[str, ...]] = {}

        def requests() -> Iterator[Request]:
            missing = object()
            for i, p in enumerate(prompts):
                cc = constraints if shared else next(cons_iter, missing)
                if cc is missing:
                    raise DecodeError(f"constraints ran out at prompt {i}: give one constraint set (or None) per prompt")
                inp = free if cc is None else self._check(cc)
                phrase_texts[i] = inp.phrase_texts
                texts[i] = p if isinstance(p, str) else None
                error = None
                try:
                    ids = self.encode(p)
                except DecodeError as exc:
                    ids, error = [], str(exc)
                if error is None and not ids:
                    error = "empty prompt: nothing to condition on (a causal LM needs at least one token)"
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

    def _config(self, beam_size, max_new_tokens, nbest, options) -> SearchConfig:
        opts = dict(options)
        if not isinstance(beam_size, int) or beam_size < 1:
            raise DecodeError(f"beam_size must be a positive integer (got {beam_size!r})")
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise DecodeError(f"max_new_tokens must be a positive integer (got {max_new_tokens!r})")
        if not isinstance(nbest, int) or not 1 <= nbest <= beam_size:
            raise DecodeError(f"nbest must be between 1 and beam_size={beam_size} (got {nbest!r})")
        scoring = Scoring.make(length_reward=opts.pop("length_reward", None), length_normalization=opts.pop("length_normalization", None))
        batch_size = opts.pop("batch_size", 8)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise DecodeError(f"batch_size must be a positive integer (got {batch_size!r})")
        refill = float(opts.pop("refill", 1 / 6))
        if not 0 <= refill < 1:
            raise DecodeError(f"refill (epsilon) must be in [0, 1) (got {refill})")
        stopping = opts.pop("stopping", "optimal")
        if stopping not in ("optimal", "exhaustive"):
            raise DecodeError(f"stopping must be 'optimal' or 'exhaustive' (got {stopping!r})")
        expand = opts.pop("expand", "all")
        if expand not in ("all", "least_advanced"):
            raise DecodeError(f"expand must be 'all' or 'least_advanced' (got {expand!r})")
        if expand == "least_advanced" and not hasattr(self.adapter, "take"):
            raise DecodeError(f"expand='least_advanced' needs an adapter with take(); {type(self.adapter).__name__} has none")
        mpp = opts.pop("max_per_parent", None)
        if mpp is not None and (not isinstance(mpp, int) or mpp < 1):
            raise DecodeError(f"max_per_parent must be a positive integer (got {mpp!r})")
        delta = opts.pop("prune_threshold", None)
        if delta is not None and not delta >= 0:
            raise DecodeError(f"prune_threshold must be >= 0 (got {delta!r})")
        guards = {}
        for name, low in (("min_new_tokens", 0), ("no_repeat_ngram", 0)):
            v = opts.pop(name, None) or 0
            if not isinstance(v, int) or v < low:
                raise DecodeError(f"{name} must be an integer >= {low} (got {v!r})")
            guards[name] = v
        if guards["min_new_tokens"] > max_new_tokens:
            raise DecodeError(f"min_new_tokens={guards['min_new_tokens']} exceeds max_new_tokens={max_new_tokens}: lower it")
        tl = opts.pop("target_length", None)
        lr = opts.pop("length_ratio", None)
        cfg = SearchConfig(
            beam_size=beam_size, max_new_tokens=max_new_tokens, nbest=nbest, scoring=scoring, target_length=tl,
            length_ratio=lr, renormalize=bool(opts.pop("renormalize", False)), prune_threshold=delta,
            max_per_parent=mpp, dba=bool(opts.pop("dba", True)), stopping=stopping, batch_size=batch_size,
            refill=refill, streaming=bool(opts.pop("streaming", True)), expand=expand, kernel_backend=opts.pop("kernel_backend", "auto"),
            **guards,
        )
        if opts:
            raise DecodeError(f"unknown option(s): {sorted(opts)}")
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


def _is_vocab(obj) -> bool:
    return obj is not None and hasattr(obj, "token_bytes") and hasattr(obj, "fingerprint")
