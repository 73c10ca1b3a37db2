"""The numpy satisfiability search agrees with pynini intersection (the oracle)."""
from __future__ import annotations

import pynini
from hypothesis import given, settings
from hypothesis import strategies as st

from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.light.satisfy import avoidable, phrase_possible, phrases_possible, reachable_pair
from fstbeam.compiler.spec import Phrase
from fstbeam.fst.optimize import sigma_star
from fstbeam.fst.text import contains_fst as contains_text
from fstbeam.fst.wordlist.language import word_list_fst


def contains_fst(p):
    return contains_text(p.text, word_boundary=p.word_boundary, case_sensitive=p.case_sensitive)

words_st = st.lists(st.text(alphabet="abc", min_size=1, max_size=3), min_size=1, max_size=4, unique=True)
text_st = st.text(alphabet="abc .", min_size=1, max_size=5).filter(lambda s: s.strip())


def nonempty(f: pynini.Fst) -> bool:
    return pynini.connect(f.copy()).num_states() > 0


@settings(max_examples=60, deadline=None)
@given(words=words_st, phrase=text_st, prefix=st.one_of(st.none(), text_st), boundary=st.booleans())
def test_phrase_check_matches_pynini(words, phrase, prefix, boundary):
    hard_fst = word_list_fst(words, case_variants=False, contractions=False, digits=False)
    p = Phrase(phrase, word_boundary=boundary)
    start = (prefix or "").encode()
    base = hard_fst if prefix is None else pynini.intersect(hard_fst, pynini.accep(pynini.escape(prefix), token_type="byte") + sigma_star())
    hard = fst_to_dfa(hard_fst)
    got_phrase = reachable_pair(hard, fst_to_dfa(contains_fst(p)), want_other_final=True, start_text=start)
    assert got_phrase == nonempty(pynini.intersect(base, contains_fst(p)))
    got_avoid = reachable_pair(hard, fst_to_dfa(contains_fst(p)), want_other_final=False, start_text=start)
    assert got_avoid == nonempty(pynini.difference(base.optimize(), contains_fst(p)))


@settings(max_examples=80, deadline=None)
@given(words=words_st, phrase=text_st, boundary=st.booleans(), cs=st.booleans())
def test_local_phrase_check_matches_pynini(words, phrase, boundary, cs):
    mixed = [w.upper() if i % 2 else w for i, w in enumerate(words)]
    hard_fst = word_list_fst(mixed, case_variants=False, contractions=False, digits=False)
    p = Phrase(phrase, word_boundary=boundary, case_sensitive=cs)
    got = phrase_possible(fst_to_dfa(pynini.connect(hard_fst)), phrase, word_boundary=boundary, case_sensitive=cs)
    assert got == nonempty(pynini.intersect(hard_fst, contains_fst(p)))


@settings(max_examples=100, deadline=None)
@given(words=words_st, phrases=st.lists(st.text(alphabet="abcA .é", min_size=1, max_size=6).filter(lambda s: s.strip()), max_size=6),
       boundary=st.booleans(), cs=st.booleans())
def test_phrases_checked_together_are_each_checked(words, phrases, boundary, cs):
    """A request's phrases walked together (`phrases_possible`) give `phrase_possible` of each."""
    hard = fst_to_dfa(pynini.connect(word_list_fst(words + ["b.", "A"], case_variants=True, contractions=False, digits=False)))
    got = phrases_possible(hard, phrases, word_boundary=boundary, case_sensitive=cs)
    assert got == [phrase_possible(hard, t, word_boundary=boundary, case_sensitive=cs) for t in phrases]


@settings(max_examples=50, deadline=None)
@given(words=words_st, avoid=st.lists(text_st, min_size=1, max_size=3), prefix=st.one_of(st.none(), text_st))
def test_avoid_list_check_matches_pynini(words, avoid, prefix):
    hard_fst = word_list_fst(words, case_variants=False, contractions=False, digits=False)
    start = (prefix or "").encode()
    base = hard_fst if prefix is None else pynini.intersect(hard_fst, pynini.accep(pynini.escape(prefix), token_type="byte") + sigma_star())
    phrases = [Phrase(a) for a in avoid]
    banned = pynini.union(*(contains_fst(p) for p in phrases)).optimize()
    expected = nonempty(pynini.difference(base.optimize(), banned))
    got = avoidable(fst_to_dfa(hard_fst), [fst_to_dfa(contains_fst(p)) for p in phrases], start_text=start)
    assert got == expected


def test_many_avoid_phrases_stay_fast():
    import time

    import fstbeam
    from fstbeam.contract.vocab import Vocab

    vocab = Vocab.from_dict({i: c.encode() for i, c in enumerate("abcdefghij .")}, eos_ids=[12])
    avoid = [a + b for a in "abcde" for b in "fghij"][:21]
    t = time.perf_counter()
    fstbeam.compile_constraints(words=["abc", "fgh", "ij"], avoid=avoid, tokenizer=vocab)
    assert time.perf_counter() - t < 20  # the union-then-determinize check took > 300 s


@settings(max_examples=80, deadline=None)
@given(phrase=st.text(alphabet="abC .\u00e9", min_size=1, max_size=6).filter(lambda s: s.strip()),
       boundary=st.booleans(), cs=st.booleans())
def test_contains_dfa_equals_the_pynini_construction(phrase, boundary, cs):
    """The linear-time "contains" DFA accepts exactly the language of contains_fst (the oracle)."""
    from fstbeam.compiler.light.satisfy import contains_dfa

    p = Phrase(phrase, word_boundary=boundary, case_sensitive=cs)
    got = contains_dfa(phrase, word_boundary=boundary, case_sensitive=cs)
    # Rebuild an OpenFst acceptor from the DFA and compare languages with pynini.
    f = pynini.Fst()
    for _ in range(got.num_states):
        f.add_state()
    f.set_start(got.start)
    one = pynini.Weight.one(f.weight_type())
    for s in range(got.num_states):
        if got.final[s]:
            f.set_final(s)
        for b in range(1, 256):
            if got.next[s, b] >= 0:
                f.add_arc(s, pynini.Arc(b, b, one, int(got.next[s, b])))
    want = contains_fst(p)
    assert pynini.equivalent(pynini.determinize(f).minimize(), pynini.determinize(want.copy()).minimize())


@settings(max_examples=60, deadline=None)
@given(words=words_st, phrase=text_st, avoid=st.lists(text_st, min_size=1, max_size=2), wb=st.booleans())
def test_joint_phrase_and_avoid_check_matches_pynini(words, phrase, avoid, wb):
    from fstbeam.compiler.light.satisfy import contains_dfa, jointly_possible

    hard_fst = word_list_fst(words, case_variants=False, contractions=False, digits=False)
    p = Phrase(phrase, word_boundary=wb)
    avoids = [Phrase(a, word_boundary=wb) for a in avoid]
    banned = pynini.union(*(contains_fst(a) for a in avoids)).optimize()
    expected = nonempty(pynini.difference(pynini.intersect(hard_fst, contains_fst(p)).optimize(), banned))
    got = jointly_possible(fst_to_dfa(hard_fst), [contains_dfa(phrase, word_boundary=wb)],
                           [contains_dfa(a, word_boundary=wb) for a in avoid])
    assert got == expected


def _accepts(f: pynini.Fst, text: str) -> bool:
    return nonempty(pynini.intersect(f, pynini.accep(pynini.escape(text), token_type="byte")))


@settings(max_examples=80, deadline=None)
@given(words=words_st, phrase=text_st, avoid=st.lists(text_st, min_size=1, max_size=3), pre=st.sampled_from(["", " "]))
def test_a_witness_qualifies_exactly_when_pynini_says_so(words, phrase, avoid, pre):
    """`witness` (the shortcut `jointly_possible` tries first) accepts a text exactly when the
    text is in hard, contains the phrase and none of the avoided ones (pynini on that one text);
    and `jointly_possible` answers the same with and without witnesses."""
    from fstbeam.compiler.light.satisfy import jointly_possible, witness

    hard_fst = word_list_fst(words, case_variants=False, contractions=False, digits=False)
    hard = fst_to_dfa(hard_fst)
    must = [fst_to_dfa(contains_fst(Phrase(phrase)))]
    avoids = [fst_to_dfa(contains_fst(Phrase(a))) for a in avoid]
    for text in (pre + phrase, pre + phrase + " " + words[0], words[0] + " " + phrase):
        expected = (_accepts(hard_fst, text) and _accepts(contains_fst(Phrase(phrase)), text)
                    and not any(_accepts(contains_fst(Phrase(a)), text) for a in avoid))
        assert witness(hard, must, avoids, text.encode()) == expected, text
    plain = jointly_possible(hard, must, avoids)
    assert jointly_possible(hard, must, avoids, witnesses=[(pre + phrase).encode(), phrase.encode()]) == plain
