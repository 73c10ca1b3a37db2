"""The compile doors (API keywords, with_request): every text checked, every limit enforced in
milliseconds with an error naming it (issue 23, items 1 and 4)."""
from __future__ import annotations

import pytest

import fstbeam
from fstbeam.errors import SpecError
from fstbeam.validate import LIMITS

from rt_helpers import tiny_vocab

S = "\ud800"


@pytest.fixture(scope="module")
def vocab():
    return tiny_vocab()


@pytest.fixture(scope="module")
def base(vocab):
    return fstbeam.compile_constraints(tokenizer=vocab, words=["a", "b", "ab"])


@pytest.mark.parametrize("kw, match", [
    (dict(words=["a", None]), r"words\[1\] must be text \(str\), not NoneType"),
    (dict(words=["a", 3]), r"words\[1\] must be text \(str\), not int"),
    (dict(words=["a" + S]), "surrogate"),
    (dict(phrases=["a" + S]), r"phrases\[0\].*surrogate"),
    (dict(phrases=[["a", S + "b"]]), r"phrases\[0\]\[1\].*surrogate"),
    (dict(avoid=[S]), r"avoid\[0\].*surrogate"),
    (dict(avoid=[["a", S]]), "surrogate"),
    (dict(prefix="a" + S), "prefix.*surrogate"),
    (dict(words="wo\x00rds.txt"), "NUL"),
])
def test_bad_text_is_a_spec_error(vocab, kw, match):
    with pytest.raises(SpecError, match=match):
        fstbeam.compile_constraints(tokenizer=vocab, **kw)


@pytest.mark.parametrize("kw", [dict(phrases=[S]), dict(avoid=["b" + S]), dict(prefix=S), dict(phrases=[["a", S]])])
def test_with_request_checks_its_texts(base, kw):
    with pytest.raises(SpecError, match="surrogate"):
        fstbeam.with_request(base, **kw)


@pytest.mark.parametrize("kw, limit", [
    (lambda: dict(avoid=["a " * (LIMITS["avoid_chars"] // 2 + 1)]), "avoid_chars"),
    (lambda: dict(avoid=["ab " * (LIMITS["avoid_chars"] // 6) + c for c in "xyz"]), "avoid_chars"),  # together
    (lambda: dict(prefix="a" * (LIMITS["prefix_chars"] + 1)), "prefix_chars"),
    (lambda: dict(phrases=["a" * (LIMITS["phrase_chars"] + 1)]), "phrase_chars"),
    (lambda: dict(phrases=[[f"a{'b' * (i % 9)}{i}" for i in range(LIMITS["alternatives_per_item"] + 1)]]),
     "alternatives_per_item"),
    (lambda: dict(phrases=[["ab" * 200 + str(i) for i in range(LIMITS["alternatives_chars"] // 400 + 1)]]), "alternatives_chars"),
    (lambda: dict(phrases=[f"a{i}" for i in range(LIMITS["phrases_per_request"] + 1)]), "phrases_per_request"),
    (lambda: dict(avoid=[f"b{i}" for i in range(LIMITS["avoid_per_request"] + 1)]), "avoid_per_request"),
])
def test_requests_above_a_limit_are_refused_naming_it(base, kw, limit):
    with pytest.raises(SpecError, match=limit):
        fstbeam.with_request(base, **kw())


def test_an_over_long_word_is_refused(vocab, tmp_path):
    with pytest.raises(SpecError, match="word_chars"):
        fstbeam.compile_constraints(tokenizer=vocab, words=["a", "b" * 1_000_000])
    f = tmp_path / "words.txt"
    f.write_text("a\n# a comment\nb\n" + "x" * (LIMITS["word_chars"] + 1) + "\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"line 4.*word_chars"):
        fstbeam.compile_constraints(tokenizer=vocab, words=str(f))


def test_limits_themselves_are_accepted(vocab):
    """At (not above) the limits a request compiles."""
    free = fstbeam.compile_constraints(tokenizer=vocab)
    fstbeam.with_request(free, avoid=[("ab " * LIMITS["avoid_chars"])[:LIMITS["avoid_chars"]]])
    fstbeam.with_request(free, prefix="a" * LIMITS["prefix_chars"])


@pytest.mark.parametrize("cc", [123, None, "a1.fstbeam"])
def test_with_request_needs_compiled_constraints(cc):
    with pytest.raises(SpecError, match="compiled constraints"):
        fstbeam.with_request(cc, phrases=["a"])


def test_limits_are_checked_when_the_request_is_built():
    """One check, in ConstraintRequest, before any tokenizer loads: also for Phrase and AnyOf
    objects (not only texts and nested lists)."""
    from fstbeam import AnyOf, ConstraintRequest, Phrase

    over = LIMITS["alternatives_per_item"] + 1
    with pytest.raises(SpecError, match=r"phrases\[0\].*alternatives_per_item"):
        ConstraintRequest.from_kwargs(phrases=[AnyOf(*[f"w{i}" for i in range(over)])])
    with pytest.raises(SpecError, match=r"phrases\[1\].*alternatives_chars"):
        ConstraintRequest.from_kwargs(phrases=["a", AnyOf(*["ab" * 200 + str(i) for i in range(LIMITS["alternatives_chars"] // 400 + 1)])])
    with pytest.raises(SpecError, match="phrase_chars"):
        ConstraintRequest.from_kwargs(phrases=[Phrase("a" * (LIMITS["phrase_chars"] + 1))])
    with pytest.raises(SpecError, match="avoid_chars"):
        ConstraintRequest.from_kwargs(avoid=[Phrase("a" * (LIMITS["avoid_chars"] + 1))])
    over = [f"p{i}" for i in range(LIMITS["phrases_per_request"] + 1)]
    with pytest.raises(SpecError, match="phrases_per_request"):
        ConstraintRequest.from_kwargs(phrases=over)


def test_grammar_phrases_are_checked_against_the_limits(vocab):
    """A grammar's phrases never pass through a request: the compiler checks them."""
    from fstbeam.grammars.building import GrammarBuild

    for phrases, avoid, limit in ((("a" * (LIMITS["phrase_chars"] + 1),), (), "phrase_chars"),
                                  ((tuple(f"w{i}" for i in range(LIMITS["alternatives_per_item"] + 1)),), (),
                                   "alternatives_per_item"),
                                  ((), ("b" * (LIMITS["avoid_chars"] + 1),), "avoid_chars")):
        g = GrammarBuild(name="long", params={}, source_hash="0", language=None, phrases=phrases, avoid=avoid)
        with pytest.raises(SpecError, match=f"grammar long.*{limit}"):
            fstbeam.compile_constraints(tokenizer=vocab, grammar=g)
