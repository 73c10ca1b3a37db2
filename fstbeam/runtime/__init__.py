"""The decoder: device tables, beam state, DBA banks, the search step, streaming, model adapters
(Hugging Face) and the transformers ``LogitsProcessor`` adapter.

Never imports pynini: a serving box decodes without the compiler's dependencies.
"""
from __future__ import annotations

__all__ = ["Decoder", "SearchConfig", "GenerationResult", "Hypothesis", "FstLogitsProcessor"]


def __getattr__(name):  # lazy: importing fstbeam.runtime must not import torch/transformers eagerly
    if name == "Decoder":
        from .decoder import Decoder

        return Decoder
    if name == "SearchConfig":
        from .config import SearchConfig

        return SearchConfig
    if name in ("GenerationResult", "Hypothesis"):
        from . import results

        return getattr(results, name)
    if name == "FstLogitsProcessor":
        from .logits_processor import FstLogitsProcessor

        return FstLogitsProcessor
    raise AttributeError(f"module 'fstbeam.runtime' has no attribute {name!r}")
