"""The kernels' error type (numpy/torch-free, so any layer can import it)."""
from __future__ import annotations

from ..errors import Error

__all__ = ["KernelInputError"]


class KernelInputError(Error, ValueError):
    """A kernel argument has the wrong dtype, shape, device, layout or values."""
