"""Packed weights for a model's linear layers while fstbeam runs it (CPU, float32, MKL builds).

During a decode step every ``nn.Linear`` of the model multiplies beam x batch rows (40 at batch 8,
beam 5); MKL's packed GEMM (:mod:`fstbeam.kernels.packed_gemm`) keeps each weight in the layout
its kernel reads instead of repacking it on every call. On the default Gemma 3 270M this cuts a
decode step by 7% unconstrained and 16% with the A1 shortlist on the 2-core dev machine
(``benchmarks/bench_decode.py``, section 6), for one extra copy of the linear weights in memory
(400 MB for the default model).

:class:`ModelPacking` finds the plain ``nn.Linear`` layers with float32 CPU weights (subclasses,
e.g. quantized layers, are left alone; so is the output layer: the largest weight, which the
shortlist replaces and the full head reads once per step anyway) and, inside :meth:`routing`,
points each one's ``forward`` at its packed GEMM; leaving restores the module, so the user's model
is unchanged outside fstbeam's calls. ``mode``: ``"auto"`` packs when possible and the weights
total at most ``AUTO_MAX_BYTES``; ``"on"`` packs whatever the size (an error where it cannot);
``"off"`` never packs.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Literal

import torch

from ...errors import DecodeError
from ...kernels.packed_gemm import PackedLinear, mkl_packing_available, packable

__all__ = ["ModelPacking", "PackedWeights", "AUTO_MAX_BYTES", "check_mode"]

PackedWeights = Literal["auto", "on", "off"]
MODES = ("auto", "on", "off")
# "auto" packs models whose linear weights total at most this (one more copy of them is made):
# Gemma 3 270M's 400 MB, not a multi-billion-parameter model's.
AUTO_MAX_BYTES = 1 << 30


def check_mode(mode) -> str:
    if mode not in MODES:
        raise DecodeError(f"packed_weights must be one of {', '.join(MODES)} (got {mode!r})")
    return mode


def _linears(model) -> list[torch.nn.Linear]:
    head = model.get_output_embeddings()  # a Hugging Face model (None when it has no output layer)
    return [m for m in model.modules()
            if type(m) is torch.nn.Linear and m is not head and "forward" not in m.__dict__]


class ModelPacking:
    """The packed linear layers of one model (see the module docs)."""

    def __init__(self, model, mode: PackedWeights = "auto"):
        self.mode = check_mode(mode)
        self.reason: str | None = None  # why nothing is packed
        self._layers: list[tuple[torch.nn.Linear, PackedLinear]] = []
        if mode == "off":
            self.reason = "packed_weights='off'"
            return
        linears = _linears(model)
        why = self._refusal(linears)
        if why is None and mode == "auto" and sum(m.weight.numel() * 4 for m in linears) > AUTO_MAX_BYTES:
            why = f"the linear weights exceed {AUTO_MAX_BYTES >> 20} MB (packed_weights='on' packs them anyway)"
        if why is not None:
            if mode == "on":
                raise DecodeError(f"packed_weights='on' is not possible: {why}; use 'auto' or 'off'")
            self.reason = why
            return
        self._layers = [(m, PackedLinear(m.weight, m.bias)) for m in linears]

    @staticmethod
    def _refusal(linears) -> str | None:
        if not mkl_packing_available():
            return "this PyTorch build has no MKL packed GEMM"
        if not linears:
            return "the model has no plain nn.Linear layers"
        if not all(packable(m.weight) for m in linears):
            return "the linear weights are not float32 on the CPU"
        return None

    @property
    def active(self) -> bool:
        return bool(self._layers)

    @contextlib.contextmanager
    def routing(self):
        """The model's linear layers run packed inside this block."""
        if not self._layers:
            yield
            return
        for module, packed in self._layers:
            module.forward = functools.partial(_packed_forward, module, packed)  # shadows nn.Linear.forward
        try:
            yield
        finally:
            for module, _ in self._layers:
                module.__dict__.pop("forward", None)


def _packed_forward(module: torch.nn.Linear, packed: PackedLinear, x: torch.Tensor) -> torch.Tensor:
    if packed.weight is not module.weight or packed.bias is not module.bias:  # replaced since packed
        packed.rebind(module.weight, module.bias)
    return packed(x)
