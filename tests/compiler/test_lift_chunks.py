"""The lift's memory-bounded pieces (issue 36) give what one pass over whole columns gives, at
any chunk size: partial groups' exits copied to their members (`group_exits.with_members`), the
distinct (block, next state) pairs (`assemble._distinct`), a search step's slices and the
frontier's pieces (`trie_step.STEP_SLICE_CANDIDATES`, `trie_step.FRONT_PIECE`), the distance
and reachability searches' steps (`assemble.SEARCH_SLICE`) and the shared interiors' exits
(`shared_walks.EXIT_SLICE`)."""
from __future__ import annotations

import numpy as np
import pynini
import pytest
from shared_oracle import fresh_walk_memos
from test_chain_blocks import SCHEMAS, vocab_of

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.array_ops import narrow
from fstbeam.compiler.hard.lift import assemble, chain_blocks, chain_levels, group_exits, shared_walks, token_fsa, trie_step
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.compiler.structured.regex import regex_fst

CHUNKS = [1, 3, 7, None]


def _members_whole(grp, cols, nb):
    """The one-pass form `with_members` replaced: the other entries, then `to_members` of the pseudo ones."""
    block, node, state = cols
    pseudo = block >= nb
    p = group_exits.to_members(grp, np.zeros(nb, np.int64), block[pseudo] - nb, node[pseudo], state[pseudo])
    keep = ~pseudo
    return [np.concatenate([c[keep], narrow(x)]) for c, x in zip(cols, p)]


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("seed", range(4))
def test_with_members_matches_the_whole_columns(chunk, seed):
    rng = np.random.default_rng(seed)
    nb, G = 40, 6
    grp = np.where(rng.random(nb) < 0.6, rng.integers(0, G, nb), -1)
    grp[:G] = np.arange(G)  # (every group has a member)
    n = int(rng.integers(0, 200))
    block = np.where(rng.random(n) < 0.3, nb + rng.integers(0, G, n), rng.integers(0, nb, n)).astype(np.int32)
    node = rng.integers(0, 1000, n).astype(np.int32)
    state = rng.integers(0, 5000, n).astype(np.int32)
    want = _members_whole(grp, [block, node, state], nb)
    cols = [block.copy(), node.copy(), state.copy()]
    got = group_exits.with_members(grp, cols, nb, chunk)
    assert cols == []  # (taken out of the list)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w)


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("seed", range(4))
def test_distinct_pairs_match_unique(chunk, seed):
    rng = np.random.default_rng(seed)
    S, n = int(rng.integers(1, 50)), int(rng.integers(0, 300))
    block = rng.integers(0, 30, n).astype(np.int32)
    nxt = rng.integers(0, S, n).astype(np.int32)
    key = np.unique(block.astype(np.int64) * S + nxt)
    b, q = assemble._distinct(block, nxt, S, chunk)
    assert np.array_equal(b, key // S) and np.array_equal(q, key % S)


SOURCES = [regex_fst("x[a-c]{1,30}y[a-z]{0,20}"), json_schema_fst(SCHEMAS[1], max_depth=2),
           json_schema_fst(SCHEMAS[3], max_depth=2)]


@pytest.mark.parametrize("source", range(len(SOURCES)))
def test_lift_in_tiny_pieces_is_the_same_automaton(source, monkeypatch):
    """Every chunk size of the lift's steps, members' copies and distinct pairs: the same fields."""
    monkeypatch.setattr(chain_blocks, "MIN_SHIFTED", 1)
    monkeypatch.setattr(chain_blocks, "MIN_DEGREE", 1)
    monkeypatch.setattr(chain_levels, "MIN_CHAIN_STATES", 1)
    vocab = vocab_of(True)
    trie = token_trie(vocab)
    dfa = fst_to_dfa(pynini.connect(SOURCES[source]))
    fresh_walk_memos(monkeypatch)
    want = token_fsa.lift(dfa, trie, vocab.width, share_walks=True)
    for chunk in (1, 3, 7):
        monkeypatch.setattr(trie_step, "STEP_SLICE_CANDIDATES", chunk)
        monkeypatch.setattr(trie_step, "FRONT_PIECE", chunk)
        monkeypatch.setattr(group_exits, "MEMBERS_CHUNK", chunk)
        monkeypatch.setattr(assemble, "DISTINCT_CHUNK", chunk)
        monkeypatch.setattr(assemble, "DEDUPE_ARCS_PER_STATE", 0)  # (the distinct pairs' path too)
        monkeypatch.setattr(assemble, "SEARCH_SLICE", chunk)  # (the searches' steps in slices of rows)
        monkeypatch.setattr(assemble, "SEARCH_IDS", chunk + 1)  # (and their frontiers in parts)
        monkeypatch.setattr(chain_blocks, "PAIR_CHUNK", chunk)  # (the inside pairs' blocks found a chunk at a time)
        monkeypatch.setattr(shared_walks, "EXIT_SLICE", chunk)  # (the interiors' exits stepped in runs)
        fresh_walk_memos(monkeypatch)
        got = token_fsa.lift(dfa, trie, vocab.width, share_walks=True)
        for f in want.__dataclass_fields__:
            assert np.array_equal(getattr(got, f), getattr(want, f)), (chunk, f)


@pytest.mark.parametrize("seed", range(5))
def test_offsets_in_chunks_match_the_whole_columns(seed):
    """`chain_blocks.offsets` a few pairs at a time: the same offsets and failing blocks as in one
    chunk, against a per-block check in Python (one non-negative offset over the used pairs,
    both states kept)."""
    rng = np.random.default_rng(seed)
    nb, S = 40, 40
    k = np.sort(rng.integers(0, nb, 300))  # (the inside pairs stand block by block: `pairs`)
    count = np.bincount(k, minlength=nb)
    shift = rng.integers(0, 3, nb)
    c = rng.integers(0, S - 2, 300)
    n = c + shift[k]
    # a renumbering that drops some states and moves a few: some blocks' offsets disagree
    new_id = np.where(rng.random(S) < 0.97, np.arange(S) + (rng.random(S) < 0.03), -1)
    used = rng.random(nb) < 0.8
    whole_off, whole_bad = chain_blocks.offsets(count, n, shift, new_id, used)
    off, bad = chain_blocks.offsets(count, n, shift, new_id, used, chunk=7)
    assert np.array_equal(bad, whole_bad)
    good = np.setdiff1d(np.flatnonzero(used), bad)
    assert np.array_equal(off[good], whole_off[good])
    assert 0 < len(bad) < used.sum() - 5  # (both kinds of block are met)
    for b in range(nb):
        pairs = [(new_id[x], new_id[y]) for kb, x, y in zip(k, c, n) if kb == b]
        if not used[b] or not pairs:
            continue
        diffs = {y - x for x, y in pairs}
        fine = len(diffs) == 1 and min(diffs) >= 0 and all(x >= 0 and y >= 0 for x, y in pairs)
        assert (b not in set(bad.tolist())) == fine, b
        if fine:
            assert off[b] == diffs.pop()
