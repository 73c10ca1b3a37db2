"""fstbeam.fst.optimize: the one guarded determinize/minimize helper and the byte alphabets."""
from __future__ import annotations

import logging

import pynini
import pytest

from fstbeam.fst.inspect import accepted_strings, accepts, stats
from fstbeam.fst.optimize import FstSizeError, byte_sigma, optimize, sigma_star


def _blowup(n: int) -> pynini.Fst:
    # (a|b)* a (a|b)^n: a minimal DFA needs 2^(n+1) states.
    ab = pynini.union("a", "b")
    return pynini.closure(ab) + "a" + pynini.closure(ab, n, n)


def test_optimize_gives_a_minimal_dfa_and_logs_the_stage(caplog):
    fst = pynini.union("cat", "cats", "dog")
    with caplog.at_level(logging.INFO, logger="fstbeam.fst"):
        out = optimize(fst, stage="pets")
    st = stats(out)
    assert st["deterministic"] and st["epsilon_arcs"] == 0 and st["states"] == 7
    assert accepted_strings(out, 5) == ["cat", "dog", "cats"]
    assert any(r.message.startswith("pets: ") and "states" in r.message for r in caplog.records)
    assert fst.num_states() > 7  # the input is not modified


def test_determinize_stops_at_the_cap():
    with pytest.raises(FstSizeError, match=r"blowup: determinize produced more than 1,000 states") as err:
        optimize(_blowup(16), stage="blowup", max_states=1000)  # would be 131k states
    assert err.value.limit == 1000 and err.value.stage == "blowup"


def test_a_small_blowup_stops_at_the_cap_not_after():
    """OpenFst's state threshold prunes a finished determinization; a small input's subset
    construction stops a level past the cap: 2^31 states are never built."""
    from fstbeam.fst.small_determinize import MAX_INPUT_STATES, StateCapExceeded, determinize_small

    for n in (30, 90):  # (90: more states than one 64-bit word)
        nfa = pynini.rmepsilon(_blowup(n))
        assert 64 < nfa.num_states() <= MAX_INPUT_STATES or n == 30
        with pytest.raises(StateCapExceeded) as err:
            determinize_small(nfa, 5000)
        assert 5000 < err.value.found < 4 * 5000
        with pytest.raises(FstSizeError, match="more than 5,000 states"):
            optimize(_blowup(n), stage="blowup", max_states=5000)


def test_small_determinization_is_openfsts_state_for_state():
    """The same automaton as `pynini.determinize`, numbered the same, on random small acceptors
    (labels from bytes to the markers' range)."""
    import random

    from fstbeam.fst.small_determinize import StateCapExceeded, determinize_small

    def dump(f):
        zero = pynini.Weight.zero(f.weight_type())
        return f.start(), [(f.final(q) != zero, [(a.ilabel, a.nextstate) for a in f.arcs(q)]) for q in f.states()]
    rng = random.Random(7)
    compared = 0
    for _ in range(200):
        n = rng.randint(1, 200)
        f = pynini.Fst()
        f.add_states(n)
        f.set_start(rng.randrange(n))
        one = pynini.Weight.one(f.weight_type())
        labels = [rng.choice([1, 2, 3, 97, 255, 256, 1 << 30]) for _ in range(4)]
        for q in range(n):
            if rng.random() < 0.3:
                f.set_final(q)
            for _ in range(rng.randint(0, 4)):
                label = rng.choice(labels)
                f.add_arc(q, pynini.Arc(label, label, one, rng.randrange(n)))
        try:
            small = determinize_small(f, 3000)
        except StateCapExceeded:  # (a random automaton may blow up: not compared)
            continue
        assert dump(small) == dump(pynini.determinize(f))
        compared += 1
    assert compared > 100


def test_the_cap_applies_to_the_input_too():
    with pytest.raises(FstSizeError, match="input"):
        optimize(pynini.accep("abcdef"), stage="x", max_states=3)


def test_empty_and_transducer_inputs():
    assert optimize(pynini.accep("a") - pynini.accep("a"), stage="empty").num_states() == 0
    with pytest.raises(ValueError, match="needs an acceptor"):
        optimize(pynini.cross("a", "b"), stage="x")


def test_byte_alphabets_are_copies():
    s = sigma_star()
    assert accepts(s, "") and accepts(s, "any text é") and not accepts(s, b"\x00")
    s.delete_states()  # mutating a copy does not touch the cache
    assert sigma_star().num_states() == 1
    one = byte_sigma()
    assert accepts(one, "a") and not accepts(one, "ab") and stats(one)["arcs"] == 255


def test_the_input_is_left_as_it_was():
    # epsilons (rmepsilon copies), nondeterminism (determinize copies), a DFA that only needs
    # minimizing (copied before minimize works in place), and an empty automaton; its states and
    # arcs are compared (the header's cached property bits may be filled in: they were before)
    a, b = pynini.accep("ab"), pynini.accep("cb")
    dfa = pynini.Fst()
    one = pynini.Weight.one(dfa.weight_type())
    s, x, y, e1, e2 = (dfa.add_state() for _ in range(5))
    dfa.set_start(s)
    for q, label, r in ((s, ord("a"), x), (s, ord("c"), y), (x, ord("b"), e1), (y, ord("b"), e2)):
        dfa.add_arc(q, pynini.Arc(label, label, one, r))
    dfa.set_final(e1)
    dfa.set_final(e2)
    for f in (a | b, pynini.union(a, pynini.accep("ac")).rmepsilon(), dfa, pynini.Fst()):
        before = str(f)
        out = optimize(f, stage="x")
        assert str(f) == before and out is not f
        assert accepted_strings(out, 5) == accepted_strings(f, 5)
