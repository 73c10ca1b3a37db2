"""Stateless tensor kernels of the decode step: bitmask helpers, the fused masked
log-softmax + top-k (`masked_topk`) and DBA's best-token-per-phrase (`best_in_sets`).

    from fstbeam.kernels import masked_topk, best_in_sets, MaskedTopK

`fstbeam.kernels.bitmask` (and this package's import) needs numpy only: the compiler packs
masks with it and must never import torch. Everything that needs torch is loaded on first
attribute access (PEP 562 `__getattr__`). See docs/kernels.md.
"""
from __future__ import annotations

import importlib

from . import bitmask as _bitmask
from .bitmask import (
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
    "Backend": ".dispatch",
    "KernelInputError": ".errors",
    "MaskedTopK": ".reference",
    "best_in_sets": ".dispatch",
    "masked_topk": ".dispatch",
    "resolve_backend": ".dispatch",
}

# The bitmask helpers (numpy; torch imported inside the *_torch ones) plus the lazy names.
__all__ = sorted([n for n in _bitmask.__all__ if n != "WORD_BITS"] + list(_LAZY))


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
