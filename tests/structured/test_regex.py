"""regex_fst against Python's `re` (translated where ECMA-262 differs: regex_oracle.py).

For each pattern, in both modes (whole match and JSON Schema's search): strings generated from
the automaton must match; near misses and random strings must be accepted exactly when `re`
matches them.
"""
from __future__ import annotations

import random
import sys
import time
import zlib
from pathlib import Path

import pytest

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.structured.regex import regex_fst
from fstbeam.errors import SpecError

sys.path.insert(0, str(Path(__file__).parent))
from regex_oracle import dev_patterns, dev_sample, mutations, random_walk, to_python  # noqa: E402

DEV = dev_sample()

HAND = [
    "abc", "a|b|", "(ab|a)(c|bcd)", "x*y+z?", "a{3}", "a{2,}", "a{2,4}b", "(?:ab){0,3}c",
    "(?<word>[a-z]+)-\\d+", "[^a-z]", "[a\\-z]", "[\\w.-]+@[\\w-]+\\.[a-z]{2,6}", "\\s+\\S",
    "[\\s\\d]", "\\D\\W", ".", ".+", "^\\w+$", "^a|b$", "a$|^b", "(^a|b)c", "^$", "", "\\$\\^\\.",
    "\\u00e9+", "\\x41\\x42", "[\\u0400-\\u04ff]+", "[é€😀]", "😀{2}", "[^\"\\\\]*", "a*?b+?",
    "\\t\\n", "[.]", "a{,3}", "{", "a}", "x{1}y", "(a|b)*abb", "[A-Z][a-z]*( [A-Z][a-z]*)*",
    "^(\\+|-)?[0-9]+(\\.[0-9]+)?$", "(a|ab)(c|bcd)(d*)", "[\\]]", "\\/", "a\\.b",
]


def _strings(dfa, rng, n_walks=12):
    texts = {""}
    for _ in range(n_walks):
        w = random_walk(dfa, rng)
        if w is not None:
            texts.add(w.decode("utf-8"))
    base = sorted(texts)
    for t in base:
        texts.update(mutations(t, rng, 6))
    return sorted(texts)


def _compare(pattern, rng, *, n_walks=12):
    py = to_python(pattern)
    assert py is not None, pattern
    for search in (False, True):
        dfa = fst_to_dfa(regex_fst(pattern, search=search))
        match = py.search if search else py.fullmatch
        for text in _strings(dfa, rng, n_walks):
            want = match(text) is not None
            assert dfa.accepts(text.encode()) == want, (pattern, search, text)


@pytest.mark.parametrize("pattern", HAND)
def test_hand_patterns_agree_with_re(pattern):
    _compare(pattern, random.Random(zlib.crc32(pattern.encode())))


@pytest.mark.parametrize("pattern", ["(x*c)*", "( *c)*", "(x*c){0,2}", "(x*c)?", "(?:c|x+c)*y", "(x*c)+",
                                     "((x*)c)*x", "(x?c*)*y", "(c(xc)*)*", "(x*c){0,}c",
                                     "(^|x)+c", "((^)|x){2}c", "$^", "(x|^)(^|c)y", "(x$|c)+", "(c|$){2,3}",
                                     "x(^|c)", "(^x|c)*"])
def test_repeats_and_anchors_exhaustively(pattern):
    """Every string over the pattern's letters up to length 6 against Python's `re`, whole and
    searched. Zero repeats of a unit whose start is reached again inside it (`x*c`): the random
    walks of `_compare` never produced `cx`, which `(x*c)*` accepted. An anchor asserted more
    than once at one place (`(^|x)+`, `$^` on the empty text) found no text before."""
    import itertools

    py = to_python(pattern)
    letters = sorted(set(pattern) & set("xcy "))
    for search in (False, True):
        dfa = fst_to_dfa(regex_fst(pattern, search=search))
        match = py.search if search else py.fullmatch
        for n in range(7):
            for chars in itertools.product(letters, repeat=n):
                text = "".join(chars)
                assert dfa.accepts(text.encode()) == (match(text) is not None), (pattern, search, text)


@pytest.mark.skipif(not Path(DEV).is_dir(), reason="development sample not present")
def test_development_sample_patterns_agree_with_re():
    """Every `pattern` of the development sample that Python can read the same way; each one
    that fstbeam refuses must be refused for a construct an automaton cannot do."""
    rng = random.Random(5)
    compared = refused = 0
    for pattern in dev_patterns():
        try:
            regex_fst(pattern, search=True)
        except SpecError as err:
            assert any(w in str(err) for w in ("not supported", "lookahead", "lookbehind", "backreference",
                                               "not ECMA", "boundary")), (pattern, str(err))
            refused += 1
            continue
        if to_python(pattern) is None:
            continue
        _compare(pattern, rng, n_walks=4)
        compared += 1
    assert compared >= 300, (compared, refused)
    assert refused <= 10, refused


def test_search_semantics_and_anchors():
    dfa = fst_to_dfa(regex_fst("b+", search=True))
    assert dfa.accepts(b"abbc") and not dfa.accepts(b"ac")
    start = fst_to_dfa(regex_fst("^b", search=True))
    assert start.accepts(b"bx") and not start.accepts(b"xb")
    end = fst_to_dfa(regex_fst("b$", search=True))
    assert end.accepts(b"xb") and not end.accepts(b"bx") and not end.accepts(b"b\n")
    never = regex_fst("a^b", search=True)
    assert never.num_states() == 0


@pytest.mark.parametrize(
    "pattern, construct",
    [
        ("(a)\\1", "backreference \\1"), ("(?<x>a)\\k<x>", "named backreference"),
        ("(?=(?!a))b", "another lookaround"), ("(?=a)*a", "quantifier on a lookaround"),
        ("(?=^a)b", "anchor other than"), ("(?<=a$)b", "anchor other than"),
        ("\\b*a", "quantifier on a lookaround or word boundary"), ("(?=a\\b)", "a word boundary"),
        ("a(?i)b", "only at the very start"), ("a++", "quantifier after a quantifier"), ("*a", "nothing to repeat"),
        ("(ab", "missing ')'"), ("ab)", "unmatched ')'"), ("[ab", "missing ']'"), ("[z-a]", "out of order"),
        ("a{5,2}", "out of order"), ("\\p{Greek}", "Greek"), ("\\q", "escape \\q"), ("\\x4", "hex digits"),
        ("a{200000}", "limit"),
    ],
)
def test_unsupported_constructs_are_named(pattern, construct):
    with pytest.raises(SpecError) as err:
        regex_fst(pattern, where="json_schema /properties/a/pattern")
    message = str(err.value)
    assert construct in message and "/properties/a/pattern" in message and "position" in message or (
        construct == "limit" and "limit" in message
    ), message


def test_unicode_property_general_categories():
    import unicodedata

    dfa = fst_to_dfa(regex_fst("\\p{Lu}\\p{Ll}+"))
    not_letter = fst_to_dfa(regex_fst("\\P{L}"))
    rng = random.Random(2)
    for _ in range(300):
        cp = rng.randint(1, 0x2FFFF)
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        assert not_letter.accepts(ch.encode()) != unicodedata.category(ch).startswith("L")
        assert dfa.accepts(("A" + ch).encode()) == (unicodedata.category(ch) == "Ll")


def test_big_counted_repeat_is_linear_and_fast():
    t = time.perf_counter()
    fst = regex_fst("[a-z]{0,10000}")
    assert fst.num_states() == 10001
    dfa = fst_to_dfa(fst)
    assert dfa.accepts(b"q" * 10000) and not dfa.accepts(b"q" * 10001)
    exact = fst_to_dfa(regex_fst("(?:ab){3000}"))
    assert exact.accepts(b"ab" * 3000) and not exact.accepts(b"ab" * 2999)
    assert time.perf_counter() - t < 60  # a guard against the quadratic epsilon chain, not a target
