"""What a Hugging Face model is and supports, read once when its adapter is made.

This is the one place in the runtime that looks at a model's configuration: configurations differ
per architecture (a field one model has, another lacks), so they are read here with defaults, and
the adapters (:mod:`.adapters`) keep the answers in typed attributes (:class:`ModelFacts`). The
search and the decoder ask the adapter (:class:`~.adapter_protocol.ModelAdapter`), never the model.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch

from ...errors import DecodeError

__all__ = ["ModelFacts", "model_facts", "is_encoder_decoder", "load_tokenizer"]

# ALiBi models build their position biases from a 2-D padding mask (the cumulative count of real
# columns), so they get one; real columns are a contiguous suffix of every row, so the distances
# are those of an unpadded decode.
_MASK_2D_MODELS = ("bloom", "mpt")


@dataclass(frozen=True)
class ModelFacts:
    encoder_decoder: bool
    vocab_size: int  # rows of the output layer
    device: torch.device
    dtype: torch.dtype
    max_positions: int | None
    eos_ids: tuple[int, ...]  # from the generation config, else the model config
    # causal LMs: attention windows per layer type (Gemma 2/3) or one window (Mistral), the
    # 2-D padding mask of ALiBi models, whether forward() takes ``logits_to_keep``, the soft-cap
    windows: dict[str, int | None] | None = None
    window: int | None = None
    mask_2d: bool = False
    keeps_logits: bool = False
    softcap: float | None = None
    # encoder-decoders: the first decoder input; relative decoder positions (T5) allow refill
    decoder_start: int | None = None
    relative_positions: bool = False
    # the keyword forward() takes the KV cache by: "cache" in transformers 5.x, which warns
    # (FutureWarning) on the older "past_key_values" it still accepts
    cache_kwarg: str = "past_key_values"


def is_encoder_decoder(config: Any) -> bool:
    """Whether a model configuration describes an encoder-decoder (``AutoModelForSeq2SeqLM``)."""
    return bool(getattr(config, "is_encoder_decoder", False))


def model_facts(model: Any) -> ModelFacts:
    """The facts of a loaded Hugging Face model (see the module docs)."""
    try:
        first = next(model.parameters())
        device, dtype = first.device, first.dtype
    except StopIteration:  # pragma: no cover - a model without parameters
        device, dtype = torch.device("cpu"), torch.float32
    cfg = model.config
    text = cfg.get_text_config(decoder=True)
    width = _output_width(model, text)
    encdec = is_encoder_decoder(cfg)
    pos_cfg = cfg if encdec else text
    common = dict(
        vocab_size=width, device=device, dtype=dtype,
        max_positions=getattr(pos_cfg, "max_position_embeddings", None) or getattr(pos_cfg, "n_positions", None),
        eos_ids=_eos_ids(model, width),
    )
    if encdec:
        start = getattr(cfg, "decoder_start_token_id", None)
        if start is None:
            start = getattr(cfg, "pad_token_id", 0) or 0
        return ModelFacts(True, **common, decoder_start=int(start), cache_kwarg=_cache_kwarg(model.forward),
                          relative_positions=hasattr(cfg, "relative_attention_num_buckets"))
    windows, window = _windows(model, text)
    cap = getattr(text, "final_logit_softcapping", None)
    return ModelFacts(False, **common, windows=windows, window=window,
                      mask_2d=getattr(text, "model_type", None) in _MASK_2D_MODELS,
                      keeps_logits=_accepts(model.forward, "logits_to_keep"), softcap=float(cap) if cap else None,
                      cache_kwarg=_cache_kwarg(model.forward))


def _cache_kwarg(fn: Any) -> str:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return "past_key_values"
    return "cache" if "cache" in params and "past_key_values" not in params else "past_key_values"


def _output_width(model: Any, text_config: Any) -> int:
    emb = model.get_output_embeddings()
    if emb is not None and getattr(emb, "weight", None) is not None:
        return int(emb.weight.shape[0])
    return int(text_config.vocab_size)


def _windows(model: Any, cfg: Any) -> tuple[dict[str, int | None] | None, int | None]:
    """Sliding windows: per attention layer type (``layer_types``, Gemma 2/3), or one for every
    layer (Mistral's ``sliding_window``), or none."""
    layer_types = getattr(cfg, "layer_types", None)
    window = getattr(cfg, "sliding_window", None)
    if layer_types and "sliding_attention" in set(layer_types):
        bad = sorted(set(layer_types) - {"full_attention", "sliding_attention"})
        if bad:
            raise DecodeError(f"{type(model).__name__}: attention layer types {bad} are not supported by fstbeam's adapter")
        return {"full_attention": None, "sliding_attention": int(window)}, None
    if not layer_types and window and getattr(cfg, "use_sliding_window", True):
        return None, int(window)
    return None, None


def _eos_ids(model: Any, width: int) -> tuple[int, ...]:
    """EOS ids of the generation config, else of the model config (ids inside the output width)."""
    gen = getattr(model, "generation_config", None)  # None for models that cannot generate
    for src in (getattr(gen, "eos_token_id", None), getattr(model.config, "eos_token_id", None)):
        out: list[int] = []
        for e in (src if isinstance(src, (list, tuple)) else [src]):
            if e is not None and int(e) not in out and 0 <= int(e) < width:
                out.append(int(e))
        if out:
            return tuple(out)
    return ()


def _accepts(fn: Any, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def load_tokenizer(path):
    """A Hugging Face tokenizer from a folder or file; a broken one (say, a tokenizer.json holding
    a list) is a TokenizerError naming the path, not whatever transformers raises."""
    from transformers import AutoTokenizer

    from ...errors import TokenizerError

    try:
        return AutoTokenizer.from_pretrained(str(path))
    except Exception as exc:  # noqa: BLE001 - transformers raises many kinds for a bad folder
        raise TokenizerError(f"cannot load a tokenizer from {path} ({type(exc).__name__}: {str(exc)[:200]}): pass a "
                             "folder with a valid tokenizer.json (and tokenizer_config.json)") from None
