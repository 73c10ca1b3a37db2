"""The regex flags `i`, `m` and `s`: ECMA-262 2025's scoped modifiers `(?i:...)`, `(?-i:...)`,
`(?m:...)`, `(?s:...)`, and a leading `(?i)` for the whole pattern (the form Python and Rust users write).
Oracles: Python's `re` with the same flags on every short ASCII string (Python folds ASCII case
as ECMA does), and ECMA-262's simple case folding for the Unicode cases Python reads otherwise."""
from __future__ import annotations

import itertools
import re

import pytest

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.json_schema.schema import json_schema_fst
from fstbeam.compiler.structured.regex import regex_fst
from fstbeam.errors import SpecError

ASCII = [
    "(?i)ab", "(?i)[a-b]c", "(?i)[^a]b", "a(?i:b)a", "(?i)a(?-i:b)", "(?i:a|B)+", "(?i)\\w\\W",
    "(?i)(?=A)a.", "(?i)\\bab", "(?s:a.)b", "(?is)a.", "(?i)[^\\W]",
    "(?m)^a$", "(?m)^(a|b)+$", "a(?m:$)\\n(?m:^)b", "(?m)^$", "(?mi)^a",  # m: ^ and $ at line breaks too
]


@pytest.mark.parametrize("pattern", ASCII)
def test_flags_agree_with_re_on_every_short_string(pattern):
    py = re.compile(pattern, re.ASCII)
    letters = "aAbBc\n "
    for search in (False, True):
        dfa = fst_to_dfa(regex_fst(pattern, search=search))
        match = py.search if search else py.fullmatch
        for n in range(5):
            for chars in itertools.product(letters, repeat=n):
                text = "".join(chars)  # (no \r: Python's `.` takes it, ECMA's does not)
                assert dfa.accepts(text.encode()) == (match(text) is not None), (pattern, search, text)


@pytest.mark.parametrize("pattern, yes, no", [
    ("(?i)k", ["k", "K", "\u212a"], ["x"]),  # the Kelvin sign folds to k
    ("(?i)s", ["s", "S", "\u017f"], ["ß"]),  # the long s folds to s
    ("(?i)σ", ["Σ", "σ", "ς"], ["s"]),
    ("(?i)é", ["é", "É"], ["e"]),
    ("(?i)ß", ["ß", "\u1e9e"], ["ss", "SS"]),  # simple folding: one character for one
    ("(?i)\\w", ["\u212a", "\u017f", "k"], ["é"]),  # ECMA: \w with u and i holds ſ and K
    ("(?i)\\W", ["-", "é"], ["\u212a", "\u017f", "k"]),
    ("(?i)\\p{Lu}", ["A", "a", "é"], ["1"]),  # a property's set closed under case too
])
def test_unicode_case_folding_is_ecmas_simple_folding(pattern, yes, no):
    dfa = fst_to_dfa(regex_fst(pattern))
    for text in yes:
        assert dfa.accepts(text.encode()), (pattern, text)
    for text in no:
        assert not dfa.accepts(text.encode()), (pattern, text)


@pytest.mark.parametrize("pattern, construct", [
    ("(?x)a", "the flag 'x'"), ("(?=(?m:^)a)", "another lookaround"), ("a(?i)b", "only at the very start"),
    ("(?-i)a", "only at the very start"), ("(?i", "unknown group"), ("(?$a)", "unknown group"),
])
def test_unsupported_flags_are_named(pattern, construct):
    with pytest.raises(SpecError, match=re.escape(construct)):
        regex_fst(pattern)


def test_a_schema_pattern_with_a_flag_group():
    dfa = fst_to_dfa(json_schema_fst({"type": "string", "pattern": "^(?i:yes|no)$"}))
    assert dfa.accepts(b'"YES"') and dfa.accepts(b'"No"') and not dfa.accepts(b'"maybe"')


def test_the_decode_side_check_leaves_flag_groups_to_the_automaton():
    """jsonschema re-checks a schema's patterns with Python's `re`, whose ASCII case folding is
    not ECMA's: a pattern with a flag group is not written for it (the automaton held the text)."""
    from fstbeam.runtime.structured_check import python_pattern

    assert python_pattern("(?i)é") is None and python_pattern("^(?i:yes)$") is None
    assert python_pattern("a(?:b)(?=c)") is not None
