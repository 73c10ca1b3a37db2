"""dispatch: argument checks with messages that name the argument, and backend choice."""
from __future__ import annotations

import math

import pytest
import torch

from fstbeam.errors import Error
from fstbeam.kernels import KernelInputError, best_in_sets, masked_topk, resolve_backend


def args(num_rows=4, vocab=100, num_states=3):
    return dict(
        logits=torch.randn(num_rows, vocab),
        bitmask=torch.full((num_states, (vocab + 31) // 32), -1, dtype=torch.int32),
        row_state=torch.zeros(num_rows, dtype=torch.int64),
        scores=torch.zeros(num_rows),
        k=3,
    )


# (what to change, the message it must produce): one row per argument check
BAD_ARGUMENTS = [
    ({"logits": torch.randn(4, 100).double()},
     r"logits must be float32/bfloat16/float16 \[R, V\], got float64 \[4, 100\]"),
    ({"logits": torch.randn(400)}, r"logits must be .* got float32 \[400\]"),
    ({"logits": [[0.0]]}, r"logits must be a torch.Tensor, got list"),
    ({"bitmask": torch.zeros(3, 3, dtype=torch.int32)},
     r"bitmask must be int32 \[S, ceil\(V/32\)\] = \[\*, 4\] for V=100, got int32 \[3, 3\]"),
    ({"bitmask": torch.zeros(3, 4, dtype=torch.int64)}, r"bitmask must be int32 .* got int64 \[3, 4\]"),
    ({"bitmask": torch.zeros(4, 3, dtype=torch.int32).t()}, r"bitmask rows must be contiguous"),
    ({"row_state": torch.zeros(4, dtype=torch.int32)}, r"row_state must be int64 \[R\] = \[4\], got int32 \[4\]"),
    ({"row_state": torch.zeros(5, dtype=torch.int64)}, r"row_state must be int64 \[R\] = \[4\], got int64 \[5\]"),
    ({"row_state": torch.tensor([0, 1, 3, 0])}, r"row_state must index bitmask rows 0..2, got 3 at row 2"),
    ({"row_state": torch.tensor([0, -1, 0, 0])}, r"got -1 at row 1"),
    ({"scores": torch.zeros(4, dtype=torch.float64)}, r"scores must be float32 \[R\] = \[4\], got float64 \[4\]"),
    ({"scores": torch.zeros(4, 1)}, r"scores must be float32 \[R\] = \[4\], got float32 \[4, 1\]"),
    ({"k": -1}, r"k must be a non-negative int, got -1"),
    ({"k": 2.0}, r"k must be a non-negative int, got 2.0"),
    ({"k": True}, r"k must be a non-negative int, got True"),
]


@pytest.mark.parametrize("change,message", BAD_ARGUMENTS)
@pytest.mark.parametrize("backend", ["auto", "torch", "cpu-fast"])
def test_bad_arguments_raise_a_named_error(change, message, backend):
    kwargs = {**args(), **change}
    with pytest.raises(KernelInputError, match=message) as info:
        masked_topk(**kwargs, backend=backend)
    assert isinstance(info.value, Error) and isinstance(info.value, ValueError)


def test_unknown_backend():
    with pytest.raises(KernelInputError, match="backend must be one of"):
        masked_topk(**args(), backend="cuda")


def test_auto_picks_cpu_fast_on_cpu():
    assert resolve_backend("auto", torch.device("cpu")) == "cpu-fast"
    assert resolve_backend("torch", torch.device("cpu")) == "torch"
    with pytest.raises(KernelInputError, match="'cpu-fast' runs on CPU tensors"):
        resolve_backend("cpu-fast", torch.device("cuda"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without CUDA")
def test_triton_on_cuda_without_cuda_says_why():
    with pytest.raises(KernelInputError, match="'triton' is not available on cuda"):
        resolve_backend("triton", torch.device("cuda"))


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_debug_rejects_nan_and_plus_inf(bad):
    kwargs = args()
    kwargs["logits"][2, 17] = bad
    with pytest.raises(KernelInputError, match=r"logits\[2, 17\] = (nan|inf)"):
        masked_topk(**kwargs, debug=True)
    masked_topk(**kwargs)  # unchecked by default: the result is unspecified but it runs


def test_minus_inf_is_fine_in_debug_mode():
    kwargs = args()
    kwargs["logits"][1, :] = -math.inf
    result = masked_topk(**kwargs, debug=True)
    assert result.all_masked.tolist() == [False, True, False, False]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_fast_path_reads_the_logits_in_place(monkeypatch, dtype):
    # Any copying entry point called on something as large as the logits fails the test.
    kwargs = args(vocab=5000)
    kwargs["logits"] = torch.randn(4, 6000).to(dtype)[:, 500:5500]  # strided rows
    size = kwargs["logits"].numel()
    for name in ("contiguous", "clone", "float", "to", "copy_"):
        original = getattr(torch.Tensor, name)

        def guarded(self, *a, _original=original, _name=name, **kw):
            if self.numel() >= size:
                raise AssertionError(f"logits copied via .{_name}()")
            return _original(self, *a, **kw)

        monkeypatch.setattr(torch.Tensor, name, guarded)
    result = masked_topk(**kwargs, backend="cpu-fast")
    assert result.tokens.shape == (4, 3)
    from fstbeam.kernels.cpu_fast import _flat_view

    view = _flat_view(kwargs["logits"], torch.uint16 if dtype == torch.bfloat16 else None)
    assert view.__array_interface__["data"][0] == kwargs["logits"].data_ptr()


def test_best_in_sets_checks_its_arguments():
    base = args()
    good_sets = torch.tensor([[[1, 2, -1]]] * 4)
    lse = torch.zeros(4)
    call = dict(logits=base["logits"], bitmask=base["bitmask"], row_state=base["row_state"])
    best_in_sets(**call, token_sets=good_sets, lse=lse)
    with pytest.raises(KernelInputError, match=r"token_sets must be int64 \[R, P, C\] = \[4, \*, \*\], got int32"):
        best_in_sets(**call, token_sets=good_sets.int(), lse=lse)
    with pytest.raises(KernelInputError, match=r"token ids in \[0, 100\) or -1 .* got 100 at \[2, 0, 1\]"):
        bad = good_sets.clone()
        bad[2, 0, 1] = 100
        best_in_sets(**call, token_sets=bad, lse=lse)
    with pytest.raises(KernelInputError, match=r"lse must be float32 \[R\] = \[4\]"):
        best_in_sets(**call, token_sets=good_sets, lse=torch.zeros(3))


def test_without_triton_the_module_imports_and_auto_falls_back():
    # `import triton` fails (as on a CPU-only install): the backend module still imports,
    # says it is unavailable, and auto on CUDA would pick the torch reference.
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys\n"
        "sys.modules['triton'] = None\n"
        "import torch\n"
        "from fstbeam.kernels import triton_masked_topk as tk, resolve_backend\n"
        "assert not tk.available() and not tk.available('cuda') and not tk.available('cpu')\n"
        "assert resolve_backend('auto', torch.device('cuda')) == 'torch'\n"
        "try:\n"
        "    tk.masked_topk(torch.zeros(1, 4), torch.zeros(1, 1, dtype=torch.int32), torch.zeros(1, dtype=torch.int64),"
        " torch.zeros(1), 1)\n"
        "except RuntimeError as exc:\n"
        "    assert 'needs triton' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('no error')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])
