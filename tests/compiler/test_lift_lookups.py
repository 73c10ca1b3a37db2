"""The lift's fast lookups against numpy's plain ones: `array_ops.unique` (np.unique), the
rank-bitmap step of `_Arcs` (binary search over the arc keys) and `chain_blocks._order`
(np.lexsort), on random inputs that include the edge cases (empty, ties, negative hashes)."""
import numpy as np
import pytest

from fstbeam.compiler.hard.array_ops import unique
from fstbeam.compiler.hard.chain_blocks import _order
from fstbeam.compiler.hard.token_fsa import _Arcs


@pytest.mark.parametrize("n,hi,dtype", [(0, 5, np.int64), (1, 5, np.int64), (1000, 7, np.int32),
                                        (5000, 10**9, np.int64), (300, 2, np.uint8)])
def test_unique_is_np_unique(n, hi, dtype):
    x = np.random.default_rng(n).integers(0, hi, n).astype(dtype)
    got, want = unique(x), np.unique(x)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


@pytest.mark.parametrize("states,per_state", [(300, 12), (200, 120), (50, 256)])
def test_rank_step_is_the_binary_search(states, per_state):
    rng = np.random.default_rng(states)
    cells = np.unique(rng.integers(0, states * 256, states * per_state))
    src, byte, dst = cells // 256, cells % 256, rng.integers(0, states, len(cells))
    fast = _Arcs.plain(states, src, byte, dst)
    slow = _Arcs.plain(states, src, byte, dst)
    fast.__dict__["table"] = slow.__dict__["table"] = None  # (no dense table: the lookups under test)
    slow.__dict__["rank"] = None
    assert fast.rank is not None
    q, b = rng.integers(0, states, 20000), rng.integers(0, 256, 20000)
    q, b = np.concatenate([q, src]), np.concatenate([b, byte])  # every arc, and misses
    got = fast.step(q, b)
    assert np.array_equal(got, slow.step(q, b))
    assert (got[20000:] == dst).all()


def test_sparse_arcs_keep_the_binary_search():
    arcs = _Arcs.plain(1000, np.arange(999), np.full(999, 97), np.arange(1, 1000))
    assert arcs.rank is None


@pytest.mark.parametrize("seed", range(6))
def test_order_is_lexsort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    k = rng.integers(0, int(rng.integers(1, 50)), n)
    for h in (rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64),  # full hashes
              rng.integers(-3, 3, n).astype(np.int64),  # one upper half, lower halves tie-break
              rng.integers(-3, 3, n).astype(np.int64) << 40):  # ties in the upper half
        assert np.array_equal(_order([k, h]), np.lexsort([h, k]))
    three = [k, k % 3, rng.integers(-5, 5, n)]  # (more keys: the lexsort itself)
    assert np.array_equal(_order(three), np.lexsort(three[::-1]))
