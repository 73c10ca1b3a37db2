"""fstbeam.fst.inspect on byte automata and on token automata (labels = token id + 1)."""
from __future__ import annotations

import pynini
import pytest

from fstbeam.fst import inspect as fi
from fstbeam.fst.labels import token_to_label
from fstbeam.fst.optimize import optimize, sigma_star

PETS = pynini.union("cat", "cats", "dog", "naïve", "naêve")  # non-deterministic, with epsilons


def test_stats():
    st = fi.stats(optimize(PETS, stage="t"))
    assert st["finals"] >= 1 and st["deterministic"] and not st["cyclic"] and not st["empty"]
    assert st["min_label"] == ord("a") and st["max_label"] == 0xC3
    assert fi.stats(pynini.Fst())["empty"]


@pytest.mark.parametrize("fst", [PETS, optimize(PETS, stage="t")], ids=["nfa", "dfa"])
def test_accepted_strings_shortest_first(fst):
    assert fi.accepted_strings(fst, 10) == ["cat", "dog", "cats", "naêve", "naïve"]
    assert fi.accepted_strings(fst, 2) == ["cat", "dog"]
    assert fi.shortest_string(fst) == "cat"


def test_accepted_strings_is_bounded_on_infinite_languages():
    # readable texts first (issue 39: a grammar that allows any text showed "\x01", "\x02")
    assert fi.accepted_strings(sigma_star(), 3) == ["", "0", "1"]
    assert all(s.isprintable() for s in fi.accepted_strings(sigma_star(), 60))
    assert fi.accepted_strings(pynini.closure(pynini.accep("ab")), 3) == ["", "ab", "abab"]
    assert fi.shortest_string(pynini.Fst()) is None


@pytest.mark.parametrize(
    ("text", "ok"),
    [("cat", True), ("cats", True), ("ca", False), ("catss", False), ("naïve", True), ("", False)],
)
def test_accepts(text, ok):
    assert fi.accepts(PETS, text) is ok
    assert fi.accepts(PETS, text.encode()) is ok


def test_longest_accepted_prefix():
    assert fi.longest_accepted_prefix(PETS, "cab") == ("ca", ("t",))
    # A whole character is offered, not its first byte.
    assert fi.longest_accepted_prefix(PETS, "nax") == ("na", ("ê", "ï"))
    # <end> says the prefix itself is accepted.
    assert fi.longest_accepted_prefix(PETS, "catz") == ("cat", ("<end>", "s"))


def test_dead_branches_are_not_offered():
    f = pynini.Fst()
    s0, s1, s2, dead = (f.add_state() for _ in range(4))
    f.set_start(s0)
    f.set_final(s2)
    one = pynini.Weight.one(f.weight_type())
    f.add_arc(s0, pynini.Arc(ord("a"), ord("a"), one, s1))
    f.add_arc(s1, pynini.Arc(ord("b"), ord("b"), one, s2))
    f.add_arc(s1, pynini.Arc(ord("x"), ord("x"), one, dead))  # leads nowhere final
    assert fi.longest_accepted_prefix(f, "ax") == ("a", ("b",))
    assert any("dead" in w for w in fi.analyze(f))


def test_explain_rejection():
    assert fi.explain_rejection(PETS, "cat") is None
    msg = fi.explain_rejection(PETS, "cab")
    assert "accepted up to 'ca'" in msg and "'b' is not allowed" in msg and "allowed next: 't'" in msg
    assert "only the start" in fi.explain_rejection(PETS, "ca")
    assert "empty" in fi.explain_rejection(pynini.Fst(), "x")


def test_analyze():
    assert fi.analyze(optimize(PETS, stage="t")) == ["info: no loops: the language is finite"]
    warnings = fi.analyze(PETS)
    assert any("epsilon" in w for w in warnings) and any("not deterministic" in w for w in warnings)
    assert any("infinite" in w for w in fi.analyze(sigma_star()))
    assert fi.analyze(pynini.Fst()) == ["warning: the automaton has no start state: its language is empty"]
    unreachable = pynini.accep("ab")
    unreachable.add_state()
    assert any("unreachable" in w for w in fi.analyze(unreachable))
    assert any("outside the byte range" in w for w in fi.analyze(pynini.accep("€", token_type="utf8")))


def test_to_networkx():
    g = fi.to_networkx(optimize(pynini.accep("ab"), stage="t"))
    assert g.number_of_nodes() == 3 and g.number_of_edges() == 2
    assert sorted(d["text"] for _, _, d in g.edges(data=True)) == ["a", "b"]
    assert sum(1 for _, d in g.nodes(data=True) if d["final"]) == 1


def _token_fst():
    # Token ids 0 "he", 1 "llo", 2 "hello": two tokenizations of "hello".
    vocab = {0: "he", 1: "llo", 2: "hello"}
    f = pynini.Fst()
    s0, s1, s2 = (f.add_state() for _ in range(3))
    f.set_start(s0)
    f.set_final(s2)
    one = pynini.Weight.one(f.weight_type())
    for src, tok, dst in [(s0, 0, s1), (s1, 1, s2), (s0, 2, s2)]:
        lab = token_to_label(tok)
        f.add_arc(src, pynini.Arc(lab, lab, one, dst))
    return f, (lambda label: vocab[label - 1])


def test_token_level_automata():
    f, text = _token_fst()
    assert fi.accepted_strings(f, 5, label_text=text) == ["hello"]  # spelled once
    assert fi.accepts(f, [token_to_label(0), token_to_label(1)])
    assert not fi.accepts(f, [token_to_label(1)])
    assert fi.longest_accepted_prefix(f, [token_to_label(0), token_to_label(0)], label_text=text) == ("he", ("llo",))
    assert "shortest accepted strings (1)" in fi.report(f, label_text=text)


def test_report():
    text = fi.report(optimize(PETS, stage="t"), sample=2)
    assert "states" in text and "'cat'" in text and "'dog'" in text and "'cats'" not in text


def test_wide_languages_fall_back_to_n_shortest_paths():
    digits = pynini.union(*"0123456789")
    wide = optimize(pynini.closure(digits, 3, 3) + "x" | pynini.accep("abcdefghij"), stage="t")
    assert fi.accepted_strings(wide, 3) == ["000x", "001x", "002x"]  # breadth first: label order
    # With a tiny budget the level of 1,000 strings is too wide: n-shortest paths take over.
    found = fi.accepted_strings(wide, 5, max_expansions=50)
    assert len(found) == 5 and all(len(s) == 4 and s.endswith("x") for s in found)
