"""``leading_space=True``: the output may start with one space before the hard language's text.

Checked token by token (the compiled tables, through the matcher) against the *character*
automaton of the same constraints compiled without the option: a token sequence is accepted iff
its text, or its text minus one leading space, is in the base language."""
from __future__ import annotations

import itertools

import pynini
import pytest

from fstbeam.compiler.api import compile_constraints
from fstbeam.contract.vocab import Vocab
from fstbeam.errors import DisallowedTokenError, SpecError

TOKENS = {1: b"a", 2: b"b", 3: b" ", 4: b"ab", 5: b" a", 6: b" b", 7: b".", 8: b"  ", 9: b"c"}


@pytest.fixture(scope="module")
def vocab():
    return Vocab.from_dict(TOKENS, eos_ids=[0])


def _char_accepts(cc, text: bytes) -> bool:
    fst = pynini.Fst.read_from_string(cc.char_fst)
    acc = pynini.accep(text.decode("latin-1").replace("[", "\\[").replace("]", "\\]"), token_type="byte") if text else pynini.accep("")
    out = pynini.compose(acc, fst)
    out.connect()
    return out.num_states() > 0


def _token_accepts(cc, ids) -> bool:
    m = cc.matcher()
    try:
        for t in ids:
            m.advance(t)
    except DisallowedTokenError:
        return False
    return m.is_final()


@pytest.mark.parametrize("spec", [dict(words=["a", "b", "ab"]), dict(words=["ab", "c"], phrases=["c"])])
def test_leading_space_adds_exactly_one_optional_space(vocab, spec):
    base = compile_constraints(tokenizer=vocab, **spec)
    lead = compile_constraints(tokenizer=vocab, leading_space=True, **spec)
    assert lead.spec_hash != base.spec_hash
    seen_lead = 0
    for n in range(1, 5):
        for ids in itertools.product(sorted(TOKENS), repeat=n):
            text = b"".join(TOKENS[i] for i in ids)
            in_base = _char_accepts(base, text)
            want = in_base or (text[:1] == b" " and _char_accepts(base, text[1:]))
            # light automata (phrases) are unchanged by the option: compare on the hard language
            if spec.get("phrases"):
                want = want and b"c" in text
                in_base = in_base and b"c" in text
            assert _token_accepts(lead, ids) == want, (ids, text)
            assert _token_accepts(base, ids) == in_base, (ids, text)
            seen_lead += want and not in_base
    assert seen_lead > 0


def test_leading_space_needs_a_word_list_or_grammar(vocab):
    with pytest.raises(SpecError, match="leading_space"):
        compile_constraints(tokenizer=vocab, phrases=["a"], leading_space=True)
