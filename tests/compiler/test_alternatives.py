"""AnyOf, ordered and sentence-case automata (compiler.alternatives) against a brute-force oracle.

The oracle lists every occurrence of every alternative in a text (word boundaries, ASCII case
folding and the sentence-start rule spelled out independently) and searches every chain of
occurrences for an ordered list; it shares no code with the automaton construction.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_light import HYP, check_every_transition, check_tables, decode, is_word, vocabularies, walk

from fstbeam.compiler.light.alternatives import AnyOf, compile_items, items_char_dfa, stages_of
from fstbeam.compiler.light.token_index import TokenIndex
from fstbeam.compiler.spec import Phrase
from fstbeam.contract.vocab import Vocab
from fstbeam.errors import SpecError, UnsatisfiableConstraintError


# ---- oracle ----------------------------------------------------------------------------------
def _alts(item) -> list[tuple[bytes, bool]]:
    """(text, only at a sentence start) of each alternative, capitals added for sentence case."""
    texts = list(item.alternatives) if isinstance(item, AnyOf) else [item.text]
    out = [(t.encode(), False) for t in texts]
    if item.sentence_case and item.case_sensitive:
        out += [((t[0].upper() + t[1:]).encode(), True) for t in texts]
    return out


def occurrences(text: bytes, item) -> list[tuple[int, int]]:
    found = []
    for lit, only in _alts(item):
        for s in range(len(text) - len(lit) + 1):
            e = s + len(lit)
            seg = text[s:e]
            same = seg == lit if item.case_sensitive else seg.lower() == lit.lower()
            if not same:
                continue
            if item.word_boundary and is_word(lit[0]) and s > 0 and is_word(text[s - 1]):
                continue
            if item.word_boundary and is_word(lit[-1]) and e < len(text) and is_word(text[e]):
                continue
            before = text[:s].rstrip(b" \t\n\r")
            if only and before and before[-1:] not in (b".", b"!", b"?"):
                continue
            found.append((s, e))
    return found


def oracle_met(text: bytes, items, ordered: bool) -> bool:
    occ = [occurrences(text, i) for i in items]
    if not ordered:
        return all(occ)

    def chain(k: int, after: int) -> bool:
        return k == len(items) or any(s >= after and chain(k + 1, e) for s, e in occ[k])

    return chain(0, 0)


# ---- random items ----------------------------------------------------------------------------
CHARS = ["a", "b", "c", " ", ".", "-", "A", "1", "é", "!"]
texts = st.lists(st.sampled_from(CHARS), min_size=1, max_size=3).map("".join).filter(str.strip)
opts = st.fixed_dictionaries({"word_boundary": st.booleans(), "case_sensitive": st.booleans(), "sentence_case": st.booleans()})


@st.composite
def items(draw, max_items=3):
    out = []
    for _ in range(draw(st.integers(1, max_items))):
        alts = draw(st.lists(texts, min_size=1, max_size=3))
        o = draw(opts)
        out.append(AnyOf(*alts, **o) if len(alts) > 1 or draw(st.booleans()) else Phrase(alts[0], **o))
    return out


TEXT_UNITS = [b"a", b"b", b"c", b" ", b".", b"?", b"A", b"1", b"!", "é".encode(), b"\n", b"B", b"x"]
outputs = st.lists(st.sampled_from(TEXT_UNITS), max_size=12).map(b"".join)


@HYP
@given(items(), outputs, st.booleans())
def test_char_dfa_matches_the_oracle(its, text, ordered):
    if not ordered:
        its = its[:1]
    dfa = items_char_dfa(stages_of(its))
    assert dfa.accepts(text) == oracle_met(text, its, ordered), (its, text)
    q = dfa.run(text)
    if dfa.final[q]:
        assert dfa.progress[q] == dfa.progress.max()


@HYP
@given(vocabularies(), items(max_items=2), st.booleans(), st.integers(0, 10**6))
def test_tokens_against_char_dfa_and_oracle(vocab, its, ordered, seed):
    if not ordered:
        its = its[:1]
    try:
        a = compile_items(its, TokenIndex.for_vocab(vocab), ordered=ordered)
    except UnsatisfiableConstraintError:
        return
    check_tables(a)
    check_every_transition(a, vocab)
    assert a.length == int(a.progress.max()) and (a.progress[a.final] == a.length).all()
    text_ids = [t for t, tb in enumerate(vocab.token_bytes) if tb]
    rng = random.Random(seed)
    for _ in range(60):
        seq = [rng.choice(text_ids) for _ in range(rng.randint(0, 6))]
        q = walk(a, seq)
        assert bool(a.final[q]) == oracle_met(decode(vocab, seq), its, ordered), (its, decode(vocab, seq))


# ---- cases -----------------------------------------------------------------------------------
def char_vocab() -> Vocab:
    toks = [*"abcdeknorwyCNTY .!?", "New", " York", " City", "the", " hero", "The", "York", "\n", " ", "  "]
    return Vocab.from_dict(dict(enumerate(dict.fromkeys(toks))), eos_ids=[100], width=101)


CASES = [
    # (items, ordered, text, met) -- one comment each
    ([AnyOf("New York", "New York City")], False, "in New York City.", True),  # overlapping alternatives
    ([AnyOf("New York City", "New York")], False, "in New York.", True),  # the shorter one alone
    ([AnyOf("New York City", "New York")], False, "in New Yorker", False),  # no boundary after York
    ([AnyOf("York", "Yorkey")], False, "Yorkey", True),  # an alternative that is a prefix of another
    ([AnyOf("York", "Yorkey")], False, "Yorke", False),
    ([Phrase("the hero", sentence_case=True)], False, "The hero came.", True),  # start of the output
    ([Phrase("the hero", sentence_case=True)], False, "Yes. The hero", True),  # after a full stop
    ([Phrase("the hero", sentence_case=True)], False, "Why?\n  The hero", True),  # ? and white space
    ([Phrase("the hero", sentence_case=True)], False, "Yes!The hero", True),  # no space needed
    ([Phrase("the hero", sentence_case=True)], False, "Yes,  The hero", False),  # mid-sentence capital
    ([Phrase("the hero", sentence_case=True)], False, "yes the hero", True),  # the exact form anywhere
    ([Phrase("the hero")], False, "The hero", False),  # the default stays exact
    ([Phrase("a"), Phrase("b")], True, "b a b", True),  # a then b: the last b follows the a
    ([Phrase("a"), Phrase("b")], True, "b a", False),  # wrong order
    ([Phrase("a b"), Phrase("b c")], True, "a b c", False),  # overlapping occurrences do not count
    ([Phrase("a b"), Phrase("b c")], True, "a b b c", True),
    ([AnyOf("a", "c"), Phrase("a")], True, "a", False),  # one occurrence cannot serve both
    ([AnyOf("a", "c"), Phrase("a")], True, "c a", True),
]


@pytest.mark.parametrize("its, ordered, text, met", CASES)
def test_cases(its, ordered, text, met):
    assert oracle_met(text.encode(), its, ordered) == met  # the oracle agrees with the comment
    assert items_char_dfa(stages_of(its)).accepts(text.encode()) == met


@pytest.mark.parametrize("its, ordered", [
    ([Phrase("the hero", sentence_case=True)], False),  # white-space-only and .!? tokens are exceptions
    ([AnyOf("New York", "New York City", sentence_case=True)], False),
    ([Phrase("the", sentence_case=True), AnyOf("York", "New York")], True),
])
def test_every_transition_on_a_vocabulary_with_sentence_marks(its, ordered):
    v = char_vocab()
    a = compile_items(its, TokenIndex.for_vocab(v), ordered=ordered)
    check_tables(a)
    check_every_transition(a, v)


def test_progress_is_the_best_over_the_alternatives():
    v = char_vocab()
    a = compile_items([AnyOf("New York", "New York City")], TokenIndex.for_vocab(v))
    ids = {tb.decode(): t for t, tb in enumerate(v.token_bytes) if tb}
    q1 = a.next_state(a.start, ids["New"])
    q2 = a.next_state(q1, ids[" York"])
    # "New York" matched at the end of the output counts (final), at the top progress
    assert a.progress[q1] == 3 and a.progress[q2] == len("New York City") and a.final[q2]
    assert a.final[a.next_state(q2, ids["."])] and a.length == len("New York City")
    assert not a.final[a.next_state(q2, ids["e"])]  # "New Yorke": not met, progress drops
    assert ids[" York"] in a.advancing(q1).tolist()  # the DBA candidate


# ---- bad input -------------------------------------------------------------------------------
def test_empty_alternatives_are_refused():
    with pytest.raises(SpecError, match="no alternatives"):
        AnyOf()
    with pytest.raises(SpecError, match="empty alternative"):
        AnyOf("a", " ")


def test_impossible_alternatives_name_them():
    from fstbeam.compiler.api import compile_constraints

    v = char_vocab()
    with pytest.raises(UnsatisfiableConstraintError, match=r"none of the alternatives \['cow', 'cab'\]"):
        compile_constraints(tokenizer=v, words=["a", "b", "New"], phrases=[["cow", "cab"]])
    with pytest.raises(UnsatisfiableConstraintError, match=r"none of the alternatives \['zz', 'qq'\]"):
        compile_constraints(tokenizer=v, phrases=[["zz", "qq"]])  # no token spells z or q
    compile_constraints(tokenizer=v, words=["a", "b", "New"], phrases=[["cow", "New"]])  # one is enough


def test_impossible_order_is_a_compile_error():
    """'b a' allowed by the hard language; order a, b only if more text can follow."""
    import pynini

    from fstbeam.compiler.api import compile_constraints

    v = char_vocab()
    only_ba = pynini.accep("b a")
    with pytest.raises(UnsatisfiableConstraintError, match="in this order"):
        compile_constraints(tokenizer=v, grammar=only_ba, phrases=["a", "b"], ordered=True)
    compile_constraints(tokenizer=v, grammar=only_ba, phrases=["b", "a"], ordered=True)
    more = pynini.accep("b a") + pynini.closure(pynini.accep(" b"))
    compile_constraints(tokenizer=v, grammar=more, phrases=["a", "b"], ordered=True)


def test_avoid_nested_list_avoids_each_alternative():
    from fstbeam.compiler.api import compile_constraints

    cc = compile_constraints(tokenizer=char_vocab(), avoid=[["cab", "cow"]])
    assert [a.text for a in cc.avoid] == ["cab", "cow"]


def test_ordered_with_request_matches_compile_constraints():
    from fstbeam.compiler.api import compile_constraints, with_request

    v = char_vocab()
    base = compile_constraints(tokenizer=v, words=["a", "b", "c", "the", "hero"])
    one = compile_constraints(tokenizer=v, words=["a", "b", "c", "the", "hero"], phrases=[["a", "c"], "b"], ordered=True)
    two = with_request(base, phrases=[["a", "c"], "b"], ordered=True)
    assert len(one.phrases) == len(two.phrases) == 1
    for x, y in zip(one.phrases[0].tables().values(), two.phrases[0].tables().values()):
        np.testing.assert_array_equal(x, y)
    with pytest.raises(UnsatisfiableConstraintError):
        with_request(base, phrases=["New"])


def test_artifact_round_trip_keeps_progress(tmp_path):
    from fstbeam import load_constraints
    from fstbeam.compiler.api import compile_constraints

    v = char_vocab()
    cc = compile_constraints(tokenizer=v, phrases=[AnyOf("New York", "New York City"), "the"], ordered=True)
    cc.save(tmp_path / "x.fstbeam")
    back = load_constraints(tmp_path / "x.fstbeam", tokenizer=v)
    assert back.phrases[0].length == cc.phrases[0].length == len("New York City") + 3
    assert back.phrases[0].items == cc.phrases[0].items
