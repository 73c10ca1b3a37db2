"""Lazy package attributes: a package names ``{attribute: (module, name)}`` and imports a module
only when one of its names is first used (``import fstbeam`` stays free of torch and pynini)."""
from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_getattr(package: str, table: dict[str, tuple[str, str | None]], namespace: dict) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that resolves ``table`` entries into ``namespace``."""

    def __getattr__(name: str):
        if name in table:
            mod, attr = table[name]
            module = importlib.import_module(mod)
            value = module if attr is None else getattr(module, attr)  # None: the submodule itself
            namespace[name] = value  # later lookups skip __getattr__
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
