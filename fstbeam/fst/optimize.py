"""Guarded optimization of byte and token acceptors, and the cached byte alphabets.

Every determinize/minimize in fstbeam goes through `optimize`, so that sizes and seconds are
logged per stage (logger ``fstbeam.fst``) and a determinization past a cap is an error that
names the stage. OpenFst cannot stop a determinization at a state count (its threshold prunes
the whole result), so a small automaton, where an exponential blow-up hides, is determinized by
`small_determinize`, which stops at the cap; a large one is checked once determinized.
"""
from __future__ import annotations

import functools
import logging
import time

import pynini

from ..cancel import checkpoint
from ..errors import Error
from .labels import MAX_BYTE_LABEL, MIN_BYTE_LABEL
from .small_determinize import StateCapExceeded, determinize_small

log = logging.getLogger("fstbeam.fst")

__all__ = ["FstSizeError", "optimize", "determinized", "optimize_in_place", "byte_sigma", "sigma_star"]


class FstSizeError(Error, ValueError):
    """An automaton is (or would become) larger than the cap its caller set."""

    def __init__(self, message: str, *, stage: str, states: int, limit: int):
        super().__init__(message)
        self.stage = stage
        self.states = states
        self.limit = limit


def optimize(fst: pynini.Fst, *, stage: str, max_states: int | None = None) -> pynini.Fst:
    """Return an equivalent epsilon-free, deterministic, minimal acceptor (arcs sorted by label).

    ``stage`` names the caller in logs and errors (e.g. ``"grammar cefr"``, ``"word list"``).
    ``max_states`` caps every intermediate result: `FstSizeError` past it (a small input's
    determinization stops as soon as it passes the cap; a large one's is checked when done).
    The input is not modified.
    """
    checkpoint()  # (a compile whose request gave up stops here: `fstbeam.cancel`)
    if max_states is not None and max_states < 1:
        raise ValueError(f"max_states must be >= 1, got {max_states}")
    if fst.num_states() and not fst.properties(pynini.ACCEPTOR, True) == pynini.ACCEPTOR:
        raise ValueError(
            f"optimize({stage!r}) needs an acceptor, got a transducer; "
            "project it first (fst.project('output'))"
        )
    # counting arcs walks every state: only when the log or an error shows the count
    n_in = fst.num_states()
    verbose = log.isEnabledFor(logging.INFO)
    a_in = _num_arcs(fst) if verbose else -1
    timings: list[str] = []
    t_all = time.perf_counter()

    def _check(result: pynini.Fst, step: str) -> None:
        if max_states is not None and result.num_states() > max_states:
            raise FstSizeError(
                f"{stage}: {step} produced more than {max_states:,} states "
                f"(input had {n_in:,} states, {_num_arcs(fst):,} arcs); simplify the constraint or raise "
                "max_states",
                stage=stage,
                states=result.num_states(),
                limit=max_states,
            )

    _check(fst, "input")
    if fst.num_states() == 0:
        log.info("%s: empty automaton (0 states)", stage)
        return fst.copy()
    # rmepsilon and determinize return new automata: the input is copied only where neither
    # runs and minimize would change it in place
    out = fst

    if out.properties(pynini.EPSILONS, True) == pynini.EPSILONS:
        t = time.perf_counter()
        out = pynini.rmepsilon(out)
        timings.append(f"rmepsilon {time.perf_counter() - t:.3f}s")

    if out.properties(pynini.I_DETERMINISTIC, True) != pynini.I_DETERMINISTIC:
        t = time.perf_counter()
        out = _determinize(out, stage=stage, max_states=max_states)
        timings.append(f"determinize {time.perf_counter() - t:.3f}s")
        _check(out, "determinize")

    if out is fst:
        out = fst.copy()
    t = time.perf_counter()
    out.minimize(allow_nondet=False)
    out.connect()
    out.arcsort("ilabel")
    timings.append(f"minimize {time.perf_counter() - t:.3f}s")

    if not verbose:
        return out
    log.info(
        "%s: %d -> %d states, %d -> %d arcs in %.3fs (%s)",
        stage,
        n_in,
        out.num_states(),
        a_in,
        _num_arcs(out),
        time.perf_counter() - t_all,
        ", ".join(timings),
    )
    return out


def determinized(fst: pynini.Fst, *, stage: str, max_states: int | None = None) -> pynini.Fst:
    """An equivalent epsilon-free deterministic acceptor, not minimized (``fst`` itself when it
    already is one): enough for the right operand of a difference, at the cost of determinization
    alone. `FstSizeError` past ``max_states``, as `optimize`."""
    checkpoint()  # (a compile whose request gave up stops here: `fstbeam.cancel`)
    t = time.perf_counter()
    n_in = fst.num_states()
    out = fst
    if out.properties(pynini.EPSILONS, True) == pynini.EPSILONS:
        out = pynini.rmepsilon(out)
    if out.properties(pynini.I_DETERMINISTIC, True) != pynini.I_DETERMINISTIC:
        out = _determinize(out, stage=stage, max_states=max_states)
    if max_states is not None and out.num_states() > max_states:
        raise FstSizeError(f"{stage}: determinize produced more than {max_states:,} states (input had "
                           f"{n_in:,} states)", stage=stage, states=out.num_states(), limit=max_states)
    log.info("%s: %d -> %d states determinized in %.3fs", stage, n_in, out.num_states(),
             time.perf_counter() - t)
    return out


def _determinize(fst: pynini.Fst, *, stage: str, max_states: int | None) -> pynini.Fst:
    """OpenFst's determinization, or for a small acceptor `determinize_small` (the same
    automaton), which stops at ``max_states`` where OpenFst computes every state first: a small
    automaton is where an exponential blow-up hides (a regex: `(a|b)*a(a|b){25}`)."""
    # (only where a cap is set and the input's 2^n subsets could pass it: OpenFst is faster on the rest)
    could_pass = max_states is not None and fst.num_states() >= max_states.bit_length()
    try:
        small = determinize_small(fst, max_states) if could_pass else None
    except StateCapExceeded:
        raise FstSizeError(f"{stage}: determinize produced more than {max_states:,} states (input had "
                           f"{fst.num_states():,} states); simplify the constraint or raise max_states",
                           stage=stage, states=(max_states or 0) + 1, limit=max_states or 0) from None
    if small is not None:
        return small
    return pynini.determinize(fst)  # (its ``nstate`` threshold prunes a whole determinization: no sooner, 1.3x slower)


_TEST_DETERMINISM_STATES = 50_000


def optimize_in_place(box: list[pynini.Fst], *, stage: str, max_states: int) -> pynini.Fst:
    """`optimize` without the copies it keeps beside its input, for the largest automaton of a
    compile (a JSON Schema's whole document, kb_145: 280,000 states and 6 million arcs, where each
    copy is a few hundred megabytes). The automaton is taken out of ``box`` and changed: held by
    no one else, the input of determinization goes before minimization (o21328's document: 280 MB
    of a 680 MB peak). The result may be the input itself. `FstSizeError` when the DFA would pass
    ``max_states``."""
    checkpoint()  # (a compile whose request gave up stops here: `fstbeam.cancel`)
    fst = box.pop()
    t0, n0 = time.process_time(), fst.num_states()
    fst.rmepsilon()
    t1, n1 = time.process_time(), fst.num_states()
    # (a large document is tested only for what is known: the test walks every arc, 0.6 s of
    # circleci's 4.5M, and such a document is seldom deterministic; one that is, is determinized)
    det = pynini.I_DETERMINISTIC  # type: ignore[attr-defined]
    if fst.properties(det, fst.num_states() <= _TEST_DETERMINISM_STATES) != det:
        fst = _determinize(fst, stage=stage, max_states=max_states)
    if fst.num_states() > max_states:
        raise FstSizeError(f"{stage}: determinize produced more than {max_states:,} states", stage=stage,
                           states=fst.num_states(), limit=max_states)
    t2, n2 = time.process_time(), fst.num_states()
    # arcs sorted first, as determinize leaves them: OpenFst's minimization of a DFA whose arcs
    # are not (a document deterministic before this step, its parts determinized) left 3 states
    # too many on GeoJSON o63308 (37,787; 37,784 minimized again)
    fst.arcsort("ilabel")
    fst.minimize(allow_nondet=False)
    fst.connect()
    fst.arcsort("ilabel")
    log.info("%s: %d states, rmepsilon %.2fs -> %d, determinize %.2fs -> %d, minimize %.2fs -> %d", stage, n0,
             t1 - t0, n1, t2 - t1, n2, time.process_time() - t2, fst.num_states())
    return fst


def _num_arcs(fst: pynini.Fst) -> int:
    return sum(fst.num_arcs(s) for s in fst.states())


@functools.cache
def _byte_sigma() -> pynini.Fst:
    # Two states and one arc per byte label: every single byte except 0x00 (label 0 is epsilon).
    f = pynini.Fst()
    start, end = f.add_state(), f.add_state()
    f.set_start(start)
    f.set_final(end)
    one = pynini.Weight.one(f.weight_type())
    for label in range(MIN_BYTE_LABEL, MAX_BYTE_LABEL + 1):
        f.add_arc(start, pynini.Arc(label, label, one, end))
    return f.optimize()


@functools.cache
def _sigma_star() -> pynini.Fst:
    f = pynini.Fst()
    s = f.add_state()
    f.set_start(s)
    f.set_final(s)
    one = pynini.Weight.one(f.weight_type())
    for label in range(MIN_BYTE_LABEL, MAX_BYTE_LABEL + 1):
        f.add_arc(s, pynini.Arc(label, label, one, s))
    return f


def byte_sigma() -> pynini.Fst:
    """Any one byte (labels 1..255). A fresh copy each call: pynini methods mutate in place."""
    return _byte_sigma().copy()


def sigma_star() -> pynini.Fst:
    """Any byte string (one state, a loop per byte label). A fresh copy each call."""
    return _sigma_star().copy()
