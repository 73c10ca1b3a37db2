"""Fast exact CPU backend of `masked_topk` (numba), the default on CPU.

Same signature and results as `reference.masked_topk`: tokens, their order and the padding
are identical; lse and the derived floats agree within float32 rounding. The logits are never
copied: they are read in place through a flat numpy view of their storage (any row stride; a
column stride other than 1 goes through a per-chunk gather into a small scratch buffer).

Phase 1, over work items (row, group of GROUP=16 chunks of CHUNK=1024 tokens). One read of
each chunk (`_simd.chunk_scan`, explicit 8-lane vectors) yields the chunk max, the masked max
of each SUB=128-token sub-block (the max over allowed tokens, masked through the mask bytes)
and the exp-sum against the item's running max. The running (max, sum) pair is the online
softmax of Hoang et al. 2018 (Algorithm 4), rescaled once per chunk. Chunks whose mask bytes
are all 0 or all 1 skip the per-token masking (`chunk_maxsum`). Output: a (max, sum) pair per
item, a masked max per chunk and per sub-block.

Phase 2, over rows. lse = merge of the row's (max, sum) pairs. Top-k by "chunk-max pruning":
let T be the k-th largest masked chunk max of the row. At least k selectable tokens are >= T
(one per chunk), so every top-k token is >= T and lives in a chunk, and a sub-block, whose
masked max is >= T. Only those sub-blocks (about k of them, ~k * 512 bytes) are read again,
keeping their tokens >= T as int64 keys (order-preserving float bits << 32 | (2**32 - 1 -
token)); sorting the keys gives the exact order with ties to the lower token id. Many tokens
sharing the k-th value make more candidates: still exact, only slower.

Both phases are numba functions (`cpu_kernels`) compiled with nogil=True and cache=True;
this module is the host side: it views the tensors as numpy arrays, reuses the scratch
buffers, and `_run_split` runs the phases on up to torch.get_num_threads() Python threads.
"""
from __future__ import annotations

import math
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

import numpy as np
import torch

from .cpu_kernels import CHUNK, GROUP, SUB, first_bad_state, phase1, phase2
from .cpu_kernels import order_key as _order_key  # noqa: F401 - tested as cpu_fast._order_key
from .errors import KernelInputError
from .reference import MaskedTopK

__all__ = ["CHUNK", "GROUP", "available", "masked_topk"]

# Work items per thread below which splitting is not worth a thread hand-off (~20 us).
_MIN_ELEMENTS_PER_THREAD = 1 << 17
_POOL: Optional[ThreadPoolExecutor] = None
_POOL_LOCK = threading.Lock()
_STORAGE_VIEW = {torch.float32: None, torch.bfloat16: torch.uint16, torch.float16: torch.int16}


def available() -> bool:
    """True where this backend can run: numba imported (it did, or this module would not
    have) and a little-endian host (the mask words are read as bytes)."""
    return sys.byteorder == "little"


def _pool(workers: int) -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < workers:  # noqa: SLF001 - sized on demand
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fstbeam-cpu")
        return _POOL


def _run_split(fn: Callable[[int, int], None], count: int, elements: int) -> None:
    """Run fn(begin, end) over [0, count) in up to torch.get_num_threads() contiguous slices.

    The numba kernels release the GIL (nogil=True), so plain threads run them in parallel;
    this keeps them free of numba's parallel runtime (slow to compile, and its workqueue layer
    must not be entered from two Python threads at once). Small problems run inline.
    """
    threads = min(torch.get_num_threads(), count, max(1, elements // _MIN_ELEMENTS_PER_THREAD))
    if threads <= 1:
        fn(0, count)
        return
    bounds = [count * i // threads for i in range(threads + 1)]
    futures = [_pool(threads).submit(fn, bounds[i], bounds[i + 1]) for i in range(1, threads)]
    fn(bounds[0], bounds[1])  # the calling thread takes the first slice
    for future in futures:
        future.result()


def _flat_view(t: torch.Tensor, view_dtype) -> np.ndarray:
    """1-D numpy view over the storage span of a 2-D tensor (no copy), reinterpreted as
    `view_dtype` when given (bf16 -> uint16, fp16 -> int16 bit patterns)."""
    rows, cols = t.shape
    extent = (rows - 1) * t.stride(0) + (cols - 1) * t.stride(1) + 1
    flat = torch.as_strided(t.detach(), (extent,), (1,), t.storage_offset())
    if view_dtype is not None:
        flat = flat.view(view_dtype)
    return flat.numpy()


_LOCAL = threading.local()


def _scratch(num_rows: int, nchunks: int, ngroups: int):
    """Phase 1 -> phase 2 buffers, reused by the calling thread while the shape repeats (as
    it does at every decode step): chunk_best, sub_best [R, *] float32; part_m, part_am
    [R, ngroups] float32; part_s, part_as [R, ngroups] float64."""
    key = (num_rows, nchunks, ngroups)
    cached = getattr(_LOCAL, "scratch", None)
    if cached is None or cached[0] != key:
        buffers = (
            np.empty((num_rows, nchunks), np.float32),
            np.empty((num_rows, nchunks * (CHUNK // SUB)), np.float32),
            np.empty((num_rows, ngroups), np.float32),
            np.empty((num_rows, ngroups), np.float64),
            np.empty((num_rows, ngroups), np.float32),
            np.empty((num_rows, ngroups), np.float64),
        )
        cached = _LOCAL.scratch = (key, buffers)
    return cached[1]


def _mask_bytes(bitmask: torch.Tensor) -> np.ndarray:
    """The table as flat bytes; the view of the last table seen is reused (the same table
    comes back every step). The cache holds a reference to the tensor, so the memory behind
    the view cannot be freed and reused while cached."""
    layout = (bitmask.data_ptr(), bitmask.shape, bitmask.stride())
    cached = getattr(_LOCAL, "mask", None)
    if cached is not None and cached[0] is bitmask and cached[1] == layout:
        return cached[2]
    view = _flat_view(bitmask, None).view(np.uint8)
    _LOCAL.mask = (bitmask, layout, view)
    return view


def _empty_result(num_rows: int, k: int, allowed_lse: bool) -> MaskedTopK:
    """The result for V == 0: nothing to normalize, nothing to select."""
    lse = torch.full((num_rows,), -math.inf)
    return MaskedTopK(
        lse=lse,
        tokens=torch.full((num_rows, k), -1, dtype=torch.int64),
        scores=torch.full((num_rows, k), -math.inf),
        logprobs=torch.full((num_rows, k), -math.inf),
        all_masked=torch.ones(num_rows, dtype=torch.bool),
        allowed_lse=lse.clone() if allowed_lse else None,
    )


_LOADED = False  # the numba kernels have run once in this process (compiled or loaded from cache)


def masked_topk(logits, bitmask, row_state, scores, k: int, *, allowed_lse: bool = False) -> MaskedTopK:
    """`_masked_topk`; the first call in a process says so on stderr if it is slow (numba
    compiles the kernels once per install, about a minute)."""
    global _LOADED
    if _LOADED:
        return _masked_topk(logits, bitmask, row_state, scores, k, allowed_lse=allowed_lse)
    from ..files.status import status

    with status("compiling the CPU kernels with numba (once per install)"):
        out = _masked_topk(logits, bitmask, row_state, scores, k, allowed_lse=allowed_lse)
    _LOADED = True
    return out


def _masked_topk(
    logits: torch.Tensor,
    bitmask: torch.Tensor,
    row_state: torch.Tensor,
    scores: torch.Tensor,
    k: int,
    *,
    allowed_lse: bool = False,
) -> MaskedTopK:
    """`reference.masked_topk` on CPU tensors, fast (see the module docstring).

    Expects the arguments `dispatch` validates: logits [R, V] float32/bfloat16/float16 (any
    strides), bitmask [S, ceil(V/32)] int32 with unit column stride, row_state [R] int64,
    scores [R] float32, k >= 0; all on the CPU. The row_state range is checked here
    (KernelInputError), since an out-of-range state would read outside the table.
    """
    num_rows, vocab = logits.shape
    if num_rows == 0 or vocab == 0:
        return _empty_result(num_rows, k, allowed_lse)
    states = row_state.contiguous().numpy()
    bad = first_bad_state(states, bitmask.shape[0])
    if bad >= 0:
        raise KernelInputError(
            f"row_state must index bitmask rows 0..{bitmask.shape[0] - 1}, got {int(states[bad])} at row {bad}"
        )
    x = _flat_view(logits, _STORAGE_VIEW[logits.dtype])
    row_off = np.arange(num_rows, dtype=np.int64) * logits.stride(0)
    col_stride = logits.stride(1)
    mbytes = _mask_bytes(bitmask)
    mrow_bytes = bitmask.stride(0) * 4
    scores_np = scores.detach().contiguous().numpy()

    nchunks = -(-vocab // CHUNK)
    ngroups = -(-nchunks // GROUP)
    chunk_best, sub_best, part_m, part_s, part_am, part_as = _scratch(num_rows, nchunks, ngroups)
    lse = np.empty(num_rows, np.float32)
    allowed = np.empty(num_rows if allowed_lse else 0, np.float32)
    tokens = np.empty((num_rows, k), np.int64)
    out_scores = np.empty((num_rows, k), np.float32)
    logprobs = np.empty((num_rows, k), np.float32)
    all_masked = np.empty(num_rows, np.bool_)
    _run_split(
        lambda begin, end: phase1(
            x, row_off, col_stride, vocab, mbytes, mrow_bytes, states, allowed_lse,
            chunk_best, sub_best, part_m, part_s, part_am, part_as, begin, end,
        ),
        num_rows * ngroups,
        num_rows * vocab,
    )
    _run_split(
        lambda begin, end: phase2(
            x, row_off, col_stride, vocab, mbytes, mrow_bytes, states, scores_np, k, allowed_lse,
            chunk_best, sub_best, part_m, part_s, part_am, part_as,
            lse, tokens, out_scores, logprobs, all_masked, allowed, begin, end,
        ),
        num_rows,
        num_rows * nchunks * max(k, 1) * 16,  # phase 2 reads ~k sub-blocks per row, plus bookkeeping
    )
    return MaskedTopK(
        lse=torch.from_numpy(lse),
        tokens=torch.from_numpy(tokens),
        scores=torch.from_numpy(out_scores),
        logprobs=torch.from_numpy(logprobs),
        all_masked=torch.from_numpy(all_masked),
        allowed_lse=torch.from_numpy(allowed) if allowed_lse else None,
    )
