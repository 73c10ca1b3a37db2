"""The lift's fast lookups against numpy's plain ones: `array_ops.unique` (np.unique), the
rank-bitmap step of `_Arcs` (binary search over the arc keys) and `chain_blocks._order`
(np.lexsort), on random inputs that include the edge cases (empty, ties, negative hashes)."""
import numpy as np
import pytest

from fstbeam.compiler.hard.array_ops import unique
from fstbeam.compiler.hard.lift.chain_blocks import _order
from fstbeam.compiler.hard.lift.token_fsa import _Arcs


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


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("table", [True, False])
@pytest.mark.parametrize("slice_limit", [None, 7])
def test_a_step_extends_every_pair_as_a_loop_does(monkeypatch, seed, table, slice_limit):
    # one BFS step of the lift (`_Stepper`: the trie's children or the state's arcs, the dense
    # table's flat gather or the arcs' lookups, one slice or many) against a plain Python loop
    from fstbeam.compiler.hard.lift import token_fsa, trie_step
    from fstbeam.compiler.hard.token_trie import _build
    from fstbeam.contract.vocab import Vocab

    rng = np.random.default_rng(seed)
    alphabet = b"ab\"c"
    toks = {bytes(rng.choice(list(alphabet), int(rng.integers(1, 5)))) for _ in range(40)}
    trie = _build(Vocab(tuple(sorted(toks)), (), frozenset(), "plain", "t"))
    S = 12
    cells = np.unique(rng.integers(0, S * 256, 300))
    cells = cells[np.isin(cells % 256, list(alphabet)) | (rng.random(len(cells)) < 0.1)]
    src, byte, dst = cells // 256, cells % 256, rng.integers(0, S, len(cells))
    arcs = _Arcs.plain(S, src, byte, dst)
    if not table:
        arcs.__dict__["table"] = None
    if slice_limit is not None:
        monkeypatch.setattr(trie_step, "step_slices", lambda cost, *_: _cuts(cost, slice_limit))  # (many slices)
    node = rng.integers(0, trie.num_nodes, 60)
    state = rng.integers(0, S, 60)
    got = token_fsa._Stepper(arcs, trie)(node, state)
    delta = {(int(q), int(b)): int(r) for q, b, r in zip(src, byte, dst)}
    want = sorted((k, c, delta[(int(state[k]), int(trie.node_byte[c]))])
                  for k in range(len(node)) for c in range(trie.child_lo[node[k]], trie.child_hi[node[k]])
                  if (int(state[k]), int(trie.node_byte[c])) in delta)
    assert sorted(zip(*(x.tolist() for x in got))) == want


def _cuts(cost: np.ndarray, limit: int) -> np.ndarray:
    from fstbeam.compiler.hard.array_ops import step_slices

    cuts = step_slices(cost, limit)
    assert len(cuts) > 2  # (the sliced path is the one under test)
    return cuts
