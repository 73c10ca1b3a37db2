"""`char_dfa.fst_bytes_to_dfa` reads OpenFst's binary VectorFst with numpy (its state records found by
pointer doubling, checked against a record-by-record loop): the same DFA as
`fst_to_dfa` (which walks pynini's arcs one by one: the oracle), the same errors, and None where
the bytes are not a plain tropical VectorFst."""
from __future__ import annotations

import numpy as np
import pynini
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstbeam.compiler.char_dfa import fst_bytes_to_arcs, fst_bytes_to_dfa, fst_to_dfa, state_records, vector_header
from fstbeam.errors import SpecError


def same(a, b) -> bool:
    return np.array_equal(a.next, b.next) and np.array_equal(a.final, b.final) and a.start == b.start


def same_arcs(arcs, dfa) -> bool:
    """`fst_bytes_to_arcs` against the table's arcs in ``np.nonzero`` order (what the lift reads)."""
    q, b = np.nonzero(dfa.next >= 0)
    return (arcs.num_states == dfa.num_states and arcs.start == dfa.start and np.array_equal(arcs.final, dfa.final)
            and np.array_equal(arcs.src, q) and np.array_equal(arcs.byte, b) and np.array_equal(arcs.dst, dfa.next[q, b]))


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.binary(min_size=0, max_size=6).filter(lambda b: 0 not in b), max_size=12),
       loop=st.booleans())
def test_the_bytes_give_the_same_dfa(words, loop):
    fst = pynini.union(*(pynini.accep(pynini.escape(w.decode("latin-1")), token_type="byte") for w in words)) if words else pynini.Fst()
    if loop and words:
        fst = pynini.closure(fst)
    fst = pynini.connect(fst.optimize())
    got = fst_bytes_to_dfa(fst.write_to_string())
    assert got is not None and same(got, fst_to_dfa(fst))
    assert same_arcs(fst_bytes_to_arcs(fst.write_to_string()), fst_to_dfa(fst))


def test_a_json_schema_automaton():
    from fstbeam.compiler.structured.json_schema.schema import json_schema_fst

    fst = pynini.connect(json_schema_fst({"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}}))
    got = fst_bytes_to_dfa(fst.write_to_string())
    assert got is not None and same(got, fst_to_dfa(fst))


def _two_arcs(label_a: int, label_b: int) -> pynini.Fst:
    f = pynini.Fst()
    f.add_states(3)
    f.set_start(0)
    f.set_final(1)
    f.set_final(2)
    one = pynini.Weight.one(f.weight_type())
    f.add_arc(0, pynini.Arc(label_a, label_a, one, 1))
    f.add_arc(0, pynini.Arc(label_b, label_b, one, 2))
    return f


@pytest.mark.parametrize("a, b, message", [(97, 97, "not deterministic"), (97, 300, "label 300"), (0, 97, "label 0")])
def test_the_same_errors(a, b, message):
    f = _two_arcs(a, b)
    with pytest.raises(SpecError, match=message):
        fst_to_dfa(f)
    with pytest.raises(SpecError, match=message):
        fst_bytes_to_dfa(f.write_to_string())
    with pytest.raises(SpecError, match=message):
        fst_bytes_to_arcs(f.write_to_string())


def test_arcs_stored_out_of_byte_order_come_sorted():
    f = _two_arcs(120, 97)  # (state 0's arcs stored 'x' then 'a')
    arcs = fst_bytes_to_arcs(f.write_to_string())
    assert arcs is not None and same_arcs(arcs, fst_to_dfa(f)) and arcs.byte.tolist() == [97, 120]


def test_other_forms_are_left_to_fst_to_dfa():
    f = pynini.accep("ab", token_type="byte")
    syms = pynini.SymbolTable()
    syms.add_symbol("<eps>")
    f.set_input_symbols(syms)
    assert fst_bytes_to_dfa(f.write_to_string()) is None  # symbol tables in the header
    assert fst_bytes_to_dfa(b"not an fst") is None
    log = pynini.arcmap(pynini.accep("ab", token_type="byte"), map_type="to_log")
    assert fst_bytes_to_dfa(log.write_to_string()) is None  # another arc type


def _records_by_loop(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The state records' word offsets and arc counts, one record after the other (the oracle of
    the pointer doubling in `char_dfa.state_records`)."""
    start, n, at = vector_header(data)
    words = np.frombuffer(data, "<i4", offset=at)
    heads, counts, pos = [], [], 0
    for _ in range(n):
        heads.append(pos)
        c = int(words[pos + 1].view("<u4")) | (int(words[pos + 2]) << 32)
        counts.append(c)
        pos += 3 + 4 * c
    assert pos == len(words)
    return np.array(heads, np.int64), np.array(counts, np.int64)


def _random_dfa(rng: np.random.Generator, n: int) -> pynini.Fst:
    """A random DFA over byte labels, shaped to trip a reader that guesses record starts:
    states without arcs, arcs back to state 0, labels equal to arc counts, final weights 0 and
    other values (a tropical weight is any float)."""
    f = pynini.Fst()
    f.add_states(n)
    f.set_start(int(rng.integers(n)))
    one = pynini.Weight.one(f.weight_type())
    for q in range(n):
        r = rng.random()
        if r < 0.3:
            f.set_final(q)
        elif r < 0.4:
            f.set_final(q, pynini.Weight(f.weight_type(), float(rng.integers(1, 5))))
        k = int(rng.choice([0, 0, 1, 2, 3, 5, 40])) if n > 1 else 2
        for label in rng.choice(np.arange(1, 256), size=k, replace=False):
            dst = 0 if rng.random() < 0.2 else int(rng.integers(n))
            w = one if rng.random() < 0.8 else pynini.Weight(f.weight_type(), 0.5)
            f.add_arc(q, pynini.Arc(int(label), int(label), w, dst))
    return f


@pytest.mark.parametrize("seed", range(6))
def test_random_automata_records_and_dfa(seed):
    rng = np.random.default_rng(seed)
    for n in [1, 2, 3, 7, 30, 257, 2000]:
        f = _random_dfa(rng, n)
        data = f.write_to_string()
        start, n_states, at = vector_header(data)
        got = state_records(np.frombuffer(data, "<i4", offset=at), n_states)
        assert got is not None
        want = _records_by_loop(data)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        dfa = fst_bytes_to_dfa(data)
        assert dfa is not None and same(dfa, fst_to_dfa(f))


def test_a_head_that_looks_like_an_arc_breaks_the_chain_and_is_left_to_fst_to_dfa():
    f = _two_arcs(97, 98)
    f.set_final(1, pynini.Weight(f.weight_type(), float(np.array(1, "<u4").view("<f4"))))
    f.add_arc(1, pynini.Arc(99, 99, pynini.Weight.one(f.weight_type()), 2))  # state 1's head: 1, 1, 0 (an arc's shape)
    data = f.write_to_string()
    assert fst_bytes_to_dfa(data) is None
    from fstbeam.compiler.pipeline import hard_dfa_from_bytes

    assert same(hard_dfa_from_bytes(data), fst_to_dfa(f))


def test_a_body_that_does_not_tile_is_refused():
    data = _two_arcs(97, 98).write_to_string()
    start, n, at = vector_header(data)
    words = np.frombuffer(data, "<i4", offset=at)
    assert state_records(words, n) is not None
    assert state_records(words, n + 1) is None  # one record too few
    assert state_records(words, n - 1) is None  # the chain goes on past the count
    assert fst_bytes_to_dfa(data + b"\0" * 12) is None  # a stray empty record at the end (n says 3)
