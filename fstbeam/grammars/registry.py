"""The grammars of the library: `Grammar` (one folder), `get` and `build`.

Parameters live in `params`, discovery in `discovery`, build results and `combine` in
`building`.

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
import hashlib
import inspect
import logging
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.cache import shared_cache
from ..errors import Error, GrammarError, UnsatisfiableConstraintError
from .building import (
    GrammarBuild,
    GrammarParts,
    _as_parts,
    _check_acceptor,
    _check_labels,
    _optimized,
    _texts,
    combine,
)
from .discovery import ENV_PATH, LIB_DIR, PACKAGE_DIR, _candidates, _load_module, check_grammar_name, grammar_dirs, list_grammars  # noqa: F401
from .params import Param, _canonical_params, _params_of, _show, parse_params

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

_HASH_VERSION = "1"  # bump when the hashing scheme itself changes


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
        """Build (or fetch from the process-wide byte-budget cache) the grammar with ``params``."""
        values = self.normalize_params(params)
        source_hash = self.source_hash(values)
        key = (self.name, str(self.path), _canonical_params(values), source_hash)
        cached = shared_cache().get(("grammar", key), lambda: self._build_uncached(values, source_hash), size=_build_nbytes)
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


def _build_nbytes(b: GrammarBuild) -> int:
    """Rough memory of a build for the byte budget: OpenFst's vector states and arcs."""
    f = b.language
    if f is None:
        return 1024
    return 64 * f.num_states() + 16 * sum(f.num_arcs(q) for q in f.states())


def get(name: str) -> Grammar:
    """The grammar called ``name``; GrammarError listing the known ones if there is none."""
    check_grammar_name(name)
    folders = _candidates()[name]
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
