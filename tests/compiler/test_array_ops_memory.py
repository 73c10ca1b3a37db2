"""The lift's memory-frugal array helpers against plain numpy (lexsort, bincount, concatenate)."""
import numpy as np
import pytest

from fstbeam.compiler.hard import array_ops
from fstbeam.compiler.hard.array_ops import Parts, csr, grouped, narrow, sorted_triples, sorted_triples_csr, step_slices


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_sorted_triples_matches_lexsort(in_place, big):
    rng = np.random.default_rng(1)
    n = 5000
    pairs = rng.choice(400 * 300, n, replace=False)
    a, b = (pairs // 300).astype(np.int32), (pairs % 300).astype(np.int64)
    c = rng.integers(0, 2**40 if big else 2**20, n)  # big: c needs int64 (no packed word either way)
    o = np.lexsort((b, a))
    want = (a[o].copy(), b[o].copy(), c[o].copy())
    got = sorted_triples(a, b, c, in_place=in_place)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    if in_place and not big:  # the caller's own arrays now hold the result
        assert got[0] is a and got[2] is c
    if not in_place and not big:  # unpacked to int32 where the fields fit
        assert all(g.dtype == np.int32 for g in got)


@pytest.mark.parametrize("big", [False, True])
def test_sorted_triples_csr_matches_lexsort_and_bincount(big):
    rng = np.random.default_rng(5)
    n, nk = 6000, 400
    pairs = rng.choice(nk * 300, n, replace=False)
    a, b = (pairs // 300).astype(np.int32), (pairs % 300).astype(np.int32)
    c = rng.integers(0, 2**40 if big else 2**20, n)  # big: no packed word (a lexsort)
    o = np.lexsort((b, a))
    want_b, want_c = b[o].copy(), c[o].copy()
    want_ptr = np.concatenate([[0], np.cumsum(np.bincount(a, minlength=nk + 3))])
    cols = [a, b, c]
    ptr, got_b, got_c = sorted_triples_csr(cols, nk + 3, chunk=1000)
    assert not cols  # taken out of the caller's list
    assert np.array_equal(ptr, want_ptr) and np.array_equal(got_b, want_b) and np.array_equal(got_c, want_c)
    e = np.zeros(0, np.int32)
    ptr, got_b, got_c = sorted_triples_csr([e, e, e], 4)
    assert ptr.tolist() == [0] * 5 and not len(got_b) and not len(got_c)


@pytest.mark.parametrize("dense_share", [0.0, 0.1, 0.9])
def test_sorted_triples_csr_scatters_dense_groups_like_lexsort(dense_share, monkeypatch):
    """Groups holding a quarter of all ``b`` values or more are scattered, not sorted (where
    they hold most triples): the same order and pointers as a lexsort, whatever the mix."""
    scattered = []
    real = array_ops._dense_sorted
    monkeypatch.setattr(array_ops, "_dense_sorted", lambda *a: scattered.append(r := real(*a)) or r)
    rng = np.random.default_rng(7)
    width, n = 3000, 40
    a_parts, b_parts = [], []
    for k in range(n):
        size = rng.integers(width // 4, width) if rng.random() < dense_share else rng.integers(0, 60)
        a_parts.append(np.full(size, k, np.int32))
        b_parts.append(rng.choice(width, size, replace=False).astype(np.int32))
    perm = rng.permutation(sum(map(len, a_parts)))
    a, b = np.concatenate(a_parts)[perm], np.concatenate(b_parts)[perm]
    c = rng.integers(0, 2**20, len(a)).astype(np.int32)
    o = np.lexsort((b, a))
    want = (np.concatenate([[0], np.cumsum(np.bincount(a, minlength=n + 2))]), b[o], c[o])
    got = sorted_triples_csr([a.copy(), b.copy(), c.copy()], n + 2, b_width=width)
    assert all(np.array_equal(g, w) for g, w in zip(got, want)) and got[1].dtype == got[2].dtype == np.int32
    in_dense = sum(len(p) for p in a_parts if 4 * len(p) >= width)
    assert (scattered[0] is not None) == (2 * in_dense >= len(a)) == (dense_share > 0)
    # a repeated (a, b) pair: both kept, as the sort keeps them (the scatter would keep one)
    a2, b2, c2 = np.r_[a, a[:1]], np.r_[b, b[:1]], np.r_[c, c[:1] + 1]
    got = sorted_triples_csr([a2, b2, c2], n + 2, b_width=width)
    assert len(got[1]) == len(a2) and got[0][-1] == len(a2)


def test_parts_take_trims_while_copying(monkeypatch):
    trims = []
    monkeypatch.setattr(array_ops, "trim_heap", lambda: trims.append(1))
    monkeypatch.setattr(array_ops, "TAKE_TRIM", 1000)
    rng = np.random.default_rng(6)
    pieces = [rng.integers(-(2**30), 2**30, int(k)) for k in rng.integers(0, 300, 40)]
    parts = Parts(pieces)
    out = parts.take()
    assert out.dtype == np.int32 and np.array_equal(out, np.concatenate(pieces)) and not parts
    assert len(trims) >= sum(p.size * 4 for p in pieces) // (1000 + 300 * 4)  # (once past 1000 bytes: at most a piece more)


def test_csr_in_chunks_matches_bincount():
    keys = np.random.default_rng(2).integers(0, 50, 10_000).astype(np.int32)
    want = np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=60))])
    assert np.array_equal(csr(keys, 60, chunk=777), want)
    assert np.array_equal(csr(keys, 60), want)


def test_grouped_in_place_matches_lexsort():
    rng = np.random.default_rng(3)
    keys, vals = rng.integers(0, 30, 2000), rng.integers(0, 1000, 2000).astype(np.int32)
    got, ptr = grouped(keys, vals, 30)
    assert np.array_equal(got, vals[np.lexsort((vals, keys))])
    assert np.array_equal(ptr, csr(keys, 30))


def test_grouped_taken_in_chunks_matches_lexsort_and_leaves_held_columns_whole():
    rng = np.random.default_rng(4)
    keys, vals = rng.integers(0, 40, 5000).astype(np.int32), rng.integers(0, 10**6, 5000).astype(np.int32)
    want, want_ptr = vals[np.lexsort((vals, keys))], csr(keys, 40)
    box = [keys.copy(), vals.copy()]  # (held by the list alone: cut as they are packed)
    got, ptr = array_ops.grouped_taken(box, 40, chunk=700)
    assert not box and np.array_equal(got, want) and np.array_equal(ptr, want_ptr) and got.dtype == np.int32
    head = vals[:30]  # the caller still reads a view of the values: left whole
    got, _ = array_ops.grouped_taken([keys, vals], 40, chunk=700)
    assert np.array_equal(got, want) and len(vals) == 5000 and np.array_equal(head, vals[:30])


def test_grouped_taken_values_are_int32_in_half_their_words():
    """The sorted words' low halves, moved to the front of their own buffer (its back half handed
    back), not a second int32 column beside them; values past int32 stay int64, exact."""
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 4097):
        keys, vals = rng.integers(0, 9, n).astype(np.int32), rng.integers(0, 2**31 - 1, n)
        want = vals[np.lexsort((vals, keys))]
        got, _ = array_ops.grouped_taken([keys.copy(), vals.copy()], 9, chunk=100)
        assert got.dtype == np.int32 and np.array_equal(got, want)
        assert got.base is not None and got.base.nbytes == 8 * ((n + 1) // 2)  # (the words' buffer, halved)
    keys, vals = np.array([1, 0, 1], np.int32), np.array([2**40, 5, 3], np.int64)
    got, _ = array_ops.grouped_taken([keys, vals], 2)
    assert got.dtype == np.int64 and got.tolist() == [5, 3, 2**40]


def test_narrow_and_parts_keep_values():
    small, large = np.arange(-5, 5, dtype=np.int64), np.array([1, 2**31], np.int64)
    assert narrow(small).dtype == np.int32 and np.array_equal(narrow(small), small)
    assert narrow(large).dtype == np.int64  # never wraps around
    parts = Parts([np.zeros(0, np.int64)])
    parts.append(small)
    parts.append(np.array([7], np.int64))
    out = parts.take()
    assert out.dtype == np.int32 and out.tolist() == [*range(-5, 5), 7] and not parts
    parts.append(large)  # one piece too wide: the whole column stays int64, exact
    assert parts.take().tolist() == [1, 2**31]


def test_step_slices_cover_in_order_within_limit():
    cost = np.random.default_rng(4).integers(0, 40, 1000)
    cost[17] = 500  # one item over the limit
    cuts = step_slices(cost, limit=100)
    assert cuts[0] == 0 and cuts[-1] == len(cost) and (np.diff(cuts) > 0).all()
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        assert cost[lo:hi].sum() <= 100 + cost[lo]
    assert step_slices(cost, limit=10**6).tolist() == [0, len(cost)]


def test_cut_shortens_only_an_array_nothing_else_refers_to():
    from fstbeam.compiler.hard.array_ops import _cut

    def handed_over() -> int:  # (as `sorted_triples_csr` holds its columns: one name)
        col = np.arange(10, dtype=np.int32)
        _cut(col, 4)
        return len(col)

    assert handed_over() == 4
    kept = np.arange(10, dtype=np.int32)
    view = kept[2:6]
    _cut(kept, 1)  # a view of it: left whole (cutting would free the view's memory)
    assert len(kept) == 10 and view.tolist() == [2, 3, 4, 5]
    other = np.arange(10, dtype=np.int32)
    alias = other
    _cut(other, 1)  # another name: left whole
    assert len(alias) == 10


def test_sorted_triples_csr_with_a_view_of_a_column_leaves_it_intact():
    rng = np.random.default_rng(7)
    pairs = rng.choice(500 * 300, 5000, replace=False)
    a, b = (pairs // 300).astype(np.int32), (pairs % 300).astype(np.int32)
    c = rng.integers(0, 2**20, 5000).astype(np.int32)
    head = b[:50]  # the caller still reads part of a column
    want = head.copy()
    o = np.lexsort((b, a))
    want_b = b[o]
    cols = [a, b, c]
    del a, b, c
    _, got_b, _ = sorted_triples_csr(cols, 500, chunk=700)
    assert np.array_equal(got_b, want_b) and np.array_equal(head, want)


def test_ascending_counts_spell_the_column_again_or_refuse():
    a = np.array([0, 0, 2, 2, 2, 5], np.int32)
    counts = array_ops.ascending_counts(a, 7)
    assert counts.dtype == np.int32 and counts.tolist() == [2, 0, 3, 0, 0, 1, 0]
    assert np.array_equal(np.repeat(np.arange(7), counts), a)
    assert array_ops.ascending_counts(np.zeros(0, np.int32), 3).tolist() == [0, 0, 0]
    assert array_ops.ascending_counts(np.array([1, 0], np.int32), 3) is None  # not ascending: kept as it is
    assert array_ops.ascending_counts(np.array([0, 3], np.int32), 3) is None  # a value past n
    assert array_ops.ascending_counts(np.array([-1, 0], np.int32), 3) is None
