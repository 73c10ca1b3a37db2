"""When the command lines colour their output: on a terminal only, and never with ``NO_COLOR``
set (https://no-color.org) or ``TERM=dumb``."""
from __future__ import annotations

import os

__all__ = ["use_color"]


def use_color(stream) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
