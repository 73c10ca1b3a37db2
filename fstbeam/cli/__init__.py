"""The front doors: the ``fstbeam`` command (``generate``, ``batch``), ``compile-constraints``,
and the input files they read. Each door parses its own arguments and hands the library one
request (`fstbeam.request`) and one search config (`fstbeam.runtime.config`)."""
from __future__ import annotations

from .main import build_parser, main

__all__ = ["build_parser", "main"]
