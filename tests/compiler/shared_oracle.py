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


def _lockstep(a: HardTables, b: HardTables, successors, max_pairs: int) -> set:
    """BFS over pairs of states from the two starts: both states of a pair agree on finality
    and distance, and ``successors(qa, qb)`` checks the pair's rows and gives its next pairs."""
    seen = {(a.start, b.start)}
    todo = [(a.start, b.start)]
    while todo:
        qa, qb = todo.pop()
        assert bool(a.final[qa]) == bool(b.final[qb]), (qa, qb)
        assert int(a.dist_to_final[qa]) == int(b.dist_to_final[qb]), (qa, qb)
        for pair in set(successors(qa, qb)) - seen:
            seen.add(pair)
            todo.append(pair)
        assert len(seen) <= max_pairs
    return seen


def assert_same_language(a: HardTables, b: HardTables, *, max_pairs: int = 200_000) -> int:
    """Lockstep over pairs of states, one token lookup at a time; returns the pairs visited."""
    V = a.width

    def successors(qa: int, qb: int) -> list:
        ta, tb = a.allowed_text_tokens(qa), b.allowed_text_tokens(qb)
        assert np.array_equal(ta, tb), (qa, qb, ta, tb)
        assert np.array_equal(mask_tokens(a, qa), ta) and np.array_equal(mask_tokens(b, qb), tb)
        allowed = set(ta.tolist())
        out = []
        for t in range(V):
            na, nb = a.next_state(qa, t), b.next_state(qb, t)
            if t not in allowed:
                assert na < 0 and nb < 0, (qa, qb, t)
                continue
            assert na >= 0 and nb >= 0, (qa, qb, t)
            out.append((na, nb))
        return out

    return len(_lockstep(a, b, successors, max_pairs))


def transitions(h: HardTables, q: int) -> tuple[np.ndarray, np.ndarray]:
    """(allowed text tokens ascending, their next states) of ``q``, vectorised: each link's exit
    block (absolute), then its block's tokens not in the exit (next + the link's offset)."""
    V = h.width
    lo, hi = int(h.state_block_ptr[q]), int(h.state_block_ptr[q + 1])
    toks, nxt = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for i in range(lo, hi):
        b, e, off = int(h.state_block_id[i]), int(h.state_block_exit[i]), int(h.state_block_offset[i])
        bt = h.block_key[h.block_ptr[b]:h.block_ptr[b + 1]] % V
        bn = h.block_next[h.block_ptr[b]:h.block_ptr[b + 1]].astype(np.int64) + off
        if e >= 0:
            et = h.block_key[h.block_ptr[e]:h.block_ptr[e + 1]] % V
            keep = ~np.isin(bt, et)
            bt, bn = np.concatenate([bt[keep], et]), np.concatenate([bn[keep], h.block_next[h.block_ptr[e]:h.block_ptr[e + 1]]])
        toks.append(bt)
        nxt.append(bn)
    t, n = np.concatenate(toks), np.concatenate(nxt)
    o = np.argsort(t, kind="stable")
    return t[o], n[o]


def assert_same_language_fast(a: HardTables, b: HardTables) -> int:
    """`assert_same_language` for large vocabularies: whole transition rows per state pair (no
    per-token lookups); mask rows are compared with the allowed tokens too."""

    def successors(qa: int, qb: int):
        ta, na = transitions(a, qa)
        tb, nb = transitions(b, qb)
        assert np.array_equal(ta, tb), (qa, qb)
        assert np.array_equal(mask_tokens(b, qb), tb), qb
        return zip(na.tolist(), nb.tolist())

    seen = _lockstep(a, b, successors, max_pairs=10**9)
    assert len({p[0] for p in seen}) == len(seen) == len({p[1] for p in seen})  # a bijection
    return len(seen)


def lift_both(dfa, vocab):
    """(plain lift, lift with shared walks, their tables) of one character DFA: the pair every
    lockstep test compares."""
    from fstbeam.compiler.hard.lift.token_fsa import lift
    from fstbeam.compiler.hard.tables import build_tables
    from fstbeam.compiler.hard.token_trie import token_trie

    trie = token_trie(vocab)
    plain = lift(dfa, trie, vocab.width, share_walks=False)
    shared = lift(dfa, trie, vocab.width, share_walks=True)
    return plain, shared, [build_tables(f, vocab, dense_min=3, sparse_max=4) for f in (plain, shared)]


def fresh_walk_memos(monkeypatch) -> None:
    """Empty per-process walk memos for one test (a shape's sharing must not depend on test order)."""
    import weakref

    from fstbeam.compiler.hard.lift import walk_memo

    monkeypatch.setattr(walk_memo, "_SHARED", weakref.WeakKeyDictionary())
    monkeypatch.setattr(walk_memo, "_ONCE", weakref.WeakKeyDictionary())
