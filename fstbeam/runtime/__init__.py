"""The decoder: device tables, beam state, DBA banks, the search step, streaming, model adapters
(Hugging Face) and the transformers ``LogitsProcessor`` adapter.

Never imports pynini: a serving box decodes without the compiler's dependencies.
"""
from __future__ import annotations

from .._lazy import lazy_exports as _lazy_exports

# Lazy: importing fstbeam.runtime must not import torch/transformers eagerly.
_LAZY = {
    "Decoder": (".decoder", "Decoder"),
    "SearchConfig": (".config", "SearchConfig"),
    "GenerationResult": (".results", "GenerationResult"),
    "Hypothesis": (".results", "Hypothesis"),
    "FstLogitsProcessor": (".logits_processor", "FstLogitsProcessor"),
    "ModelAdapter": (".model.adapter_protocol", "ModelAdapter"),
}

__all__ = list(_LAZY)

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
