"""Find, parameterize, build and cache the grammars of the library.

A grammar is a folder ``<name>/`` holding ``grammar.py`` with one public function
``build(**params)``; the folder is found automatically (no list to edit). Folders are looked up in
this package and then in every directory of ``$FSTBEAM_GRAMMAR_PATH`` (``os.pathsep``-separated),
so a linguist can keep grammars outside fstbeam.

``build`` declares its parameters in its signature, with type annotations and defaults::

    def build(level: Literal["A1", "A2"] = "A1", names: Path | None = None) -> pynini.Fst: ...

Values given as strings (``--param level=a2`` on the command line) are converted by annotation
(``bool``, ``int``, ``float``, ``Path``, ``Literal[...]``); a ``Path`` parameter must name an
existing file, and that file's bytes go into the build's ``source_hash``.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import logging
import os
import sys
import threading
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pynini

from ..errors import Error, GrammarError, UnsatisfiableConstraintError
from ..fst.labels import MAX_BYTE_LABEL, MIN_BYTE_LABEL
from ..fst.optimize import optimize

log = logging.getLogger("fstbeam.grammars")

__all__ = [
    "Grammar",
    "GrammarBuild",
    "GrammarParts",
    "Param",
    "build",
    "combine",
    "get",
    "grammar_dirs",
    "list_grammars",
    "parse_params",
]

PACKAGE_DIR = Path(__file__).resolve().parent
LIB_DIR = PACKAGE_DIR / "lib"
ENV_PATH = "FSTBEAM_GRAMMAR_PATH"
_NOT_GRAMMARS = {"lib", "__pycache__"}
_HASH_VERSION = "1"  # bump when the hashing scheme itself changes


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class GrammarParts:
    """What a grammar's ``build`` may return when it is more than a language.

    ``language``: hard constraint, an acceptor over bytes (None: no hard constraint).
    ``phrases``: texts that must appear in the output. ``avoid``: texts that must never appear.
    A grammar that only has a language may return the ``pynini.Fst`` itself.
    """

    language: pynini.Fst | None = None
    phrases: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class GrammarBuild:
    """A built grammar, ready for the compiler.

    ``language`` is epsilon-free, deterministic, trimmed, arcs sorted by label, non-empty (and
    minimal unless the grammar returned an already deterministic automaton), or None. Each
    `Grammar.build` call returns its own copy, so changing it is safe (pynini methods work in
    place). ``params`` holds every parameter, defaults included. Cache compiled results by ``cache_key``, which covers the name, the parameters and
    ``source_hash`` (grammar.py, its data files, the shared ``grammars/lib`` code, declared data
    versions and every file passed as a ``Path`` parameter).
    """

    name: str
    params: Mapping[str, Any]
    source_hash: str
    language: pynini.Fst | None
    phrases: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()

    @property
    def cache_key(self) -> str:
        h = hashlib.sha256()
        h.update(self.name.encode())
        h.update(_canonical_params(self.params).encode())
        h.update(self.source_hash.encode())
        return h.hexdigest()

    def describe(self) -> str:
        """``cefr(level=A2, names=None)``: for logs, error messages and artifact manifests."""
        inner = ", ".join(f"{k}={_show(v)}" for k, v in self.params.items())
        return f"{self.name}({inner})"


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


# --------------------------------------------------------------------------- the grammar


@dataclass(frozen=True)
class Grammar:
    """One grammar folder: its ``grammar.py``, data files and golden cases."""

    name: str
    path: Path
    module: types.ModuleType = field(repr=False, compare=False)

    @property
    def description(self) -> str:
        """The first paragraph of ``grammar.py``'s docstring."""
        doc = inspect.getdoc(self.module) or ""
        return doc.split("\n\n")[0].replace("\n", " ").strip()

    @property
    def params(self) -> tuple[Param, ...]:
        return _params_of(self.module, self.name)

    @property
    def cases_path(self) -> Path:
        return self.path / "cases.tsv"

    def usage(self) -> str:
        """Several lines for ``--help``-like output: name, description, parameters."""
        lines = [f"{self.name}: {self.description}"]
        lines += [f"  --param {p.describe()}" for p in self.params] or ["  (no parameters)"]
        return "\n".join(lines)

    def normalize_params(self, params: Mapping[str, Any] | None = None, *, base: Path | None = None) -> dict[str, Any]:
        """Every parameter with its converted value (defaults filled in); GrammarError if bad.

        Relative ``Path`` values are taken relative to ``base`` (default: the working directory).
        """
        params = dict(params or {})
        spec = {p.name: p for p in self.params}
        unknown = sorted(set(params) - set(spec))
        if unknown:
            valid = "; ".join(p.describe() for p in self.params) or "none"
            raise GrammarError(
                f"grammar {self.name!r} has no parameter {', '.join(map(repr, unknown))}; "
                f"valid parameters: {valid}"
            )
        out: dict[str, Any] = {}
        for p in self.params:
            if p.name in params:
                out[p.name] = p.convert(params[p.name], self.name, base)
            elif p.required:
                raise GrammarError(
                    f"grammar {self.name!r} needs parameter {p.name!r} ({p.type_text()}): "
                    f"--param {p.name}=..."
                )
            else:
                out[p.name] = p.default
        return out

    def source_hash(self, params: Mapping[str, Any] | None = None) -> str:
        """Hash of everything a build reads: code, data files, and files named by parameters."""
        h = hashlib.sha256(f"fstbeam-grammar-{_HASH_VERSION}\0".encode())
        files = sorted(
            p for p in self.path.rglob("*")
            if p.is_file() and p.name != "cases.tsv" and "__pycache__" not in p.parts
        )
        files += sorted(
            p for p in LIB_DIR.rglob("*")
            if p.is_file() and p.suffix in (".py", ".tsv") and "__pycache__" not in p.parts
        )
        for p in files:
            h.update(p.name.encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
        h.update(str(getattr(self.module, "DATA_VERSION", "")).encode() + b"\0")
        for key, value in sorted((params or {}).items()):
            if isinstance(value, Path) and value.is_file():
                h.update(key.encode() + b"\0" + hashlib.sha256(value.read_bytes()).digest())
        return h.hexdigest()

    def build(self, **params: Any) -> GrammarBuild:
        """Build (or fetch from this process's cache) the grammar with ``params``."""
        values = self.normalize_params(params)
        source_hash = self.source_hash(values)
        key = (self.name, str(self.path), _canonical_params(values), source_hash)
        with _CACHE_LOCK:
            cached = _CACHE.pop(key, None)
            if cached is not None:
                _CACHE[key] = cached  # most recently used goes last
        if cached is None:
            cached = self._build_uncached(values, source_hash)
            with _CACHE_LOCK:
                _CACHE[key] = cached
                while len(_CACHE) > _CACHE_SIZE:
                    _CACHE.pop(next(iter(_CACHE)))
        language = cached.language.copy() if cached.language is not None else None
        return dataclasses.replace(cached, language=language)

    def _build_uncached(self, values: dict[str, Any], source_hash: str) -> GrammarBuild:
        described = f"{self.name}({', '.join(f'{k}={_show(v)}' for k, v in values.items())})"
        try:
            result = self.module.build(**values)
        except UnsatisfiableConstraintError:
            raise
        except Error as exc:  # our own errors already say what is wrong and where
            raise GrammarError(f"grammar {described}: {exc}") from exc
        except Exception as exc:
            raise GrammarError(
                f"grammar {described} failed while building: {type(exc).__name__}: {exc}"
            ) from exc
        parts = _as_parts(result, self.name)
        language = None
        if parts.language is not None:
            _check_acceptor(parts.language, self.name)
            language = _optimized(parts.language, f"grammar {self.name}")
            if language.num_states() == 0:
                raise UnsatisfiableConstraintError(
                    f"grammar {described} accepts no text at all (its language is empty); "
                    "check its parameters and data files",
                    (f"grammar {self.name}",),
                )
            _check_labels(language, self.name)
        phrases = _texts(parts.phrases, self.name, "phrases")
        avoid = _texts(parts.avoid, self.name, "avoid")
        clash = sorted(set(phrases) & set(avoid))
        if clash:
            raise UnsatisfiableConstraintError(
                f"grammar {described}: {clash[0]!r} must appear and must be avoided",
                (f"grammar {self.name}",),
            )
        return GrammarBuild(
            name=self.name,
            params=types.MappingProxyType(dict(values)),
            source_hash=source_hash,
            language=language,
            phrases=phrases,
            avoid=avoid,
        )


_CACHE: dict[tuple, GrammarBuild] = {}
_CACHE_SIZE = 32
_CACHE_LOCK = threading.Lock()


def _as_parts(result: Any, name: str) -> GrammarParts:
    if isinstance(result, GrammarParts):
        return result
    if isinstance(result, pynini.Fst):
        return GrammarParts(language=result)
    raise GrammarError(
        f"grammar {name!r}: build() returned {type(result).__name__}; return a pynini.Fst "
        "(the language) or fstbeam.grammars.GrammarParts(language=..., phrases=..., avoid=...)"
    )


def _check_acceptor(fst: Any, name: str) -> None:
    if not isinstance(fst, pynini.Fst):
        raise GrammarError(f"grammar {name!r}: language must be a pynini.Fst, got {type(fst).__name__}")
    if fst.num_states() and fst.properties(pynini.ACCEPTOR, True) != pynini.ACCEPTOR:
        raise GrammarError(
            f"grammar {name!r}: the language is a transducer (input and output labels differ); "
            "return its output side: fst.project('output')"
        )


def _optimized(fst: pynini.Fst, stage: str) -> pynini.Fst:
    # Builders such as word_list_fst already return a deterministic DFA; minimizing 150k states
    # again costs seconds, so a deterministic epsilon-free result is only trimmed and sorted.
    props = pynini.I_DETERMINISTIC | pynini.NO_EPSILONS
    if fst.num_states() and fst.properties(props, True) == props:
        out = fst.copy()
        out.connect()
        out.arcsort("ilabel")
        return out
    return optimize(fst, stage=stage)


def _check_labels(fst: pynini.Fst, name: str) -> None:
    # After optimize there are no epsilon arcs; every label must be a byte label.
    for s in fst.states():
        for arc in fst.arcs(s):
            if not MIN_BYTE_LABEL <= arc.ilabel <= MAX_BYTE_LABEL:
                raise GrammarError(
                    f"grammar {name!r}: arc label {arc.ilabel} is not a byte label "
                    f"({MIN_BYTE_LABEL}..{MAX_BYTE_LABEL}); compile strings with "
                    "token_type='byte' (pynini's default), not 'utf8'"
                )


def _texts(items: Any, name: str, what: str) -> tuple[str, ...]:
    if isinstance(items, str):
        items = (items,)
    out = []
    for item in items or ():
        if not isinstance(item, str) or not item.strip():
            raise GrammarError(f"grammar {name!r}: {what} entry {item!r} is not a non-empty string")
        if "\x00" in item:
            raise GrammarError(f"grammar {name!r}: {what} entry {item!r} contains a NUL byte")
        if item not in out:
            out.append(item)
    return tuple(out)


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


def grammar_dirs() -> list[Path]:
    """Where grammars are looked up: this package, then ``$FSTBEAM_GRAMMAR_PATH``."""
    dirs = [PACKAGE_DIR]
    for entry in os.environ.get(ENV_PATH, "").split(os.pathsep):
        if entry.strip():
            dirs.append(Path(entry.strip()).expanduser().resolve())
    return dirs


def _candidates() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for root in grammar_dirs():
        if not root.is_dir():
            continue
        for sub in sorted(root.iterdir()):
            if sub.name in _NOT_GRAMMARS or sub.name.startswith((".", "_")):
                continue
            if (sub / "grammar.py").is_file():
                found.setdefault(sub.name, []).append(sub)
    return found


def list_grammars() -> list[str]:
    """Names of every grammar folder found (see `grammar_dirs`), sorted."""
    return sorted(_candidates())


_MODULES: dict[Path, tuple[float, types.ModuleType]] = {}
_MODULES_LOCK = threading.Lock()


def _load_module(name: str, folder: Path) -> types.ModuleType:
    path = folder / "grammar.py"
    mtime = path.stat().st_mtime
    with _MODULES_LOCK:
        hit = _MODULES.get(path)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        mod_name = f"fstbeam.grammars._loaded.{name}_{hashlib.sha1(str(folder).encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise GrammarError(f"grammar {name!r}: cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(mod_name, None)
            raise GrammarError(
                f"grammar {name!r}: {path} failed to import: {type(exc).__name__}: {exc}"
            ) from exc
        _MODULES[path] = (mtime, module)
        return module


def get(name: str) -> Grammar:
    """The grammar called ``name``; GrammarError listing the known ones if there is none."""
    if not isinstance(name, str) or not name:
        raise GrammarError(f"grammar name must be a non-empty string, got {name!r}")
    found = _candidates()
    folders = found.get(name)
    if not folders:
        known = ", ".join(sorted(found)) or "none"
        raise GrammarError(
            f"unknown grammar {name!r}; known grammars: {known} "
            f"(a grammar is a folder with grammar.py under {PACKAGE_DIR} or ${ENV_PATH})"
        )
    if len(folders) > 1:
        raise GrammarError(
            f"grammar {name!r} is defined twice: {', '.join(str(f) for f in folders)}; rename one"
        )
    folder = folders[0]
    return Grammar(name=name, path=folder, module=_load_module(name, folder))


def build(name: str, params: Mapping[str, Any] | None = None, **kwargs: Any) -> GrammarBuild:
    """``build("cefr", level="A2")`` or ``build("cefr", {"level": "A2"})``."""
    merged = dict(params or {})
    merged.update(kwargs)
    return get(name).build(**merged)


def combine(builds: list[GrammarBuild] | tuple[GrammarBuild, ...]) -> GrammarBuild:
    """One build that means "all of these": languages intersected, phrases and avoids joined.

    E.g. A2 vocabulary whose dates are real dates:
    ``combine([build("cefr", level="A2"), build("dates")])``. Raises
    UnsatisfiableConstraintError when the languages have no text in common.
    """
    builds = tuple(builds)
    if not builds:
        raise GrammarError("combine() needs at least one grammar build")
    if len(builds) == 1:
        return builds[0]
    language = None
    for b in builds:
        if b.language is None:
            continue
        if language is None:
            language = b.language
        else:
            language = optimize(pynini.intersect(language, b.language), stage=f"combine {b.name}")
            if language.num_states() == 0:
                names = " and ".join(x.describe() for x in builds if x.language is not None)
                raise UnsatisfiableConstraintError(
                    f"grammars {names} have no text in common",
                    tuple(f"grammar {x.name}" for x in builds),
                )
    h = hashlib.sha256()
    for b in builds:
        h.update(b.cache_key.encode())
    params = {f"{b.name}.{k}": v for b in builds for k, v in b.params.items()}
    return GrammarBuild(
        name="+".join(b.name for b in builds),
        params=types.MappingProxyType(params),
        source_hash=h.hexdigest(),
        language=language,
        phrases=tuple(dict.fromkeys(p for b in builds for p in b.phrases)),
        avoid=tuple(dict.fromkeys(p for b in builds for p in b.avoid)),
    )
