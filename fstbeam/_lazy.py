"""Lazy package attributes, the one mechanism every package uses: a package names
``{attribute: (module, name)}`` and a module is imported only when one of its names is first used
(``import fstbeam`` stays free of torch and pynini). ``module`` may be relative to the package.

    _LAZY = {"Decoder": (".decoder", "Decoder")}
    __getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
"""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

__all__ = ["lazy_exports", "lazy_getattr"]


def lazy_getattr(package: str, table: Mapping[str, tuple[str, str | None]], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that resolves ``table`` entries into ``namespace``."""

    def __getattr__(name: str) -> Any:
        if name in table:
            mod, attr = table[name]
            module = importlib.import_module(mod, package)
            value = module if attr is None else getattr(module, attr)  # None: the submodule itself
            namespace[name] = value  # later lookups skip __getattr__
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def lazy_exports(package: str, table: Mapping[str, tuple[str, str | None]],
                 namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a package with the lazy names of ``table``."""

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return lazy_getattr(package, table, namespace), __dir__
