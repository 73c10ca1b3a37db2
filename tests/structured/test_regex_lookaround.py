"""Lookarounds (`(?=X)`, `(?!X)`, `(?<=X)`, `(?<!X)`, and `\\b`/`\\B` read as them) compiled as automaton operations
(`compiler/structured/regex/lookaround.py`), against Python's `re`, which runs them by
backtracking: every string over the patterns' letters up to length 5, whole and searched, for
hand-written patterns (password rules, "does not contain", tempered tokens) and random ones."""
from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import pytest

import fstbeam
from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.compiler.structured.regex import regex_fst

sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import to_python  # noqa: E402

HAND = [
    r"^(?=.*[a-z])(?=.*[A-Z])(?=.*\d).{4,}$",  # a password rule
    r"^(?!.*ab).*c$", r"^((?!ab).)*$",  # does not contain; a tempered token (a lookahead in a repeat)
    r"(?<=a)b+", r"(?<!a)b", r"^\w+(?<!_)$", r"a(?=b)", r"a(?!b)", r"(?=a)\w", r"^(?=.*c$)",
    r"(a(?=b)|b(?!a))+", r"^(?<=^)a", r"b(?<=^b)", r"(?=(ab|ba))..", r"x?(?!)", r"(?=)a",
    r"^(?!(a|b)+$).+$", r"(^|c)(?=a)", r"a$(?<=ca)",
    r"\bab", r"a\b", r"\Ba\B", r"(\ba|c\b)+", r"^\w+\b.\b\w+$", r"\b",  # word boundaries, ASCII \w as ECMA's
]
LETTERS = "abcA1_"


def _check(pattern: str, letters: str, longest: int = 5) -> None:
    py = to_python(pattern)
    assert py is not None, pattern
    for search in (False, True):
        dfa = fst_to_dfa(regex_fst(pattern, search=search))
        match = py.search if search else py.fullmatch
        for n in range(longest + 1):
            for chars in itertools.product(letters, repeat=n):
                text = "".join(chars)
                assert dfa.accepts(text.encode()) == (match(text) is not None), (pattern, search, text)


@pytest.mark.parametrize("pattern", HAND)
def test_hand_patterns_agree_with_re_on_every_short_string(pattern):
    letters = "".join(sorted(set(pattern) & set("abc")) or "a") + ("A1" if "\\d" in pattern else "") + \
        ("_" if "\\w" in pattern else "") + (" " if "\\b" in pattern or "\\B" in pattern else "")
    _check(pattern, letters or "ab")


def _random_pattern(rng: random.Random, depth: int = 0, looks: bool = True, fixed: bool = False) -> str:
    """A random pattern over a, b, c; ``fixed``: one string length only (Python's lookbehinds)."""
    atoms = ["a", "b", "c", "[ab]", "."]
    parts = []
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if looks and r < 0.3:
            kind = rng.choice(["?=", "?!", "?<=", "?<!"])
            body = _random_pattern(rng, depth + 1, looks=False, fixed="<" in kind)
            parts.append(f"({kind}{body})")
        elif depth < 2 and r < 0.45:
            inner = _random_pattern(rng, depth + 1, looks, fixed)
            quant = "" if fixed else rng.choice(["*", "+", "?", "{1,2}", ""])
            parts.append(f"(?:{inner}){quant}")
        elif not fixed and r < 0.6:
            parts.append(rng.choice(atoms) + rng.choice(["*", "+", "?"]))
        else:
            parts.append(rng.choice(atoms))
    out = "".join(parts)
    if not fixed and rng.random() < 0.2:
        other = _random_pattern(rng, depth + 1, looks, fixed)
        out = f"{out}|{other}"
    if depth == 0:
        out = rng.choice(["", "^"]) + out + rng.choice(["", "$"])
    return out


def test_random_patterns_agree_with_re_on_every_short_string():
    rng = random.Random(20261130)
    checked = 0
    for _ in range(60):
        pattern = _random_pattern(rng)
        if "(?" not in pattern.replace("(?:", ""):
            continue
        _check(pattern, "abc", longest=4)
        checked += 1
    assert checked >= 30


def test_a_json_schema_pattern_with_a_lookahead_and_the_doors():
    schema = {"type": "object", "properties": {"user": {"type": "string", "pattern": "^(?!.*admin)[a-z]+$"}},
              "required": ["user"]}
    dfa = fst_to_dfa(json_schema_fst(schema))
    assert dfa.accepts(b'{"user":"alice"}') and not dfa.accepts(b'{"user":"sysadmins"}')
    vocab = fstbeam.Vocab.from_dict(["a", "d", "m", "i", "n", "x", "dm", "in", "ad"], eos_ids=[9])
    cc = fstbeam.compile_constraints(regex="(?!.*admin)[admnix]{1,6}", tokenizer=vocab)
    from fstbeam.contract.compiled import Matcher

    m = Matcher(cc)
    for token in (8, 2, 3):  # "ad" "m" "i": the next token may not be "n" (admin), may be "x" or "in"
        m.advance(token)
    allowed = set(m.allowed_token_ids().tolist())
    assert 4 not in allowed and {5, 7} <= allowed


def test_a_hostname_rule_with_a_counted_lookahead_and_lookbehinds_in_a_repeat():
    """A lookahead a text passes once (`(?=.{1,N}$)`) is a rule over one marker: a counter, not a
    subset of counters (its determinization tracked one per marker it might have met)."""
    small = r"^(?=.{1,5}$)(?!-)[a-]{1,2}(?<!-)(\.(?!-)[a-]{1,2}(?<!-))*$"
    _check(small, "a-.", longest=6)
    host = r"^(?=.{1,253}$)(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*$"
    dfa = fst_to_dfa(regex_fst(host))
    assert dfa.accepts(b"a-b.example.com") and dfa.accepts(b"x" * 63 + b".y")
    for bad in (b"-a.com", b"a-.com", b"a..b", b"x" * 64, (b"abc." * 64)[:-1]):
        assert not dfa.accepts(bad), bad
