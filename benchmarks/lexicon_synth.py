"""Synthetic word lists of any size drawn from real English forms (cefrpy's C2 list), for
benchmarks/bench_compile.py.

Deterministic: the real forms first, then derived forms (``un`` + form, form + ``ness``,
``re`` + form + ``able``) picked by a seeded generator until ``n`` distinct entries exist, the
way a full-form lexicon of an inflecting language grows. ``compounds`` > 0 also joins two real
forms (``house`` + ``boat``), a harder case: after ``house`` the automaton must remember which
of 170,000 second forms may follow, so little is shared.
"""
from __future__ import annotations

import numpy as np

PREFIXES = ("un", "re", "over", "pre", "non", "anti", "counter", "mis", "out", "sub", "super", "under", "inter", "semi")
SUFFIXES = ("ness", "less", "ful", "ly", "ish", "able", "ment", "er", "est", "ism", "ist", "dom", "ship", "wise")


def synthetic_words(n: int, *, compounds: float = 0.0, seed: int = 15) -> list[str]:
    """``n`` distinct lower-case entries (fewer real forms than ``n`` are topped up)."""
    from fstbeam.compiler.hard.cefr import cefr_words

    base = cefr_words("C2")
    out = list(base[:n])
    seen = set(out)
    rng = np.random.default_rng(seed)
    while len(out) < n:
        m = 2 * (n - len(out)) + 1000
        kind = np.where(rng.random(m) < compounds, 3, rng.integers(0, 3, m))
        a, b = rng.integers(0, len(base), m), rng.integers(0, len(base), m)
        p, s = rng.integers(0, len(PREFIXES), m), rng.integers(0, len(SUFFIXES), m)
        for k, i, j, pi, si in zip(kind.tolist(), a.tolist(), b.tolist(), p.tolist(), s.tolist()):
            w = (PREFIXES[pi] + base[i], base[i] + SUFFIXES[si], PREFIXES[pi] + base[i] + SUFFIXES[si], base[i] + base[j])[k]
            if w not in seen:
                seen.add(w)
                out.append(w)
                if len(out) == n:
                    break
    return out
