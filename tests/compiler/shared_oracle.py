"""Lockstep comparison of two hard token automata (the oracle for shared interiors): from the
two start states, every pair of states reached by the same token sequence has the same
finality, distance, allowed tokens and mask row contents."""
from __future__ import annotations

import numpy as np

from fstbeam.contract.bitmask import tokens_in_bitmask
from fstbeam.contract.hard import HardTables


def mask_tokens(h: HardTables, q: int) -> np.ndarray:
    dense, sparse = h.mask_row(q)
    bits = np.asarray(tokens_in_bitmask(dense, h.width), np.int64)
    assert not np.isin(sparse, bits).any(), "dense and sparse parts overlap"
    return np.sort(np.concatenate([bits, sparse]))


def assert_same_language(a: HardTables, b: HardTables, *, max_pairs: int = 200_000) -> int:
    """BFS over pairs of states; returns the number of pairs visited."""
    V = a.width
    seen = {(a.start, b.start)}
    todo = [(a.start, b.start)]
    while todo:
        qa, qb = todo.pop()
        assert bool(a.final[qa]) == bool(b.final[qb]), (qa, qb)
        assert int(a.dist_to_final[qa]) == int(b.dist_to_final[qb]), (qa, qb)
        ta, tb = a.allowed_text_tokens(qa), b.allowed_text_tokens(qb)
        assert np.array_equal(ta, tb), (qa, qb, ta, tb)
        assert np.array_equal(mask_tokens(a, qa), ta) and np.array_equal(mask_tokens(b, qb), tb)
        allowed = set(ta.tolist())
        for t in range(V):
            na, nb = a.next_state(qa, t), b.next_state(qb, t)
            if t not in allowed:
                assert na < 0 and nb < 0, (qa, qb, t)
                continue
            assert na >= 0 and nb >= 0, (qa, qb, t)
            if (na, nb) not in seen:
                seen.add((na, nb))
                todo.append((na, nb))
        assert len(seen) <= max_pairs
    return len(seen)
