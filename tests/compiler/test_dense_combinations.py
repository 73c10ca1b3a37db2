"""`tables._dense_combinations` groups states by their list of dense blocks with hashes and sorts
only the groups: the same rows, in the same order, as comparing the lists one position at a
time (`_dense_combinations_by_position`, the oracle), hash collisions included."""
from __future__ import annotations

import numpy as np
import pytest

from fstbeam.compiler.hard import tables


def _random_lists(rng: np.random.Generator, S: int) -> tuple[np.ndarray, np.ndarray]:
    """(state, block) pairs sorted by state: a few distinct lists, long and short, shared by
    many states (as a schema's states share a string interior's blocks), some states with none."""
    n_blocks = int(rng.integers(1, 40))
    pool = [rng.integers(0, n_blocks, size=int(rng.choice([0, 1, 2, 3, 30, 200]))) for _ in range(int(rng.integers(1, 8)))]
    pool += [p[: len(p) // 2] for p in pool]  # prefixes: equal up to where one list ends
    states, blocks = [], []
    for q in range(S):
        lst = pool[int(rng.integers(len(pool)))]
        states += [q] * len(lst)
        blocks += lst.tolist()
    return np.asarray(states, np.int64), np.asarray(blocks, np.int64)


def _same(a, b) -> bool:
    return np.array_equal(a[0], b[0]) and a[0].dtype == b[0].dtype and len(a[1]) == len(b[1]) \
        and all(np.array_equal(x, y) for x, y in zip(a[1], b[1]))


@pytest.mark.parametrize("seed", range(20))
def test_the_same_rows_as_comparing_position_by_position(seed):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(1, 300))
    dstate, dblock = _random_lists(rng, S)
    assert _same(tables._dense_combinations(dstate, dblock, S), tables._dense_combinations_by_position(dstate, dblock, S))


def test_hash_collisions_fall_back_to_the_exact_comparison(monkeypatch):
    monkeypatch.setattr(tables, "_HASH_MOD", 3)  # nearly every pair of lists collides
    for seed in range(5):
        rng = np.random.default_rng(seed)
        dstate, dblock = _random_lists(rng, 120)
        assert _same(tables._dense_combinations(dstate, dblock, 120),
                     tables._dense_combinations_by_position(dstate, dblock, 120))


def test_no_dense_block_at_all():
    none = np.zeros(0, np.int64)
    got = tables._dense_combinations(none, none, 4)
    assert _same(got, tables._dense_combinations_by_position(none, none, 4)) and got[0].tolist() == [0] * 4


@pytest.mark.parametrize("seed", range(10))
def test_rows_are_ordered_as_python_sorts_length_then_list(seed):
    # the padded-matrix lexsort against Python's own sort of (len, list), and the large-input
    # fallback (that sort) giving the same rows
    rng = np.random.default_rng(100 + seed)
    lists = [rng.integers(0, 5, size=int(rng.integers(0, 12))) for _ in range(int(rng.integers(1, 60)))]
    uniq = {tuple(x.tolist()) for x in lists}  # (groups hold distinct lists)
    lists = [np.asarray(x, np.int64) for x in uniq]
    length = np.asarray([len(x) for x in lists], np.int64)
    start = np.cumsum(length) - length
    flat = np.concatenate(lists) if lists else np.zeros(0, np.int64)
    want = sorted(range(len(lists)), key=lambda g: (len(lists[g]), lists[g].tolist()))
    assert tables._by_length_then_list(flat, start, length).tolist() == want
    with pytest.MonkeyPatch.context() as m:  # (the matrix filled a list position at a time)
        m.setattr(tables, "FILL_AT_ONCE_CELLS", 0)
        assert tables._by_length_then_list(flat, start, length).tolist() == want
    S = 150
    dstate, dblock = _random_lists(rng, S)
    matrix = tables._dense_combinations(dstate, dblock, S)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(tables, "SORT_MATRIX_CELLS", 0)
        assert _same(matrix, tables._dense_combinations(dstate, dblock, S))


@pytest.mark.parametrize("chunk", [1 << 22, 1, 7])  # (keys `_token_classes` reads at a time)
@pytest.mark.parametrize("seed", range(8))
def test_dense_rows_store_each_distinct_row_once(seed, chunk, monkeypatch):
    # combinations of different blocks that hold the same tokens (blocks belong to states) get one
    # row; every combination's row is still the OR of its blocks' tokens (a Python set oracle)
    from fstbeam.contract.bitmask import pack_bool_mask

    monkeypatch.setattr(tables, "CLASS_CHUNK_KEYS", chunk)

    rng = np.random.default_rng(200 + seed)
    V = int(rng.integers(40, 300))
    token_sets = [np.unique(rng.integers(0, V, size=int(rng.integers(1, 30)))) for _ in range(6)]
    blocks = [token_sets[int(rng.integers(len(token_sets)))] for _ in range(int(rng.integers(4, 40)))]
    ptr = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int64)
    block_key = np.concatenate([b + i * V for i, b in enumerate(blocks)]).astype(np.int64)
    combos = [np.zeros(0, np.int64)] + [np.unique(rng.integers(0, len(blocks), size=int(rng.integers(1, 4))))
                                       for _ in range(int(rng.integers(1, 30)))]
    rows, row_of = tables._dense_rows(combos, ptr, block_key, V)
    assert row_of[0] == 0 and not rows[0].any()
    assert len({r.tobytes() for r in rows}) == len(rows)  # each distinct row once
    for c, blk in enumerate(combos):
        want = np.zeros(V, bool)
        for b in blk.tolist():
            want[blocks[b]] = True
        assert np.array_equal(rows[row_of[c]], pack_bool_mask(want))


@pytest.mark.parametrize("chunk", [1 << 22, 1, 4])
def test_blocks_with_equal_sums_but_other_tokens_are_other_classes(chunk, monkeypatch):
    # {1, 5, 6} and {2, 3, 7}: the same size, sum and sum of squares (the candidates' key), other
    # tokens: compared token by token, they stay apart; a true copy of a block joins its class
    from fstbeam.contract.bitmask import pack_bool_mask

    monkeypatch.setattr(tables, "CLASS_CHUNK_KEYS", chunk)

    V = 10
    blocks = [np.array([1, 5, 6]), np.array([2, 3, 7]), np.array([1, 5, 6]), np.array([0, 9])]
    ptr = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int64)
    block_key = np.concatenate([b + i * V for i, b in enumerate(blocks)]).astype(np.int64)
    combos = [np.zeros(0, np.int64), np.array([0]), np.array([1]), np.array([2]), np.array([1, 2]), np.array([3])]
    cls, first = tables._token_classes(combos, ptr, block_key, V)
    assert cls[0] == cls[2] != cls[1] and len(set(cls.tolist())) == 3
    assert all(np.array_equal(blocks[first[cls[b]]], blocks[b]) for b in range(len(blocks)))
    rows, row_of = tables._dense_rows(combos, ptr, block_key, V)
    for c, blk in enumerate(combos):
        want = np.zeros(V, bool)
        for b in blk.tolist():
            want[blocks[b]] = True
        assert np.array_equal(rows[row_of[c]], pack_bool_mask(want))
    assert row_of[1] == row_of[3] != row_of[2]
