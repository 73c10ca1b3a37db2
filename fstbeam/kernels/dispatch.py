"""One entry point per kernel operation: validate the arguments once, pick a backend.

    masked_topk(logits, bitmask, row_state, scores, k, *, allowed_lse=False, backend="auto")
    best_in_sets(logits, bitmask, row_state, token_sets, lse, *, backend="auto")

Backends of `masked_topk` (all return the same `MaskedTopK`; see `reference` for the
contract):
  "torch"     `reference.masked_topk`, any device; the executable spec, not fast.
  "cpu-fast"  `cpu_fast.masked_topk`, CPU tensors; numba, exact, reads the logits in place.
  "triton"    `triton_masked_topk.masked_topk`, CUDA tensors (CPU tensors only under
              TRITON_INTERPRET=1, for tests).
  "auto"      triton on CUDA when available, else torch; cpu-fast on CPU when numba is
              installed, else torch.
`best_in_sets` gathers only R*P*C logits, so its one implementation is the torch one.

No backend copies the logits. The checks cost O(1) host work, except for two that read
small tensors: on CPU the row_state range is always checked (an out-of-range state would
read outside the table); on CUDA it is checked only with debug=True, which would otherwise
force a device sync every step. debug=True also rejects NaN and +inf logits (whose results
are unspecified) and runs on any device.
"""
from __future__ import annotations

import functools
import warnings
from typing import Literal, Optional

import torch

from . import reference
from .bitmask import bitmask_width
from .errors import KernelInputError
from .reference import MaskedTopK

__all__ = ["Backend", "KernelInputError", "MaskedTopK", "best_in_sets", "masked_topk", "resolve_backend"]

Backend = Literal["auto", "torch", "cpu-fast", "triton"]
_LOGIT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _shape(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(d) for d in t.shape) + "]"


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def _require_tensor(name: str, value) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise KernelInputError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def _check_logits(logits) -> tuple[int, int]:
    logits = _require_tensor("logits", logits)
    if logits.dim() != 2 or logits.dtype not in _LOGIT_DTYPES:
        raise KernelInputError(
            f"logits must be float32/bfloat16/float16 [R, V], got {_dtype(logits)} {_shape(logits)}"
        )
    return logits.shape[0], logits.shape[1]


def _check_table(bitmask, row_state, logits: torch.Tensor, num_rows: int, vocab: int, debug: bool,
                 check_states: bool = True) -> None:
    bitmask = _require_tensor("bitmask", bitmask)
    width = bitmask_width(vocab)
    if bitmask.dtype != torch.int32 or bitmask.dim() != 2 or bitmask.shape[1] != width:
        raise KernelInputError(
            f"bitmask must be int32 [S, ceil(V/32)] = [*, {width}] for V={vocab}, "
            f"got {_dtype(bitmask)} {_shape(bitmask)}"
        )
    if width and bitmask.shape[0] and bitmask.stride(1) != 1:
        raise KernelInputError(
            f"bitmask rows must be contiguous (stride(1) == 1), got strides {tuple(bitmask.stride())}; "
            "call .contiguous() once when the table is loaded"
        )
    row_state = _require_tensor("row_state", row_state)
    if row_state.dtype != torch.int64 or row_state.shape != (num_rows,):
        raise KernelInputError(
            f"row_state must be int64 [R] = [{num_rows}], got {_dtype(row_state)} {_shape(row_state)}"
        )
    _check_device("bitmask", bitmask, logits)
    _check_device("row_state", row_state, logits)
    if num_rows and check_states and (row_state.device.type == "cpu" or debug):
        check_row_state_range(row_state, bitmask.shape[0])


def check_row_state_range(row_state: torch.Tensor, num_states: int) -> None:
    """Raise KernelInputError naming the first row whose state is outside [0, num_states)."""
    if row_state.device.type == "cpu":
        states = row_state.numpy()
        if states.size == 0 or (states.min() >= 0 and states.max() < num_states):
            return
        row = int(((states < 0) | (states >= num_states)).nonzero()[0][0])
    else:
        bad = (row_state < 0) | (row_state >= num_states)
        if not bool(bad.any()):
            return
        row = int(bad.nonzero()[0, 0])
    raise KernelInputError(
        f"row_state must index bitmask rows 0..{num_states - 1}, got {int(row_state[row])} at row {row}"
    )


def _check_device(name: str, t: torch.Tensor, logits: torch.Tensor) -> None:
    if t.device != logits.device:
        raise KernelInputError(
            f"{name} is on {t.device} but logits is on {logits.device}; all arguments must be on one device"
        )


def _check_finite_logits(logits: torch.Tensor) -> None:
    bad = torch.isnan(logits) | (logits == float("inf"))
    if bool(bad.any()):
        row, col = (int(v) for v in bad.nonzero()[0])
        raise KernelInputError(
            f"logits must not hold NaN or +inf (logits[{row}, {col}] = {float(logits[row, col])}); "
            "the kernels' results are unspecified for them"
        )


@functools.lru_cache(maxsize=1)
def _cpu_fast():
    """The cpu_fast module, or None when numba is missing or the host is big-endian."""
    try:
        from . import cpu_fast
    except ImportError as exc:
        warnings.warn(f"fstbeam: numba unavailable ({exc}); masked_topk falls back to the torch reference on CPU",
                      RuntimeWarning, stacklevel=3)
        return None
    return cpu_fast if cpu_fast.available() else None


def _triton():
    from . import triton_masked_topk

    return triton_masked_topk


def resolve_backend(backend: Backend, device: torch.device) -> str:
    """The concrete backend ("torch", "cpu-fast" or "triton") that `backend` means on `device`."""
    if backend == "auto":
        if device.type == "cuda":
            return "triton" if _triton().available(device) else "torch"
        if device.type == "cpu" and _cpu_fast() is not None:
            return "cpu-fast"
        return "torch"
    if backend == "torch":
        return backend
    if backend == "cpu-fast":
        if device.type != "cpu":
            raise KernelInputError(f"backend 'cpu-fast' runs on CPU tensors, got logits on {device}")
        if _cpu_fast() is None:
            raise KernelInputError("backend 'cpu-fast' needs numba (pip install numba) on a little-endian host")
        return backend
    if backend == "triton":
        if not _triton().available(device):
            hint = ("needs triton and CUDA" if device.type != "cpu"
                    else "runs CPU tensors only under the Triton interpreter (TRITON_INTERPRET=1 before import)")
            raise KernelInputError(f"backend 'triton' is not available on {device}: it {hint}")
        return backend
    raise KernelInputError(f"backend must be one of 'auto', 'torch', 'cpu-fast', 'triton', got {backend!r}")


def masked_topk(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    row_state: torch.Tensor,
    scores: torch.Tensor,
    k: int,
    *,
    allowed_lse: bool = False,
    backend: Backend = "auto",
    debug: bool = False,
) -> MaskedTopK:
    """Fused masked log-softmax + top-k of each row; see `reference` for the contract.

    logits [R, V] float32/bfloat16/float16, any strides (never copied); bitmask
    [S, ceil(V/32)] int32 with contiguous rows; row_state [R] int64 in [0, S); scores [R]
    float32; k >= 0. All on one device. Returns `MaskedTopK` (lse [R], tokens/scores/logprobs
    [R, k], all_masked [R], allowed_lse [R] when requested).
    """
    num_rows, vocab = _check_logits(logits)
    chosen = resolve_backend(backend, logits.device)
    # cpu-fast checks the state range itself (it must, to stay memory-safe when called directly)
    _check_table(bitmask, row_state, logits, num_rows, vocab, debug, check_states=chosen != "cpu-fast")
    scores = _require_tensor("scores", scores)
    if scores.dtype != torch.float32 or scores.shape != (num_rows,):
        raise KernelInputError(f"scores must be float32 [R] = [{num_rows}], got {_dtype(scores)} {_shape(scores)}")
    _check_device("scores", scores, logits)
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise KernelInputError(f"k must be a non-negative int, got {k!r}")
    if debug:
        _check_finite_logits(logits)
    # [R]-sized metadata may be copied; the logits never are.
    row_state = row_state.contiguous()
    scores = scores.contiguous()
    if chosen == "cpu-fast":
        return _cpu_fast().masked_topk(logits, bitmask, row_state, scores, k, allowed_lse=allowed_lse)
    if chosen == "triton":
        return _triton().masked_topk(logits, bitmask, row_state, scores, k, allowed_lse=allowed_lse)
    return reference.masked_topk(logits, bitmask, row_state, scores, k, allowed_lse=allowed_lse)


def best_in_sets(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    row_state: torch.Tensor,
    token_sets: torch.Tensor,
    lse: torch.Tensor,
    *,
    backend: Literal["auto", "torch"] = "auto",
    debug: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Best allowed token of each candidate set (see `reference.best_in_sets`).

    token_sets [R, P, C] int64 with ids in [0, V) or -1 for padding; lse [R] float32.
    Returns tokens [R, P] int64 (-1 = none) and logprobs [R, P] float32 (-inf = none).
    Token ids are range-checked on CPU always, on CUDA with debug=True.
    """
    num_rows, vocab = _check_logits(logits)
    _check_table(bitmask, row_state, logits, num_rows, vocab, debug)
    token_sets = _require_tensor("token_sets", token_sets)
    if token_sets.dtype != torch.int64 or token_sets.dim() != 3 or token_sets.shape[0] != num_rows:
        raise KernelInputError(
            f"token_sets must be int64 [R, P, C] = [{num_rows}, *, *], got {_dtype(token_sets)} {_shape(token_sets)}"
        )
    _check_device("token_sets", token_sets, logits)
    if token_sets.numel() and (token_sets.device.type == "cpu" or debug):
        bad = (token_sets < -1) | (token_sets >= vocab)
        if bool(bad.any()):
            where: Optional[tuple[int, ...]] = tuple(int(v) for v in bad.nonzero()[0])
            raise KernelInputError(
                f"token_sets must hold token ids in [0, {vocab}) or -1 for padding, "
                f"got {int(token_sets[where])} at {list(where)}"
            )
    lse = _require_tensor("lse", lse)
    if lse.dtype != torch.float32 or lse.shape != (num_rows,):
        raise KernelInputError(f"lse must be float32 [R] = [{num_rows}], got {_dtype(lse)} {_shape(lse)}")
    _check_device("lse", lse, logits)
    if backend not in ("auto", "torch"):
        raise KernelInputError(f"best_in_sets backend must be 'auto' or 'torch', got {backend!r}")
    if debug:
        _check_finite_logits(logits)
    return reference.best_in_sets(logits, bitmask, row_state, token_sets, lse)
