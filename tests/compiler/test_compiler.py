"""`fstbeam.Compiler`: extend() adds to what a base has, grammar= takes builds and lists,
one Compiler per tokenizer, leading_space="auto" from a decoder, and the byte-budget cache.

Oracle: brute force over every token sequence of a tiny vocabulary, deciding acceptance from the
decoded text with the plain-Python boundary rule (`occurs`), never from the compiled tables."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import fstbeam
from fstbeam.compiler.compiler import Compiler, compiler_for
from fstbeam.compiler.request import ConstraintRequest
from fstbeam.contract.cache import ByteCache
from fstbeam.contract.vocab import Vocab
from fstbeam.errors import DisallowedTokenError, SpecError
from fstbeam.fst.text import occurs
from fstbeam.grammars.registry import GrammarBuild, combine

R = ConstraintRequest.from_kwargs
TOKENS = {1: b"a", 2: b"b", 3: b" ", 4: b"ab", 5: b" a", 6: b" b", 7: b"c"}


@pytest.fixture(scope="module")
def vocab():
    return Vocab.from_dict(TOKENS, eos_ids=[0])


def accepts(cc, ids) -> bool:
    m = cc.matcher()
    try:
        for t in ids:
            m.advance(t)
    except DisallowedTokenError:
        return False
    return m.is_final()


def check_language(cc, must: list[str], avoid: list[str], max_len: int = 4) -> int:
    """Every token sequence up to ``max_len`` is accepted iff its text meets ``must`` and ``avoid``."""
    seen = 0
    for n in range(max_len + 1):
        for ids in itertools.product(TOKENS, repeat=n):
            text = b"".join(TOKENS[i] for i in ids).decode()
            want = all(occurs(text, p) for p in must) and not any(occurs(text, p) for p in avoid)
            assert accepts(cc, ids) == want, (text, must, avoid)
            seen += want
    return seen


def test_extend_adds_to_the_base_phrases_and_avoid_list(vocab):
    comp = Compiler(vocab)
    base = comp.compile_request(R(phrases=["a"], avoid=["c"]))
    cc = comp.compile_request(R(phrases=["b"], avoid=["ab"]), base=base)
    assert [a.text for a in cc.phrases] == ["a", "b"]
    assert [a.text for a in cc.avoid] == ["c", "ab"]
    assert cc.phrases[0] is base.phrases[0]  # the base's automata are shared, not recompiled
    assert check_language(cc, ["a", "b"], ["c", "ab"]) > 0
    assert [p["text"] for p in cc.spec["phrases"]] == ["a", "b"]


def test_the_old_ways_to_compile_warn_and_give_the_same_constraints(vocab):
    """One way to compile (issue 38): Compiler.compile / .extend and fstbeam.compile_request are
    deprecated aliases of compile_request / with_request, with a warning."""
    comp = Compiler(vocab)
    want_base = comp.compile_request(R(phrases=["a"], avoid=["c"]))
    want = comp.compile_request(R(phrases=["b"]), base=want_base)
    with pytest.warns(DeprecationWarning, match="Compiler.compile"):
        base = comp.compile(phrases=["a"], avoid=["c"])
    with pytest.warns(DeprecationWarning, match="Compiler.extend"):
        cc = comp.extend(base, phrases=["b"])
    with pytest.warns(DeprecationWarning, match="fstbeam.compile_request"):
        via_function = fstbeam.compile_request(R(phrases=["b"]), base=want_base)
    assert base.fingerprint == want_base.fingerprint
    assert cc.fingerprint == want.fingerprint == via_function.fingerprint


def test_with_request_keeps_grammar_supplied_phrases(vocab):
    """The bug of issue 10: with_request replaced the base's phrases, a grammar's included."""
    g = GrammarBuild(name="glossary", params={}, source_hash="test", language=None, phrases=("a",), avoid=("c",))
    base = fstbeam.compile_constraints(grammar=g, tokenizer=vocab)
    cc = fstbeam.with_request(base, phrases=["b"])
    assert [a.text for a in cc.phrases] == ["a", "b"]
    assert [a.text for a in cc.avoid] == ["c"]
    check_language(cc, ["a", "b"], ["c"])


def test_extend_refuses_a_second_prefix_and_checks_the_whole_request(vocab):
    comp = Compiler(vocab)
    base = comp.compile_request(R(words=["a", "b"], prefix="a"))
    with pytest.raises(SpecError, match="already have the prefix"):
        comp.compile_request(R(prefix="b"), base=base)
    same = comp.compile_request(R(prefix="a", phrases=["b"]), base=base)
    assert same.prefix is base.prefix and [a.text for a in same.phrases] == ["b"]
    with pytest.raises(fstbeam.errors.UnsatisfiableConstraintError):
        comp.compile_request(R(phrases=["c"]), base=base)  # "c" is not in the word list


def test_the_merge_rule_is_the_conjunction_of_base_and_request(vocab):
    """The one merge rule (`ConstraintRequest.added_to`, every door): the merged constraints
    accept exactly what the base and the request compiled alone both accept -- an ordered request
    keeps its order even where the base has some of its items (the old rule dropped them, and the
    order with them); each item and avoid phrase is compiled once."""
    comp = Compiler(vocab)

    def both(cc, a, b):
        for n in range(5):
            for ids in itertools.product(TOKENS, repeat=n):
                assert accepts(cc, ids) == (accepts(a, ids) and accepts(b, ids)), [TOKENS[i] for i in ids]

    cases = [(R(phrases=["a", ["b", "c"]], avoid=["ab"]), R(phrases=["c", ["b", "c"], "a"], avoid=["ab", " b"])),
             (R(phrases=["a"]), R(phrases=["b", "a"], ordered=True)),  # b before a, and a anywhere
             (R(phrases=["a", "b"], ordered=True), R(phrases=["c", "a"])),
             (R(words=["a", "b", "c"], prefix="a"), R(phrases=["c", "b"], ordered=True, prefix="a"))]
    for base_req, req in cases:
        base = comp.compile_request(base_req)
        merged = comp.compile_request(req, base=base)
        alone = comp.compile_request(req)
        both(merged, base, alone)
        keys = [tuple(p.get("alternatives") or [p["text"]]) for p in merged.spec["phrases"]]
        assert len({p["text"] for p in merged.spec["avoid"]}) == len(merged.avoid) == len(merged.spec["avoid"])
        if not req.ordered and not base_req.ordered:  # each item once, an automaton each (an ordered list is one)
            assert len(set(keys)) == len(keys) == len(merged.phrases)
    # a request that adds nothing is the base itself
    base = comp.compile_request(R(phrases=["a"], prefix="b"))
    assert comp.compile_request(R(phrases=["a"], prefix="b"), base=base) is base
    # two ordered lists: their relative order is not said
    with pytest.raises(SpecError, match="ordered applies to one list of phrases, and the base has its own"):
        comp.compile_request(R(phrases=["c", "a"], ordered=True), base=comp.compile_request(R(phrases=["a", "b"], ordered=True)))
    # a hard part only where the base constrains nothing
    with pytest.raises(SpecError, match="compiled already .with their word list"):
        comp.compile_request(R(words=["a"]), base=comp.compile_request(R(words=["a", "b"])))
    with pytest.raises(SpecError, match="compiled already .with their phrases"):
        comp.compile_request(R(words=["a"]), base=comp.compile_request(R(phrases=["a"])))
    empty = comp.compile_request(R())
    assert comp.compile_request(R(words=["a", "b"], phrases=["b"]), base=empty).fingerprint == \
        comp.compile_request(R(words=["a", "b"], phrases=["b"])).fingerprint


def test_grammar_accepts_a_build_a_combination_and_a_list(vocab):
    g1 = GrammarBuild(name="g1", params={}, source_hash="1", language=None, phrases=("a",))
    g2 = GrammarBuild(name="g2", params={}, source_hash="2", language=None, avoid=("c",))
    for grammar in (combine([g1, g2]), [g1, g2]):
        cc = fstbeam.compile_constraints(grammar=grammar, tokenizer=vocab)
        assert [a.text for a in cc.phrases] == ["a"] and [a.text for a in cc.avoid] == ["c"]
    with pytest.raises(SpecError, match="grammar="):
        fstbeam.compile_constraints(grammar=[3], tokenizer=vocab)


def test_one_compiler_per_tokenizer_object(monkeypatch, vocab):
    """A tokenizer object's vocabulary is built once per process, not once per call."""
    calls = []

    class FakeHF:
        pass

    def fake_from_hf(tok, **kw):
        calls.append(tok)
        return vocab

    monkeypatch.setattr(Vocab, "from_hf_tokenizer", staticmethod(fake_from_hf))
    tok = FakeHF()
    a = fstbeam.compile_constraints(phrases=["a"], tokenizer=tok)
    b = fstbeam.compile_constraints(phrases=["b"], tokenizer=tok)
    assert len(calls) == 1
    assert compiler_for(tok) is compiler_for(vocab)  # same fingerprint: same Compiler
    assert a.vocab is b.vocab is vocab


def test_leading_space_auto_follows_the_decoder_prompt_format(vocab):
    class FakeDecoder:  # what Compiler duck-types: .vocab and .continues_text
        def __init__(self, continues):
            self.vocab, self.continues_text = vocab, continues

    on = fstbeam.compile_constraints(words=["a"], tokenizer=FakeDecoder(True), leading_space="auto")
    off = fstbeam.compile_constraints(words=["a"], tokenizer=FakeDecoder(False), leading_space="auto")
    assert accepts(on, [5]) and not accepts(off, [5])
    assert accepts(on, [1]) and accepts(off, [1])
    with pytest.raises(SpecError, match="auto"):
        fstbeam.compile_constraints(words=["a"], tokenizer=vocab, leading_space="auto")


def test_byte_cache_evicts_least_recently_used_under_its_budget():
    c = ByteCache(3000)
    c.get("x", lambda: np.zeros(1000, np.uint8))
    c.get("y", lambda: np.zeros(1000, np.uint8))
    c.get("x", lambda: pytest.fail("x is cached"))  # x is now most recent
    c.get("z", lambda: np.zeros(1500, np.uint8))
    assert "x" in c and "z" in c and "y" not in c
    assert c.nbytes <= 3000
    c.get("huge", lambda: np.zeros(5000, np.uint8))  # larger than the budget: returned, not kept
    assert "huge" not in c


def test_compiler_with_its_own_budget_keeps_its_index_apart(vocab):
    comp = Compiler(vocab, cache_bytes=1 << 20)
    assert comp.index is comp.index
    assert ("index", vocab.fingerprint) in comp.cache
