"""Stateless tensor kernels of the decode step: bitmask helpers, the fused masked
log-softmax + top-k (`masked_topk`) and DBA's best-token-per-phrase (`best_in_sets`).

    from fstbeam.kernels import masked_topk, best_in_sets, MaskedTopK

`fstbeam.kernels.bitmask` (and this package's import) needs numpy only: the compiler packs
masks with it and must never import torch. Everything that needs torch is loaded on first
attribute access (PEP 562 `__getattr__`). See docs/kernels.md.
"""
from __future__ import annotations

from .._lazy import lazy_exports as _lazy_exports
from . import bitmask as _bitmask
from .bitmask import (  # noqa: F401 - re-exported (fstbeam.kernels.pack_ids, ...)
    bitmask_width,
    pack_bool_mask,
    pack_bool_mask_torch,
    pack_ids,
    set_bits,
    tokens_in_bitmask,
    unpack_bitmask,
    unpack_bitmask_torch,
)

_LAZY = {
    "Backend": (".dispatch", "Backend"),
    "KernelInputError": (".errors", "KernelInputError"),
    "MaskedTopK": (".reference", "MaskedTopK"),
    "best_in_sets": (".dispatch", "best_in_sets"),
    "masked_topk": (".dispatch", "masked_topk"),
    "resolve_backend": (".dispatch", "resolve_backend"),
}

# The bitmask helpers (numpy; torch imported inside the *_torch ones) plus the lazy names.
__all__ = sorted([n for n in _bitmask.__all__ if n != "WORD_BITS"] + list(_LAZY))

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
