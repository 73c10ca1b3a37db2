"""Dynamic beam allocation: Sockeye's published allocation vectors, and the vectorized form."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fstbeam.runtime.search.dba import allocate, bank_sizes

# (num_constraints C, beam size k, candidates per bank 0..C, expected allocation), from Sockeye's
# test_constraints.py (awslabs/sockeye, tag 2.3.24). Invariant of every case: sum == beam size.
SOCKEYE_VECTORS = [
    # no constraints: the whole beam goes to bank 0
    (0, 5, [5], [5]),
    # one constraint, no candidate has met it: its slots flow down to bank 0
    (1, 5, [5, 0], [5, 0]),
    # one constraint met by a single candidate: that bank keeps 1 slot, the rest flows down
    (1, 5, [5, 1], [4, 1]),
    # plenty of candidates everywhere: even split (2 each), remainder 1 to the top bank
    (1, 5, [10, 10], [2, 3]),
    # bank 0 has only one candidate: its surplus wraps around to the top bank
    (1, 5, [1, 10], [1, 4]),
    # two constraints, nothing met yet: everything ends in bank 0
    (2, 5, [5, 0, 0], [5, 0, 0]),
    # middle bank empty: its slots go to bank 0 (which can take 2 more), not to the top
    (2, 10, [5, 0, 7], [5, 0, 5]),
    # middle bank has one candidate: it keeps 1, passes 2 down
    (2, 10, [5, 1, 7], [5, 1, 4]),
    # more constraints than beam slots: the 2 slots start in the top bank; one flows down to bank 2
    (3, 2, [1, 0, 1, 1], [0, 0, 1, 1]),
    # more constraints than beam slots: slots walk down to the banks that have candidates
    (3, 2, [1, 0, 1, 0], [1, 0, 1, 0]),
    # more constraints than beam slots: the top bank has enough candidates for both slots
    (3, 2, [4, 2, 2, 3], [0, 0, 0, 2]),
]


@pytest.mark.parametrize("num_constraints, beam_size, counts, expected", SOCKEYE_VECTORS)
def test_sockeye_allocation_vectors(num_constraints, beam_size, counts, expected):
    got = bank_sizes(num_constraints, beam_size, counts)
    assert sum(got) == beam_size  # the invariant: the whole beam is always allocated
    assert got == expected
    vec = allocate(torch.tensor([counts]), torch.tensor([num_constraints + 1]), beam_size)[0].tolist()
    assert vec == expected


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_vectorized_allocation_equals_the_reference(data):
    """Many inputs at once, each with its own number of banks (padding banks have count 0)."""
    k = data.draw(st.integers(1, 12))
    rows = data.draw(st.lists(st.lists(st.integers(0, 7), min_size=1, max_size=9), min_size=1, max_size=5))
    NB = max(len(r) for r in rows)
    counts = torch.tensor([r + [0] * (NB - len(r)) for r in rows])
    got = allocate(counts, torch.tensor([len(r) for r in rows]), k)
    for r, g in zip(rows, got.tolist()):
        exp = bank_sizes(len(r) - 1, k, r) + [0] * (NB - len(r))
        assert g == exp
        assert sum(g) == k
