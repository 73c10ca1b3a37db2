"""Grammar parameters: read from ``build``'s signature, converted from strings by annotation
(``bool``, ``int``, ``float``, ``Path``, ``Literal[...]``), and the one ``key=value`` parser
behind both CLIs and the golden-case files."""
from __future__ import annotations

import functools
import inspect
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import GrammarError

__all__ = ["Param", "parse_params"]


def _show(value: Any) -> str:
    return str(value) if isinstance(value, (Path, str)) else repr(value)


def _canonical_params(params: Mapping[str, Any]) -> str:
    return repr(sorted((k, str(v) if isinstance(v, Path) else v) for k, v in params.items()))


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Param:
    """One parameter of a grammar's ``build``, read from its signature."""

    name: str
    annotation: Any
    default: Any = inspect.Parameter.empty

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty

    def type_text(self) -> str:
        return _type_text(self.annotation)

    def describe(self) -> str:
        if self.required:
            return f"{self.name} ({self.type_text()}, required)"
        return f"{self.name} ({self.type_text()}, default {_show(self.default)})"

    def convert(self, value: Any, grammar: str, base: Path | None = None) -> Any:
        """``value`` checked against the annotation (strings converted); GrammarError if bad."""
        try:
            return _convert(value, self.annotation, base)
        except _BadValue as exc:
            raise GrammarError(
                f"grammar {grammar!r}: bad value {value!r} for parameter {self.name!r}: {exc}"
            ) from None


class _BadValue(Exception):
    pass


def _type_text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return "any"
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_text(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _convert(value: Any, annotation: Any, base: Path | None) -> Any:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return value
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if type(None) in options and (value is None or (isinstance(value, str) and value.lower() in ("", "none"))):
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(value, option, base)
            except _BadValue as exc:
                errors.append(str(exc))
        raise _BadValue("; ".join(errors))
    if origin is Literal:
        choices = typing.get_args(annotation)
        if value in choices:
            return value
        if isinstance(value, str):
            folded = [c for c in choices if isinstance(c, str) and c.lower() == value.strip().lower()]
            if len(folded) == 1:
                return folded[0]
        raise _BadValue(f"valid values: {', '.join(repr(c) for c in choices)}")
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise _BadValue("expected true or false")
    if annotation in (int, float):
        if isinstance(value, bool):
            raise _BadValue(f"expected {annotation.__name__}")
        if isinstance(value, (int, float)) and (annotation is float or isinstance(value, int)):
            return annotation(value)
        if isinstance(value, str):
            try:
                return annotation(value.strip())
            except ValueError:
                pass
        raise _BadValue(f"expected {annotation.__name__}")
    if annotation is Path:
        if not isinstance(value, (str, os.PathLike)):
            raise _BadValue("expected a file path")
        path = Path(value).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise _BadValue(f"no such file: {path}")
        return path.resolve()
    if annotation is str:
        if isinstance(value, str):
            return value
        raise _BadValue("expected a string")
    if isinstance(annotation, type):
        if isinstance(value, annotation):
            return value
        raise _BadValue(f"expected {annotation.__name__}")
    return value


def parse_params(items: list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """``["level=A2", "names=x.txt"]`` (``--param`` values) -> ``{"level": "A2", ...}``."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise GrammarError(f"grammar parameter {item!r}: write key=value, e.g. level=A2")
        if key in out:
            raise GrammarError(f"grammar parameter {key!r} is given twice")
        out[key] = value
    return out



@functools.lru_cache(maxsize=None)
def _params_of(module: types.ModuleType, name: str) -> tuple[Param, ...]:
    fn = getattr(module, "build", None)
    if not callable(fn):
        raise GrammarError(f"grammar {name!r}: {module.__file__} defines no build(**params) function")
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:
        raise GrammarError(f"grammar {name!r}: cannot read build()'s annotations: {exc}") from exc
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out.append(Param(p.name, hints.get(p.name, p.annotation), p.default))
    return tuple(out)



# --------------------------------------------------------------------------- discovery
