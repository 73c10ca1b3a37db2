"""Languages over whole texts built from small patterns: contains, avoids, only-valid.

These are the building blocks that make a grammar *intersectable* with a word list: instead of
describing the whole text, a filter accepts every text except those with a bad part, e.g.
"every number in the text is well formed" or "every date in the text exists".
"""
from __future__ import annotations

import pynini

from ...fst.optimize import optimize, sigma_star

__all__ = ["avoids", "contains", "only_valid"]


def contains(pattern: pynini.Fst) -> pynini.Fst:
    """Texts with at least one occurrence of a string of ``pattern`` (``Σ* pattern Σ*``)."""
    return optimize(sigma_star() + pattern + sigma_star(), stage="contains")


def avoids(pattern: pynini.Fst) -> pynini.Fst:
    """Texts with no occurrence of a string of ``pattern`` (``Σ* - Σ* pattern Σ*``)."""
    return optimize(pynini.difference(sigma_star(), contains(pattern)), stage="avoids")


def only_valid(
    candidates: pynini.Fst,
    valid: pynini.Fst,
    *,
    not_after: pynini.Fst | None = None,
    not_before: pynini.Fst | None = None,
    stage: str = "only_valid",
) -> pynini.Fst:
    """Texts in which every *maximal* occurrence of a ``candidates`` string is in ``valid``.

    An occurrence is maximal when the text before it does not end with a string of
    ``not_after`` and the text after it does not start with a string of ``not_before``; e.g.
    for numbers, ``not_after = digit`` and ``not_before = digit`` make ``1,00`` inside
    ``1,000`` not an occurrence of its own. Texts with no candidate at all are accepted.
    """
    sigma = sigma_star()
    bad = optimize(pynini.difference(optimize(candidates, stage=stage), optimize(valid, stage=stage)), stage=stage)
    left = sigma
    if not_after is not None:  # any text that does not end with a not_after string
        left = pynini.difference(sigma, optimize(sigma + not_after, stage=stage))
    right = sigma
    if not_before is not None:  # any text that does not start with a not_before string
        right = pynini.difference(sigma, optimize(not_before + sigma, stage=stage))
    with_bad = optimize(left + bad + right, stage=stage)
    return optimize(pynini.difference(sigma, with_bad), stage=stage)
