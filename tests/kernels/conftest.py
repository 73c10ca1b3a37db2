"""Kernel tests: the Triton backend runs on CPU tensors under the Triton interpreter.

triton decides between compiling and interpreting when a kernel is *defined*, from the
TRITON_INTERPRET environment variable, so it has to be set before
`fstbeam.kernels.triton_masked_topk` is first imported. Only these tests import that module.
With CUDA present nothing is set: the Triton tests then run compiled on the GPU.
"""
from __future__ import annotations

import os


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:  # the bitmask tests still run without torch
        return False
    return torch.cuda.is_available()


if "TRITON_INTERPRET" not in os.environ and not _cuda_available():
    os.environ["TRITON_INTERPRET"] = "1"
