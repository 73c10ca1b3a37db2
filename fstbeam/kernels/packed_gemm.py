"""``x @ W.T + b`` with ``W`` packed once for MKL's GEMM, for weights that every decode step
multiplies by a few dozen rows: the model's linear layers (:mod:`fstbeam.runtime.model.packed_model`)
and the static shortlist's output rows (:mod:`fstbeam.runtime.model.shortlist`).

A GEMM with few rows (beam x batch = 40) spends a large share of its time packing ``W`` into the
panels its kernel reads, on every call. MKL can keep the packed panels (``cblas_sgemm_pack``;
PyTorch exposes it as ``torch.ops.mkl._mkl_reorder_linear_weight`` / ``_mkl_linear``, what
Inductor's CPU freezing uses). Measured on the 2-core dev machine at 40 rows
(``benchmarks/bench_packed.py`` -> ``benchmarks/results/packed_gemm.json``): Gemma 3 270M's
layer shapes 43.7 -> 30.5 ms per step, the A1 shortlist rows ``[640 x 21174]`` 5.9 -> 4.7 ms.
The packed copy takes about the weight's memory.

A packing is made for one row count ``P`` (MKL packs for a given ``m``; PyTorch runs another
``m`` unpacked), once the same row count came ``PACK_AFTER`` times in a row: a beam in steady
state, not a one-off prefill. Slightly fewer rows are padded to ``P`` (at most ``P / 9`` padding
rows: each output row depends on its own input row only); other counts run unpacked until one
repeats (``PACK_AFTER`` times if larger than ``P``, ``SHRINK_AFTER`` if smaller: streaming refills
go back to the full batch), then it is packed instead. Padding is kept small because a padding
row costs as much as a real one while the packed GEMM saves little: Gemma 3 270M's seven layer
shapes, one thread, 40 rows unpacked 5.2 ms, packed 5.4 ms, padded to 80 10.0 ms (two threads:
5.9 / 5.4 / 10.3 ms). With the plain track the rows change from step to step (40-80 at batch 8);
padding down to half of ``P``, the rule before, cost about 1% of a decode's CPU time on
bench_quality's sentences (32 with 2 required words, one thread, best of 2 alternating runs:
62.6 against 62.1 s; none 37.1 against 36.7 s). An in-place change of the weight
drops the packing.
Results equal ``torch.nn.functional.linear`` up to float32 rounding (the packed kernel may sum
in another order; bitwise equal for ``K = 640`` at 8-40 rows on the dev machine).
"""
from __future__ import annotations

import torch

__all__ = ["PackedLinear", "mkl_packing_available", "packable"]

PACK_AFTER = 2  # calls with the same row count before packing for it
SHRINK_AFTER = 16  # the same, for a row count below the packed one (see _ready)


def mkl_packing_available() -> bool:
    """Whether this PyTorch build has MKL's packed GEMM (x86 builds with MKL)."""
    return bool(torch.backends.mkl.is_available()) and hasattr(torch.ops.mkl, "_mkl_linear") and hasattr(
        torch.ops.mkl, "_mkl_reorder_linear_weight")


def packable(weight: torch.Tensor) -> bool:
    """A float32 2-D weight on the CPU (MKL's packed GEMM is single precision)."""
    return weight.device.type == "cpu" and weight.dtype == torch.float32 and weight.dim() == 2


class PackedLinear:
    """``weight [N, d]`` (and ``bias [N]``) applied to ``x [..., d]``; see the module docs."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        self.rebind(weight, bias)

    def rebind(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        """Use these tensors from now on (a layer whose weight was replaced); drops the packing."""
        self.weight, self.bias = weight, bias
        self.enabled = packable(weight) and mkl_packing_available()
        self._packed: torch.Tensor | None = None
        self._rows = 0  # P, the row count of the packing
        self._stamp: tuple = ()  # the weight's storage and version when packed
        self._last, self._streak = -1, 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        w, b = self.weight, self.bias
        if not self.enabled or x.dtype != torch.float32 or x.device.type != "cpu":
            return torch.nn.functional.linear(x, w, b)
        lead, d = x.shape[:-1], x.shape[-1]
        x2 = x.reshape(-1, d)
        M = int(x2.shape[0])
        P = self._ready(M)
        if P == 0:
            return torch.nn.functional.linear(x, w, b)
        if M < P:  # rows are independent: padding changes no real row
            x2 = torch.nn.functional.pad(x2, (0, 0, 0, P - M))
        y = torch.ops.mkl._mkl_linear(x2.contiguous(), self._packed, w, b, P)
        return (y[:M] if M < P else y).reshape(*lead, w.shape[0])

    def _ready(self, M: int) -> int:
        """The packing's row count to use for ``M`` rows (0: run unpacked)."""
        if self._packed is not None and self._stamp != _stamp(self.weight):
            self._packed, self._rows = None, 0  # the weight changed in place
        if self._packed is not None and M <= self._rows <= M + M // 8:
            self._streak = 0
            return self._rows
        self._streak = self._streak + 1 if M == self._last else 1
        self._last = M
        # A larger steady count packs again soon; a smaller one (a batch draining) only after
        # SHRINK_AFTER calls, so streaming refills do not repack each time.
        need = PACK_AFTER if M > self._rows else SHRINK_AFTER
        if M < 2 or self._streak < need:  # one row: a matrix-vector product, nothing to gain
            return 0
        return self._pack(M)

    def _pack(self, M: int) -> int:
        self._packed = None  # only one packing is kept
        try:
            self._packed = torch.ops.mkl._mkl_reorder_linear_weight(self.weight.detach().contiguous(), M)
        except RuntimeError:  # a build whose MKL refuses this shape: stay unpacked
            self.enabled = False
            return 0
        self._rows, self._stamp = M, _stamp(self.weight)
        return M


def _stamp(weight: torch.Tensor) -> tuple:
    """Storage and version (an inference tensor, e.g. rows gathered in ``inference_mode``, has
    no version counter: its storage stands for it)."""
    return weight.data_ptr(), (-1 if weight.is_inference() else weight._version)
