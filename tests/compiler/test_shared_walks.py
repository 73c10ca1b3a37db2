"""Walks shared between lift blocks (`compiler/hard/lift/shared_walks.py`): the lift with shared walks
gives exactly the token language of the plain lift (walked in lockstep: `shared_oracle`), for a
JSON-like language, and when the memo was filled by another automaton of the same interior shape.

Oracle: the plain lift (`share_walks=False`), itself checked against regular expressions in
test_lift_exact.py; and Tarjan's components against a brute-force reachability closure.
"""
from __future__ import annotations

import weakref

import numpy as np
import pynini
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_oracle import assert_same_language

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift import shared_walks, walk_memo
from fstbeam.compiler.hard.lift.token_fsa import char_arcs, lift
from fstbeam.compiler.hard.tables import build_tables
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.contract.vocab import Vocab

ALPHABET = 'ab"\\{},:'


def accep(text: str) -> pynini.Fst:
    return pynini.accep(pynini.escape(text), token_type="byte")


def string_field() -> pynini.Fst:
    """A quoted string of a/b with backslash escapes: a cyclic interior left on the closing quote."""
    inner = pynini.union(accep("a"), accep("b"), accep("\\") + pynini.union(accep('"'), accep("\\")))
    return accep('"') + pynini.closure(inner) + accep('"')


def record(n: int) -> pynini.Fst:
    g = accep("{")
    for i in range(n):
        g = g + accep("," if i else "") + accep(f'"{"ab"[i % 2] * (i + 1)}":') + string_field()
    return g + accep("}")


def dfa_of(fst: pynini.Fst):
    return fst_to_dfa(pynini.minimize(pynini.determinize(pynini.rmepsilon(fst.optimize()))))


def vocab_of(tokens: list[str]) -> Vocab:
    pieces = sorted(set(ALPHABET)) + [t for t in tokens if len(t) > 1]
    return Vocab.from_dict({i: p.encode() for i, p in enumerate(pieces)}, eos_ids=[len(pieces)])


def assert_same(a, b, vocab) -> None:
    assert_same_language(build_tables(a, vocab, dense_min=3, sparse_max=4), build_tables(b, vocab, dense_min=3, sparse_max=4))


@pytest.fixture
def share_small_interiors(monkeypatch):
    """The tiny alphabet keeps few bytes inside a component: share every interior."""
    monkeypatch.setattr(shared_walks, "MIN_INSIDE_BYTES", 1)
    monkeypatch.setattr(walk_memo, "_SHARED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(walk_memo, "_ONCE", weakref.WeakKeyDictionary())


tokens_st = st.lists(st.text(alphabet=ALPHABET, min_size=2, max_size=5), max_size=25, unique=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=tokens_st, n=st.integers(1, 4))
def test_shared_walks_give_the_plain_lift(share_small_interiors, tokens, n):
    vocab = vocab_of(tokens)
    trie = token_trie(vocab)
    dfa = dfa_of(record(n))
    plain = lift(dfa, trie, vocab.width, share_walks=False)
    assert_same(lift(dfa, trie, vocab.width, share_walks=True), plain, vocab)
    assert_same(lift(dfa, trie, vocab.width, share_walks=True), plain, vocab)  # now from the memo


def test_the_memo_serves_another_automaton_of_the_same_shape(share_small_interiors):
    vocab = vocab_of(['ab"', '"}', 'a\\"', '":"', 'ba', '",', "abab", '\\\\'])
    trie = token_trie(vocab)
    first, other = dfa_of(record(2)), dfa_of(accep("{") + string_field() + accep("}"))
    lift(first, trie, vocab.width, share_walks=True)
    shapes = len(walk_memo._SHARED[trie])
    assert shapes > 0
    got = lift(other, trie, vocab.width, share_walks=True)
    assert len(walk_memo._SHARED[trie]) == shapes  # the string interior's shape was there
    assert_same(got, lift(other, trie, vocab.width, share_walks=False), vocab)
    assert got.final.any()


def test_an_unshared_shape_is_walked_once_and_stays_absolute(share_small_interiors):
    """A shape met once is not shared (its arcs stay absolute, the tables as without the memo),
    yet its walk is remembered: the second lift takes it from the memo and builds the same
    tables, byte for byte, and still does not share it."""
    vocab = vocab_of(['ab"', '"}', 'a\\"', '":"', 'ba', '",', "abab", '\\\\'])
    trie = token_trie(vocab)
    dfa = dfa_of(accep("{") + string_field() + accep("}"))
    first = lift(dfa, trie, vocab.width, share_walks=True)
    assert not walk_memo._SHARED.get(trie) and len(walk_memo._ONCE[trie]) > 0
    walked = {k: w.done.sum() for k, w in walk_memo._ONCE[trie].items()}
    again = lift(dfa, trie, vocab.width, share_walks=True)
    assert {k: w.done.sum() for k, w in walk_memo._ONCE[trie].items()} == walked  # nothing walked anew
    assert not walk_memo._SHARED.get(trie)
    a, b = build_tables(first, vocab).arrays(), build_tables(again, vocab).arrays()
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert not (first.state_block_offset > 0).any()  # nothing shared
    assert_same(again, lift(dfa, trie, vocab.width, share_walks=False), vocab)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 9), edges=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), max_size=30))
def test_components_are_mutual_reachability(n, edges):
    src = np.array([a % n for a, _ in edges], np.int64)
    dst = np.array([b % n for _, b in edges], np.int64)
    reach = np.eye(n, dtype=bool)
    reach[src, dst] = True
    for k in range(n):  # Floyd-Warshall closure
        reach |= reach[:, [k]] & reach[[k], :]
    comp = shared_walks.components(n, src, dst)
    assert np.array_equal(comp[:, None] == comp[None, :], reach & reach.T)


def test_a_bounded_memo_lets_walks_go_but_not_what_is_shared(share_small_interiors, monkeypatch):
    """Over `walk_memo.SHARED_BYTES` the least recently used shared shapes lose their walks, not
    their keys: later lifts share the same shapes and build byte-identical tables (walking again)."""
    vocab = vocab_of(['ab"', '"}', 'a\\"', '":"', 'ba', '",', "abab", '\\\\', 'aa"', '"a'])
    trie = token_trie(vocab)
    a_only = accep('"') + pynini.closure(accep("a")) + accep('"')
    two_shapes = accep("{") + string_field() + accep(",") + a_only + accep(",") + string_field() + accep(",") + a_only + accep("}")
    dfas = [dfa_of(two_shapes), dfa_of(accep("{") + string_field() + accep("}")), dfa_of(two_shapes)]
    ref = [build_tables(lift(d, trie, vocab.width, share_walks=True), vocab).arrays() for d in dfas]
    ref_keys = list(walk_memo._SHARED[trie])
    assert len(ref_keys) == 2
    monkeypatch.setattr(walk_memo, "_SHARED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(walk_memo, "_ONCE", weakref.WeakKeyDictionary())
    monkeypatch.setattr(walk_memo, "SHARED_BYTES", 0)
    got = [build_tables(lift(d, trie, vocab.width, share_walks=True), vocab).arrays() for d in dfas]
    assert list(walk_memo._SHARED[trie]) == ref_keys
    assert sum(w.nbytes == 0 for w in walk_memo._SHARED[trie].values()) == 1  # all but the last one used
    for a, b in zip(ref, got):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    assert any((np.asarray(t["state_block_offset"]) > 0).any() for t in got if "state_block_offset" in t)


def test_between_lifts_the_memos_keep_only_their_idle_budget(share_small_interiors, monkeypatch):
    """After each lift `walk_memo.settle` lets the oldest walks go down to `IDLE_BYTES` (what a
    long-lived process carries into its next compile): the shared keys stay, so later lifts share
    the same shapes and build byte-identical tables; the most recently used walks are the kept."""
    vocab = vocab_of(['ab"', '"}', 'a\\"', '":"', 'ba', '",', "abab", '\\\\', 'aa"', '"a'])
    trie = token_trie(vocab)
    a_only = accep('"') + pynini.closure(accep("a")) + accep('"')
    two_shapes = accep("{") + string_field() + accep(",") + a_only + accep(",") + string_field() + accep(",") + a_only + accep("}")
    dfas = [dfa_of(two_shapes), dfa_of(accep("{") + a_only + accep("}")), dfa_of(two_shapes)]
    ref = [build_tables(lift(d, trie, vocab.width, share_walks=True), vocab).arrays() for d in dfas]
    ref_keys = list(walk_memo._SHARED[trie])
    for idle in (0, 1 << 40):
        monkeypatch.setattr(walk_memo, "_SHARED", weakref.WeakKeyDictionary())
        monkeypatch.setattr(walk_memo, "_ONCE", weakref.WeakKeyDictionary())
        monkeypatch.setattr(walk_memo, "IDLE_BYTES", idle)
        got = []
        for d in dfas:
            got.append(build_tables(lift(d, trie, vocab.width, share_walks=True), vocab).arrays())
            held = [w for m in (walk_memo._SHARED[trie], walk_memo._ONCE.get(trie, {})) for w in m.values() if w.nbytes]
            assert walk_memo.held_bytes(trie) == sum(w.nbytes for w in held)
            for w in held:  # (each count, kept between changes, is what its arrays hold now)
                arrays = [w.e_node, w.e_state, w.x_node, w.x_state, *(w._tokens or ()), *(w._next or ())]
                assert w.nbytes == sum(a.nbytes for a in arrays)
            assert (held == []) == (idle == 0)
        assert list(walk_memo._SHARED[trie]) == ref_keys
        for a, b in zip(ref, got):
            assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_settle_lets_the_least_recently_used_walks_go_first(monkeypatch):
    trie = token_trie(vocab_of(["a", "b"]))
    monkeypatch.setattr(walk_memo, "_SHARED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(walk_memo, "_ONCE", weakref.WeakKeyDictionary())
    for key, shared in (("s1", True), ("o1", False), ("s2", True), ("o2", False), ("s1", True)):
        walk_memo.walks_for(trie, key, 1, shared).e_node = np.zeros(100, np.int32)  # 400 bytes each
    monkeypatch.setattr(walk_memo, "IDLE_BYTES", 800)
    walk_memo.settle(trie)
    kept = {k for m in (walk_memo._SHARED[trie], walk_memo._ONCE[trie]) for k, w in m.items() if w.nbytes}
    assert kept == {"s1", "o2"}  # the two used last
    assert set(walk_memo._SHARED[trie]) == {"s1", "s2"}  # a shared key stays, its walks gone
    assert walk_memo.held_bytes(trie) == 800


def test_shapes_from_the_layout_memo_are_the_numbered_ones(monkeypatch):
    """`shapes_of` takes a component's shape from the layout memo where a component laid out
    alike was numbered before (here: the other string fields of a record, then a second record
    met with a full memo); each is the shape `canonical_shape` numbers from scratch."""
    monkeypatch.setattr(shared_walks, "_LAYOUTS", {})
    numbered, met = [], 0
    numbering = shared_walks.canonical_shape
    monkeypatch.setattr(shared_walks, "canonical_shape", lambda *a: numbered.append(1) or numbering(*a))
    for fst in (record(4), accep("[") + record(3) + accep(",") + record(5) + accep("]")):
        dfa = dfa_of(fst)
        arcs = char_arcs(dfa)
        comp = shared_walks.regions(arcs.num_states, arcs.src, arcs.byte, arcs.dst)
        comps = sorted({int(c) for c in comp[np.flatnonzero(np.bincount(comp)[comp] > 1)]})
        assert len(comps) >= 4  # the string interiors
        order = np.argsort(comp, kind="stable")
        bounds = np.searchsorted(comp[order], np.arange(int(comp.max()) + 2))
        got = shared_walks.shapes_of(arcs, comp, order, bounds, comps)
        met += len(comps)
        for c in comps:
            members = order[bounds[c]:bounds[c + 1]]
            want = numbering(shared_walks.Rows(arcs, comp, members), members)
            assert got[c].key == want.key and np.array_equal(got[c].members, want.members)
            assert got[c].rows == want.rows
    assert 0 < len(numbered) == len(shared_walks._LAYOUTS) < met / 2  # most copies were taken from the memo


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 7), seed=st.integers(0, 2**32 - 1))
def test_a_shape_is_the_same_for_every_numbering_of_a_component(n, seed):
    # a random DFA (some arcs leaving to an outside state n) and a relabelled copy of it: both
    # numbered from their canonical roots give the same key, rows and arcs, and the members map
    # every inside arc of one onto the other's (the numbering is an isomorphism)
    rng = np.random.default_rng(seed)
    rows = {(int(q), int(b)): int(t) for q, b, t in zip(rng.integers(0, n, 40), rng.integers(32, 40, 40),
                                                        rng.integers(0, n + 1, 40))}
    perm = np.r_[rng.permutation(n), n]
    keys = []
    for p in (np.arange(n + 1), perm):
        arcs = sorted((int(p[q]), b, int(p[t])) for (q, b), t in rows.items())
        src, byte, dst = (np.array([a[i] for a in arcs], np.int64).reshape(-1) for i in range(3))

        class Arcs:
            pass
        a = Arcs()
        a.src, a.byte, a.dst = src, byte, dst
        a.ptr = np.searchsorted(src, np.arange(n + 2))
        comp = shared_walks.components(n + 1, src, dst)
        members = np.flatnonzero(comp == comp[int(p[0])])
        shape = shared_walks.canonical_shape(shared_walks.Rows(a, comp, members), members)
        assert sorted(shape.members.tolist()) == sorted(members.tolist())
        canon = {int(s): i for i, s in enumerate(shape.members.tolist())}
        inside = {(canon[q], b, canon[t]) for q, b, t in arcs if q in canon and t in canon}
        s_n, s_src, s_byte, s_dst = shape.arcs()
        assert {(q, b, t) for q, b, t in zip(s_src.tolist(), s_byte.tolist(), s_dst.tolist()) if t < s_n - 1} == inside
        exits = {(canon[q], b) for q, b, t in arcs if q in canon and t not in canon}
        assert {(q, b) for q, b, t in zip(s_src.tolist(), s_byte.tolist(), s_dst.tolist()) if t == s_n - 1} == exits
        keys.append((shape.key, shape.rows, len(members)))
    assert keys[0] == keys[1]


def test_a_layout_memo_cleared_between_components_still_numbers_each(monkeypatch):
    # a budget of one byte: the memo is cleared before each new layout is kept, so components
    # found in it at first are forgotten by the time they are numbered (read again from the DFA)
    monkeypatch.setattr(shared_walks, "_LAYOUTS", {})
    monkeypatch.setattr(shared_walks, "_layout_bytes", [0])
    monkeypatch.setattr(shared_walks, "SHAPE_LAYOUT_BYTES", 1)
    for fst in (record(4), accep("[") + record(3) + accep(",") + record(5) + accep("]"), record(4)):
        arcs = char_arcs(dfa_of(fst))
        comp = shared_walks.regions(arcs.num_states, arcs.src, arcs.byte, arcs.dst)
        comps = sorted({int(c) for c in comp[np.flatnonzero(np.bincount(comp)[comp] > 1)]})
        order = np.argsort(comp, kind="stable")
        bounds = np.searchsorted(comp[order], np.arange(int(comp.max()) + 2))
        got = shared_walks.shapes_of(arcs, comp, order, bounds, comps)
        assert list(got) == comps  # in the order asked: `share` numbers interiors in it
        for c in comps:
            members = order[bounds[c]:bounds[c + 1]]
            want = shared_walks.canonical_shape(shared_walks.Rows(arcs, comp, members), members)
            assert got[c].key == want.key and np.array_equal(got[c].members, want.members) and got[c].rows == want.rows


def test_the_lift_takes_the_exits_and_absolute_ends_once_and_lets_them_go(share_small_interiors, monkeypatch):
    """`Shared.take_starts` hands the search's starting pairs over once: the Shared object the lift
    still holds through its search keeps none of them (they were 90 MB of kb_145's peak), the
    exits `share` found are int32 columns, and the lift is still the plain lift's language."""
    from fstbeam.compiler.hard.lift import token_fsa

    vocab = vocab_of(['ab"', '"}', 'a\\"', '":"', 'ba', '",', "abab", '\\\\'])
    trie = token_trie(vocab)
    dfa = dfa_of(record(3))
    found: list[shared_walks.Shared] = []
    real_share = shared_walks.share

    def share(*args, **kwargs):
        found.append(real_share(*args, **kwargs))
        exits = found[-1].conts
        assert len(exits[0]) > 0 and all(c.dtype == np.int32 for c in exits)
        return found[-1]

    monkeypatch.setattr(token_fsa.shared_walks, "share", share)
    got = lift(dfa, trie, vocab.width, share_walks=True)
    (shared,) = found
    assert all(len(c) == 0 for c in (*shared.conts, *shared.absolute))
    assert all(len(c) == 0 for cols in shared.take_starts() for c in cols)
    assert_same(got, lift(dfa, trie, vocab.width, share_walks=False), vocab)
