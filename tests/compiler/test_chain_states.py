"""Whether a DFA has chains at all (`chain_levels.chain_states`): the lift numbers chains
(`token_fsa._chains`) only where counted strings or bounded repetitions are, not for the free
values of open objects (unbounded strings, numbers, keys), where the classes cost more than
they share.

Oracles: the definition followed state by state in Python on random DFAs; real constraints
whose chains are known (a ``maxLength`` string, a bounded repetition of ASCII or Cyrillic
letters) or known to be absent (any JSON object, a free string).
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pynini
import pytest

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.hard.lift import chain_blocks, chain_levels
from fstbeam.compiler.hard.lift.token_fsa import _Arcs, _chains
from fstbeam.compiler.hard.token_trie import token_trie
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.compiler.structured.regex import regex_fst
from fstbeam.contract.vocab import Vocab


def by_definition(num_states: int, arcs: list[tuple[int, int, int]]) -> int:
    """Each state: its main next state is the one most of its arcs lead to (ties: the lowest);
    follow main next states `CHAIN_STEPS` times, stopping at a state that leads to itself, and
    count the states with `MIN_DEGREE` arcs or more met on the way (itself included)."""
    out: dict[int, Counter[int]] = {}
    for s, _, d in arcs:
        out.setdefault(s, Counter())[d] += 1
    main = {s: min(c, key=lambda d: (-c[d], d)) for s, c in out.items()}
    wide = {s: sum(c.values()) >= chain_blocks.MIN_DEGREE for s, c in out.items()}
    found = 0
    for s in range(num_states):
        at, met = s, 0
        for _ in range(chain_levels.CHAIN_STEPS):
            met += wide.get(at, False)
            nxt = main.get(at, at)
            if nxt == at:
                break
            at = nxt
        found += met >= chain_levels.CHAIN_WIDE
    return found


def count(num_states: int, arcs: list[tuple[int, int, int]]) -> int:
    arcs = sorted(arcs)
    src = np.array([a[0] for a in arcs], np.int64)
    dst = np.array([a[2] for a in arcs], np.int64)
    ptr = np.searchsorted(src, np.arange(num_states + 1))
    return chain_levels.chain_states(num_states, ptr, src, dst)


@pytest.mark.parametrize("seed", range(6))
def test_chain_states_follow_the_definition(seed):
    """Random DFAs with chains of wide states, loops, ties and narrow side states."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        S = int(rng.integers(1, 60))
        arcs = {}
        for s in range(S):
            kind = rng.random()
            if kind < 0.4:  # a chain position: most bytes to the next state, a few elsewhere
                nxt = min(s + 1, S - 1)
                for b in range(int(rng.integers(10, 30))):
                    arcs[(s, b)] = nxt
                for b in range(30, 30 + int(rng.integers(0, 12))):
                    arcs[(s, b)] = int(rng.integers(0, S))
            elif kind < 0.6:  # a loop (a free string's interior)
                for b in range(int(rng.integers(10, 40))):
                    arcs[(s, b)] = s if b % 7 else int(rng.integers(0, S))
            else:  # a few arcs anywhere, ties likely
                for b in range(int(rng.integers(0, 4))):
                    arcs[(s, b)] = int(rng.integers(0, S))
        arcs_list = [(s, b, d) for (s, b), d in arcs.items()]
        assert count(S, arcs_list) == by_definition(S, arcs_list)


def dfa_of(source) -> _Arcs:
    fst = regex_fst(source) if isinstance(source, str) else json_schema_fst(source, max_depth=3)
    return _Arcs.of(fst_to_dfa(pynini.connect(fst)))


@pytest.mark.parametrize("source", [
    {"type": "string", "maxLength": 20}, "[a-z]{1,64}", "[\u0400-\u04ff]{1,40}",
    {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}},
], ids=str)
def test_counted_strings_are_chains(source):
    dfa = dfa_of(source)
    assert chain_levels.chain_states(dfa.num_states, dfa.ptr, dfa.src, dfa.dst) >= chain_levels.MIN_CHAIN_STATES


@pytest.mark.parametrize("source", [
    {"type": "object"}, {"type": "string"}, {"type": "array", "items": {"type": "number"}},
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]},
], ids=str)
def test_free_values_have_no_chains(source):
    """Unbounded strings loop on themselves; a UTF-8 character's continuations meet at most four
    wide states before that loop."""
    dfa = dfa_of(source)
    assert chain_levels.chain_states(dfa.num_states, dfa.ptr, dfa.src, dfa.dst) == 0


def test_the_lift_numbers_chains_only_where_there_are_some():
    """`_chains` on a DFA with free values alone gives None before numbering anything; on a long
    counted string it numbers the chain (the real thresholds)."""
    raw = [chr(c).encode() for c in range(32, 127)] + [b"ab", b"abcd", b'"}', b"zzzzzzzz"]
    vocab = Vocab.from_dict(dict(enumerate(raw)), eos_ids=[len(raw)], name="chain-states")
    trie = token_trie(vocab)
    assert _chains(dfa_of({"type": "object"}), trie) is None
    assert _chains(dfa_of({"type": "string", "maxLength": 120}), trie) is not None
