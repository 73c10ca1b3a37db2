"""Shift-equivalent blocks (`chain_blocks`): the positions of a bounded repetition or a string
with ``maxLength`` share one walk, each block a shifted view of its group's representative plus
the group's exit block. The token language must be exactly the plain lift's.

Oracles: the plain lift (`share_walks=False`, checked against regular expressions in
test_lift_exact.py) walked in lockstep with the grouped one (`shared_oracle`); brute force over
byte strings for the classes themselves; the table checks of the loader.
"""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pynini
import pytest
from shared_oracle import assert_same_language, fresh_walk_memos, lift_both

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift import chain_blocks, chain_levels
from fstbeam.compiler.hard.lift.token_fsa import _Arcs, _chains, lift
from fstbeam.compiler.hard.tables import build_tables
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.compiler.structured.regex import regex_fst
from fstbeam.contract.table_checks import check_hard
from fstbeam.contract.vocab import Vocab

PIECES = [chr(c) for c in range(32, 127)] + [
    '"a', "ab", '",', "é", "\\n", '"}', 'a"', "b\\", "abc", "zzzz", 'ab"', "\\u00", "bb", "é\"", "aaaaa",
]
REGEXES = ["[a-z]{2,40}", "x[a-c]{1,30}y[a-z]{0,20}", "(ab|c){3,25}", "[a-z]{10,30}|[0-9]{5,25}"]
SCHEMAS = [
    {"type": "string", "maxLength": 40},
    {"type": "object", "properties": {"a": {"type": "string", "maxLength": 30},
                                      "b": {"type": "string", "minLength": 3, "maxLength": 25}},
     "required": ["a", "b"], "additionalProperties": False},
    {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{2,30}$"}, "maxItems": 2},
    # chains beside shared interiors (free strings, any JSON value)
    {"type": "object", "properties": {"a": {"type": "string", "maxLength": 30}, "b": {"type": "string"},
                                      "c": {"type": "string"}}, "required": ["a"]},
]

REAL_THRESHOLDS = (chain_blocks.MIN_SHIFTED, chain_blocks.MIN_DEGREE, chain_levels.MIN_CHAIN_STATES)


def vocab_of(byte_fallback: bool) -> Vocab:
    high = range(128, 256) if byte_fallback else range(0)
    raw = [p.encode() for p in PIECES] + [bytes([c]) for c in high]
    return Vocab.from_dict(dict(enumerate(raw)), eos_ids=[len(raw)], name=f"chains-{byte_fallback}")


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch):
    """Group blocks on tiny DFAs too; fresh walk memos."""
    monkeypatch.setattr(chain_blocks, "MIN_SHIFTED", 1)
    monkeypatch.setattr(chain_blocks, "MIN_DEGREE", 1)
    monkeypatch.setattr(chain_levels, "MIN_CHAIN_STATES", 1)
    fresh_walk_memos(monkeypatch)


def check_both(dfa, vocab):
    plain, grouped, (tp, tg) = lift_both(dfa, vocab)
    check_hard(tg, vocab.width, vocab.eos_ids, "grouped")
    assert_same_language(tp, tg, max_pairs=50_000)
    return plain, grouped


@pytest.mark.parametrize("byte_fallback", [True, False])
@pytest.mark.parametrize("rx", REGEXES)
def test_bounded_repetitions_lift_to_the_plain_language(rx, byte_fallback):
    plain, grouped = check_both(fst_to_dfa(pynini.connect(regex_fst(rx))), vocab_of(byte_fallback))
    assert grouped.state_block_offset.any()  # groups were linked with offsets
    assert len(grouped.block_tokens) < len(plain.block_tokens)


@pytest.mark.parametrize("byte_fallback", [True, False])
@pytest.mark.parametrize("schema", SCHEMAS, ids=["maxLength", "two-fields", "pattern-items", "with-interiors"])
def test_bounded_strings_lift_to_the_plain_language(schema, byte_fallback):
    dfa = fst_to_dfa(pynini.connect(json_schema_fst(schema, max_depth=2)))
    plain, grouped = check_both(dfa, vocab_of(byte_fallback))
    assert len(grouped.block_tokens) < len(plain.block_tokens)


def test_without_chains_the_tables_are_unchanged(monkeypatch):
    """Where nothing is grouped the DFA is not renumbered: the same tables as before."""
    monkeypatch.setattr(chain_blocks, "MIN_SHIFTED", 10**9)
    vocab = vocab_of(True)
    trie = token_trie(vocab)
    dfa = fst_to_dfa(pynini.connect(regex_fst("[a-z]{2,40}")))
    a = lift(dfa, trie, vocab.width, share_walks=True)
    b = lift(dfa, trie, vocab.width, share_walks=False)
    for f in ("final", "state_block_ptr", "state_block_id", "block_ptr", "block_tokens", "block_next", "char_state"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f


@pytest.mark.parametrize("rx", REGEXES[:3] + ['"[a-zé]{0,12}"'])
def test_classes_are_shift_equivalent_by_brute_force(rx):
    """Two states of one class read every byte string of up to ``rounds`` bytes alike: shifted
    by their difference until the first absolute arc, the same state after it."""
    vocab = vocab_of(True)
    rounds = 4
    dfa = _Arcs.of(fst_to_dfa(pynini.connect(regex_fst(rx))))
    found = _chains(dfa, token_trie(vocab))
    assert found is not None
    arcs, _, levels, is_abs = found
    table = {(q, b): (t, a) for q, b, t, a in zip(arcs.src.tolist(), arcs.byte.tolist(), arcs.dst.tolist(), is_abs.tolist())}
    alphabet = sorted(set(arcs.byte.tolist()))

    def walk(q, w):
        absolute = False
        for b in w:
            if (q, b) not in table:
                return None
            q, a = table[q, b]
            absolute |= a
        return q, absolute

    words = [w for n in range(1, rounds + 1) for w in itertools.product(alphabet[:6] + alphabet[-2:], repeat=n)]
    assert levels[0][0] == chain_blocks.FULL
    for limit, cls in levels:  # (a partial level's classes: strings of up to limit + 1 bytes)
        _check_classes(rx, cls, walk, [w for w in words if len(w) <= limit + 1])


def _check_classes(rx, cls, walk, words):
    for c in np.unique(cls):
        members = np.flatnonzero(cls == c).tolist()
        r0 = members[0]
        for r in members[1:]:
            for w in words:
                x, y = walk(r0, w), walk(r, w)
                assert (x is None) == (y is None), (rx, r0, r, w)
                if x is not None:
                    assert x[1] == y[1] and y[0] == x[0] + (0 if x[1] else r - r0), (rx, r0, r, w)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("source", ["[a-z ]{1,120}", {"type": "string", "maxLength": 70},
                                    {"type": "string", "maxLength": 30}])
def test_gemma_chains_lift_to_the_plain_language(source, monkeypatch):
    """On the Gemma 3 tokenizer (262,144 ids, tokens up to 48 bytes), with the real thresholds."""
    from shared_oracle import assert_same_language_fast

    import fstbeam

    monkeypatch.setattr(chain_blocks, "MIN_SHIFTED", REAL_THRESHOLDS[0])
    monkeypatch.setattr(chain_blocks, "MIN_DEGREE", REAL_THRESHOLDS[1])
    monkeypatch.setattr(chain_levels, "MIN_CHAIN_STATES", REAL_THRESHOLDS[2])
    vocab = fstbeam.compile_constraints(words=["warm"], tokenizer="default").vocab
    trie = token_trie(vocab)
    fst = regex_fst(source) if isinstance(source, str) else json_schema_fst(source)
    dfa = fst_to_dfa(pynini.connect(fst))
    plain = lift(dfa, trie, vocab.width, share_walks=False)
    grouped = lift(dfa, trie, vocab.width, share_walks=True)
    # (maxLength 30: every position has fewer than 48 bytes left: partial groups only)
    assert len(grouped.block_tokens) < 0.5 * len(plain.block_tokens)
    tg = build_tables(grouped, vocab)
    check_hard(tg, vocab.width, vocab.eos_ids, "grouped")
    assert_same_language_fast(build_tables(plain, vocab), tg)


def test_hash_collisions_fall_back_to_exact_rows(monkeypatch):
    """With every arc list hashed alike the comparison with each class's first state fails and
    the padded rows are sorted instead: the same partition."""
    dfa = _Arcs.of(fst_to_dfa(pynini.connect(json_schema_fst(SCHEMAS[1], max_depth=2))))
    src, byte, dst = dfa.src, dfa.byte, dfa.dst
    is_abs = chain_blocks.absolute_arcs(dfa.num_states, src, dst)
    degree = np.diff(dfa.ptr)
    hashed = chain_blocks.shift_classes(dfa.num_states, src, byte, dst, is_abs, 6, degree)
    monkeypatch.setattr(chain_blocks, "_MIX", np.uint64(0))
    rows = chain_blocks.shift_classes(dfa.num_states, src, byte, dst, is_abs, 6, degree)
    assert hashed is not None and rows is not None
    pairs = set(zip(hashed.tolist(), rows.tolist()))
    assert len(pairs) == len(set(hashed.tolist())) == len(set(rows.tolist()))  # one partition


@pytest.mark.parametrize("seed", range(4))
def test_exact_classes_by_slices_match_brute_force(monkeypatch, seed):
    """Hashed and compared a few arcs at a time (slices that end between states, states with no
    arcs included), the classes are the whole-column ones, the same numbers, and the partition
    of equal (per-state value, arc list) rows found by brute force; so is the collision
    fallback's."""
    rng = np.random.default_rng(seed)
    S = 300
    n = rng.integers(0, 4, S) * (rng.random(S) < 0.9)  # (a tenth of the states with no arcs)
    src = np.repeat(np.arange(S), n)
    ptr = np.r_[0, np.cumsum(n)]
    byte, code = rng.integers(0, 3, len(src)).astype(np.uint8), rng.integers(-2, 2, len(src)).astype(np.int32)
    rows = [(int(n[q]), tuple(zip(byte[ptr[q]:ptr[q + 1]].tolist(), code[ptr[q]:ptr[q + 1]].tolist()))) for q in range(S)]
    want = {q: rows.index(rows[q]) for q in range(S)}  # (the class of a state: its row's first state)
    whole = chain_blocks.exact_classes(ptr, src, [n], [byte, code])
    for hash_arcs, mix in [(7, chain_blocks._MIX), (1, chain_blocks._MIX), (7, np.uint64(0))]:
        monkeypatch.setattr(chain_blocks, "HASH_ARCS", hash_arcs)
        monkeypatch.setattr(chain_blocks, "_MIX", mix)  # (0: every row hashed alike, the fallback)
        got = chain_blocks.exact_classes(ptr, src, [n], [byte, code])
        if mix:
            np.testing.assert_array_equal(got, whole)
        assert len(set(zip(got.tolist(), want.values()))) == len(set(want.values())) == len(set(got.tolist()))
    assert len(set(whole.tolist())) < S // 2  # (the classes join many states: a real test of the comparison)


# Tokens longer than the chains below: positions with fewer bytes left than the longest token
# share a walk only in partial groups (a step limit: the shorter tokens shared, the longer ones
# each block's own).
LONG_PIECES = PIECES + ["abcdefgh", "aaaaaaaaaaaa", "abcdefghijklmno", 'abcdef"', 'abcdefghij",', "ab\\nabcdefg",
                        "zzzzzzzzzzzzzzzzzzzz", "éééééé", "0123456789"]


def long_vocab() -> Vocab:
    raw = [p.encode() for p in LONG_PIECES] + [bytes([c]) for c in range(128, 256)]
    return Vocab.from_dict(dict(enumerate(raw)), eos_ids=[len(raw)], name="chains-long")


@pytest.mark.parametrize("source", [
    "[a-z]{1,12}", "x[a-c0-9]{2,9}y[a-z]{0,6}", "[a-z]{3,19}|[0-9]{4,16}",
    {"type": "string", "maxLength": 10},
    {"type": "object", "properties": {"a": {"type": "string", "maxLength": 7},
                                      "b": {"type": "string", "minLength": 2, "maxLength": 14}},
     "required": ["a", "b"], "additionalProperties": False},
    {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9]{1,13}$"}, "maxItems": 2},
], ids=str)
def test_partial_groups_lift_to_the_plain_language(source, monkeypatch):
    vocab = long_vocab()
    trie = token_trie(vocab)
    levels = chain_levels.walk_levels(trie)
    assert levels and max(levels) < chain_levels.max_token_bytes(trie) == 20
    fst = regex_fst(source) if isinstance(source, str) else json_schema_fst(source, max_depth=2)
    dfa = fst_to_dfa(pynini.connect(fst))
    seen = []
    groups = chain_blocks.groups
    monkeypatch.setattr(chain_blocks, "groups", lambda *a: seen.append(groups(*a)) or seen[-1])
    plain, grouped = check_both(dfa, vocab)
    assert (seen[0][3] < chain_blocks.FULL).any()  # partial groups were formed
    assert grouped.state_block_offset.any()
    assert len(grouped.block_tokens) < len(plain.block_tokens)


def test_walk_levels_minimise_the_modelled_cost():
    """The dynamic program against every subset of levels, on a small trie."""
    trie = token_trie(long_vocab())
    c = np.cumsum(chain_levels.token_lengths(trie))
    K = len(c) - 1
    assert int(c[-1]) == len(set(LONG_PIECES)) + 128

    def cost(levels):
        total = sum(int(c[j]) for j in levels)
        for m in range(1, K):
            below = [j for j in levels if j <= m]
            total += int(c[m] - c[below[-1]]) if below else int(c[m])
        return total

    best = min(cost(sub) for n in range(5) for sub in itertools.combinations(range(chain_levels.MIN_LEVEL, K), n))
    assert cost(chain_levels.walk_levels(trie)) <= best


# npm's package name (o77304): a pattern's characters may be written as \u00XX escapes, so each
# position is entered from the position before it and from the last digit state of each escape
# (8 of them), yet it is no exit.
ESCAPED_CHAIN = {"type": "string", "pattern": "^(?:@[a-z0-9-~][a-z0-9-._~]*/)?[a-z0-9-~][a-z0-9-._~]*$",
                 "maxLength": 40}


def test_absolute_arcs_by_brute_force():
    """An arc is absolute iff its target is entered from `ABS_SOURCES` states or more, two of
    which read the same set of bytes (a chain's exit), checked state by state in Python."""
    for fst in (json_schema_fst(ESCAPED_CHAIN), json_schema_fst(SCHEMAS[3], max_depth=2), regex_fst(REGEXES[3])):
        dfa = _Arcs.of(fst_to_dfa(pynini.connect(fst)))
        src, byte, dst = dfa.src.tolist(), dfa.byte.tolist(), dfa.dst.tolist()
        reads: dict[int, set[int]] = {}
        for q, b in zip(src, byte):
            reads.setdefault(q, set()).add(b)
        sources: dict[int, set[int]] = {}
        for q, t in zip(src, dst):
            sources.setdefault(t, set()).add(q)

        def exit_like(t):
            kinds = {frozenset(reads[q]) for q in sources[t]}
            return len(sources[t]) >= chain_blocks.ABS_SOURCES and len(kinds) < len(sources[t])

        got = chain_blocks.absolute_arcs(dfa.num_states, dfa.src, dfa.dst, dfa.byte)
        assert got.tolist() == [exit_like(t) for t in dst]
        # without the bytes: by the number of sources alone
        plain = chain_blocks.absolute_arcs(dfa.num_states, dfa.src, dfa.dst)
        assert plain.tolist() == [len(sources[t]) >= chain_blocks.ABS_SOURCES for t in dst]


def test_escaped_chain_positions_are_shared(monkeypatch):
    """The positions of ESCAPED_CHAIN are shared with their escapes' arcs into the next position
    relative (byte-aware `absolute_arcs`) and with them absolute (by the number of sources alone:
    exit-blind classes, each member's escapes walked on as its exits): the plain lift's language
    both ways, in fewer token arcs than the plain lift."""
    dfa = fst_to_dfa(pynini.connect(json_schema_fst(ESCAPED_CHAIN)))
    vocab = long_vocab()
    plain, grouped = check_both(dfa, vocab)
    assert len(grouped.block_tokens) < len(plain.block_tokens)
    by_count = chain_blocks.absolute_arcs
    monkeypatch.setattr(chain_blocks, "absolute_arcs", lambda n, s, d, b=None: by_count(n, s, d))
    fresh_walk_memos(monkeypatch)
    plain, by_sources = check_both(dfa, vocab)
    assert len(by_sources.block_tokens) < 0.5 * len(plain.block_tokens)


# Copies of one counted string in several fields: exit-blind groups span the copies, each
# member's exits walked on from its own chain's end.
COPIES = {"type": "object", "properties": {k: {"type": "string", "maxLength": n} for k, n in
                                           (("a", 14), ("b", 9), ("c", 14), ("d", 30))},
          "required": ["a", "b", "c", "d"], "additionalProperties": False}


@pytest.mark.parametrize("twins", ["none", "lowest", "highest"])
def test_copies_of_a_chain_share_their_groups(twins, monkeypatch):
    """Every way of sharing copies (levels over every copy; below a level, each position with
    its twins) lifts to the plain language, and groups hold blocks of different copies
    (members whose exits go to different states)."""
    from fstbeam.compiler.hard.lift import group_exits

    pick = {"none": lambda levels: 0, "lowest": min, "highest": max}[twins]
    monkeypatch.setattr(chain_levels, "twins_below", lambda trie, copies, levels: pick(levels) if levels else 0)
    seen = []
    member_exits = group_exits.member_exits
    monkeypatch.setattr(group_exits, "member_exits", lambda *a: seen.append(member_exits(*a)) or seen[-1])
    dfa = fst_to_dfa(pynini.connect(json_schema_fst(COPIES, max_depth=2)))
    plain, grouped = check_both(dfa, long_vocab())
    assert len(grouped.block_tokens) < 0.5 * len(plain.block_tokens)
    (_, exit_of, ident) = seen[0]
    holders = np.unique(exit_of[exit_of != np.arange(len(exit_of))])
    assert len(holders) >= 2 or len(np.unique(ident[ident >= 0])) >= 2


def test_copy_labels_by_brute_force():
    """A state's label is the lowest absolute target it reaches through relative arcs."""
    dfa = _Arcs.of(fst_to_dfa(pynini.connect(json_schema_fst(COPIES, max_depth=2))))
    is_abs = chain_blocks.absolute_arcs(dfa.num_states, dfa.src, dfa.dst, dfa.byte)
    got = chain_levels.copy_labels(dfa.num_states, dfa.src, dfa.dst, is_abs, 10**6)
    succ: dict[int, list[tuple[int, bool]]] = {}
    for q, t, a in zip(dfa.src.tolist(), dfa.dst.tolist(), is_abs.tolist()):
        succ.setdefault(q, []).append((t, a))
    for q in range(dfa.num_states):
        seen, todo, best = {q}, [q], dfa.num_states
        while todo:
            v = todo.pop()
            for t, a in succ.get(v, []):
                if a:
                    best = min(best, t)
                elif t not in seen:
                    seen.add(t)
                    todo.append(t)
        assert got[q] == best, q


@pytest.mark.parametrize("copies", [2, 5, 40])
def test_twins_below_minimises_the_modelled_cost(copies):
    """The level below which positions group with their twins, against the cost of every
    candidate counted token by token (a position of m characters fits a token of up to m)."""
    vocab = long_vocab()
    trie = token_trie(vocab)
    K = chain_levels.max_token_bytes(trie)
    levels = chain_levels.walk_levels(trie, copies)
    tokens = [(len(b), sum(1 for x in b if x & 0xC0 != 0x80)) for b in vocab.token_bytes if b]

    def cost(below):
        total = sum(1 for j in levels if j >= below for n, _ in tokens if n <= j)
        for m in range(1, K):
            if m < below:
                total += sum(1 if n <= below else copies for n, c in tokens if c <= m)
                continue
            under = [j for j in levels if j <= m]
            limit = under[-1] if under else 0
            total += copies * sum(1 for n, c in tokens if c <= m and n > limit)
        return total

    best = min(cost(b) for b in [0, *levels])
    assert cost(chain_levels.twins_below(trie, copies, levels)) == best


def test_copies_counts_the_fields_of_one_counted_string():
    """An object of n strings with the same bound: n copies of one chain."""
    for n in (1, 3):
        schema = {"type": "object", "properties": {f"f{i}": {"type": "string", "maxLength": 12} for i in range(n)},
                  "required": [f"f{i}" for i in range(n)], "additionalProperties": False}
        found = _chains(_Arcs.of(fst_to_dfa(pynini.connect(json_schema_fst(schema, max_depth=2)))), token_trie(long_vocab()))
        assert found is not None
        arcs, _, _, is_abs = found
        first = chain_blocks.level_classes(arcs.num_states, arcs.src, arcs.byte, arcs.dst, is_abs, 0,
                                           np.diff(arcs.ptr), [0])[-1][1]
        labels = chain_levels.copy_labels(arcs.num_states, arcs.src, arcs.dst, is_abs, chain_levels.COPY_ROUNDS)
        acyclic = chain_levels.acyclic_states(arcs.num_states, arcs.src, arcs.dst, is_abs)
        assert chain_levels.copies(first, labels, np.diff(arcs.ptr), acyclic) == n


def test_tokens_by_bytes_and_characters():
    """The trie's count per (bytes, characters) against each token's own."""
    vocab = long_vocab()
    table = chain_levels._by_bytes_and_chars(token_trie(vocab))
    want = np.zeros_like(table)
    for b in {b for b in vocab.token_bytes if b}:
        want[len(b), sum(1 for x in b if x & 0xC0 != 0x80)] += 1
    assert np.array_equal(table, want)


def test_inside_pairs_in_slices_lift_the_same_automaton(monkeypatch):
    """`chain_blocks.pairs` fills the grouped blocks' inside pairs a slice of blocks at a time:
    slices of a few pairs give the same token automaton, array by array, as one slice."""
    dfa = fst_to_dfa(pynini.connect(json_schema_fst(SCHEMAS[1], max_depth=2)))
    vocab = vocab_of(True)
    _, whole, _ = lift_both(dfa, vocab)
    fresh_walk_memos(monkeypatch)
    monkeypatch.setattr(chain_blocks, "PAIR_SLICE", 3)
    sliced_calls = []
    real = chain_blocks.ranges
    monkeypatch.setattr(chain_blocks, "ranges", lambda *a: sliced_calls.append(1) or real(*a))
    _, sliced, _ = lift_both(dfa, vocab)
    assert len(sliced_calls) > 3  # (several slices, and the exits' own call)
    for f in dataclasses.fields(whole):
        a, b = getattr(whole, f.name), getattr(sliced, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, f.name


@pytest.mark.parametrize("seed", range(4))
def test_member_identities_number_as_exact_classes_does(seed):
    """`group_exits._identities` classes only the members with crossings (a group without any is
    one identity): the same numbering as `exact_classes` over every member, which the exit
    blocks' and the partial identities' order follows."""
    from fstbeam.compiler.hard.lift.group_exits import _identities

    rng = np.random.default_rng(seed)
    for _ in range(100):
        groups = int(rng.integers(1, 8))
        crossings = rng.integers(0, 4, groups)
        crossings[rng.random(groups) < 0.4] = 0  # (groups without crossings: most of a large schema's)
        gk = rng.integers(0, groups, int(rng.integers(0, 30)))
        if seed % 2:
            gk = np.sort(gk)  # (as `member_exits` hands them: by group)
        n = crossings[gk]
        target = rng.integers(0, 3, int(n.sum()))
        owner = np.repeat(np.arange(len(gk)), n)
        want = chain_blocks.exact_classes(np.r_[0, np.cumsum(n)], owner, [gk, n], [target])
        assert np.array_equal(_identities(gk, n, target), want)
