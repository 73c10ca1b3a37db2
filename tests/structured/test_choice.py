"""choice_fst: exactly one of the strings, by brute force over the automaton's language."""
from __future__ import annotations

import random

import pytest

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.choice import choice_fst
from fstbeam.errors import SpecError
from fstbeam.fst.paths import accepted_strings


def test_language_is_exactly_the_choices():
    choices = ["yes", "no", "maybe", "no", "né", "😀 ok", "y", "[a]", "\\n"]
    fst = choice_fst(choices)
    assert sorted(accepted_strings(fst, 100)) == sorted(set(choices))
    dfa = fst_to_dfa(fst)
    for c in choices:
        for near in (c[:-1], c + "s", c.upper(), " " + c):
            assert dfa.accepts(near.encode()) == (near in choices)
    assert not dfa.accepts(b"")


def test_many_choices():
    rng = random.Random(1)
    choices = sorted({"".join(rng.choice("abcé") for _ in range(rng.randint(1, 8))) for _ in range(500)})
    dfa = fst_to_dfa(choice_fst(choices))
    assert all(dfa.accepts(c.encode()) for c in choices)
    others = {"".join(rng.choice("abcé") for _ in range(rng.randint(1, 8))) for _ in range(2000)} - set(choices)
    assert not any(dfa.accepts(o.encode()) for o in others)


@pytest.mark.parametrize(
    "bad, message",
    [([], "empty"), ("yes", "list of strings"), (["a", 3], "choice[1]"), (["a", ""], "empty string"),
     (["a\x00"], "NUL")],
)
def test_bad_choices(bad, message):
    with pytest.raises(SpecError, match=message.replace("[", "\\[")):
        choice_fst(bad)
