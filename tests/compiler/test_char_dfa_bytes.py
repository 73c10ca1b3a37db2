"""`char_dfa.fst_bytes_to_dfa` reads OpenFst's binary VectorFst with numpy: the same DFA as
`fst_to_dfa` (which walks pynini's arcs one by one: the oracle), the same errors, and None where
the bytes are not a plain tropical VectorFst."""
from __future__ import annotations

import numpy as np
import pynini
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstbeam.compiler.char_dfa import fst_bytes_to_dfa, fst_to_dfa
from fstbeam.errors import SpecError


def same(a, b) -> bool:
    return np.array_equal(a.next, b.next) and np.array_equal(a.final, b.final) and a.start == b.start


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


def test_a_json_schema_automaton():
    from fstbeam.compiler.structured.json_schema import json_schema_fst

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


def test_other_forms_are_left_to_fst_to_dfa():
    f = pynini.accep("ab", token_type="byte")
    syms = pynini.SymbolTable()
    syms.add_symbol("<eps>")
    f.set_input_symbols(syms)
    assert fst_bytes_to_dfa(f.write_to_string()) is None  # symbol tables in the header
    assert fst_bytes_to_dfa(b"not an fst") is None
    log = pynini.arcmap(pynini.accep("ab", token_type="byte"), map_type="to_log")
    assert fst_bytes_to_dfa(log.write_to_string()) is None  # another arc type
