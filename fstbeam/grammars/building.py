"""What a grammar build produces (`GrammarParts` from ``grammar.py``, `GrammarBuild` for the
compiler), the checks every build passes, and `combine`."""
from __future__ import annotations

import hashlib
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pynini

from ..errors import GrammarError, UnsatisfiableConstraintError
from ..fst.labels import MAX_BYTE_LABEL, MIN_BYTE_LABEL
from ..fst.optimize import optimize
from .params import _canonical_params, _show

__all__ = ["GrammarBuild", "GrammarParts", "combine"]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class GrammarParts:
    """What a grammar's ``build`` may return when it is more than a language.

    ``language``: hard constraint, an acceptor over bytes (None: no hard constraint).
    ``phrases``: texts that must appear in the output (a tuple of texts: any one of them, an
    ``AnyOf``). ``avoid``: texts that must never appear.
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
    place). ``params`` holds every parameter, defaults included. Cache compiled results by
    ``cache_key``, which covers the name, the parameters and
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
        if isinstance(item, (tuple, list)) and what == "phrases":  # alternatives: any one must appear
            if not item:
                raise GrammarError(f"grammar {name!r}: an empty tuple of alternatives in {what}")
            item = _texts(item, name, "alternatives")
        elif not isinstance(item, str) or not item.strip():
            raise GrammarError(f"grammar {name!r}: {what} entry {item!r} is not a non-empty string")
        elif "\x00" in item:
            raise GrammarError(f"grammar {name!r}: {what} entry {item!r} contains a NUL byte")
        if item not in out:
            out.append(item)
    return tuple(out)


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
