"""The compiler on the real Gemma 3 tokenizer (262,144 ids) and a real CEFR word list."""
from __future__ import annotations

import random

import numpy as np
import pytest

import fstbeam
from fstbeam.compiler.char_dfa import fst_to_dfa
from fstbeam.compiler.pipeline import _words_spec
from fstbeam.fst.wordlist.language import word_list_fst

pytestmark = pytest.mark.integration

VALID = [
    "I like my family.",
    "I'm ten, and my sister is six.",
    "We play football on Sunday!",
    "Do you like cats? I don't.",
    "THE DOG IS BIG.",
    "She has 2 brothers (and a sister).",
    "It's a big blue-green book.",
    "Where is the school?\nIt is near the park.",
]
INVALID = ["I like quantum physics.", "My  name", "the dog ,is", "xylophone", "cats??!!", " I like"]


@pytest.fixture(scope="module")
def a1():
    return fstbeam.compile_constraints(cefr="A1", tokenizer="default")


@pytest.fixture(scope="module")
def tok():
    from tokenizers import Tokenizer

    from fstbeam.files.default_model import default_tokenizer_dir

    return Tokenizer.from_file(str(default_tokenizer_dir() / "tokenizer.json"))


@pytest.fixture(scope="module")
def a1_dfa():
    return fst_to_dfa(word_list_fst(_words_spec(None, "A1").words))


def test_canonical_tokenizations_of_valid_sentences_are_never_blocked(a1, tok, a1_dfa):
    for text in VALID:
        assert a1_dfa.accepts(text.encode()), text  # the sentence really is in the language
        m = a1.matcher()
        for t in tok.encode(text, add_special_tokens=False).ids:
            assert t in set(m.allowed_token_ids().tolist()), (text, t)
            m.advance(t)
        assert m.is_final(), text
        assert set(a1.eos_ids) <= set(m.allowed_token_ids().tolist())


def test_invalid_strings_are_rejected(a1, tok, a1_dfa):
    for text in INVALID:
        assert not a1_dfa.accepts(text.encode())
        m = a1.matcher()
        rejected = False
        for t in tok.encode(text, add_special_tokens=False).ids:
            if t not in set(m.allowed_token_ids().tolist()):
                rejected = True
                break
            m.advance(t)
        assert rejected or not m.is_final(), text


def test_random_sampled_invalid_strings_are_rejected(a1, tok, a1_dfa):
    rng = random.Random(0)
    alphabet = "abcdefghijklmnopqrstuvwxyz ,.!'-"
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(3, 12)))
        ids = tok.encode(text, add_special_tokens=False).ids
        m = a1.matcher()
        ok = True
        for t in ids:
            if m.hard_state is None or a1.hard.next_state(m.hard_state, t) < 0:
                ok = False
                break
            m.advance(t)
        assert (ok and m.is_final()) == a1_dfa.accepts(text.encode()), text


@pytest.mark.parametrize("prefix", ["", "I like", "My sister is si", "We play football.", "Hi (", "it's"])
def test_allowed_set_after_prefix_equals_brute_force(a1, tok, a1_dfa, prefix):
    """Every one of the 262,144 tokens checked against the character automaton directly."""
    m = a1.matcher()
    for t in tok.encode(prefix, add_special_tokens=False).ids:
        m.advance(t)
    q = a1_dfa.run(prefix.encode()) if prefix else a1_dfa.start
    assert q >= 0
    nxt, final = a1_dfa.next, a1_dfa.final
    expected = []
    for i, b in enumerate(a1.vocab.token_bytes):
        if not b:
            continue
        s = q
        for byte in b:
            s = nxt[s, byte]
            if s < 0:
                break
        if s >= 0:
            expected.append(i)
    got = m.allowed_token_ids()
    got_text = got[~np.isin(got, a1.eos_ids)]
    assert np.array_equal(got_text, np.array(expected)), prefix
    assert (set(a1.eos_ids) <= set(got.tolist())) == bool(final[q])


def test_table_size_and_factoring(a1):
    assert a1.hard.nbytes <= 32 * 2**20
    assert len(a1.hard.dense_masks) < 64  # fan-out shared, not one row per state


def test_canonical_only_keeps_the_tokenizers_own_spellings(a1, tok):
    canon = fstbeam.compile_constraints(cefr="A1", tokenizer="default", canonical=True)
    assert len(canon.hard.block_key) < len(a1.hard.block_key)
    for text in VALID[:4]:
        m = canon.matcher()
        for t in tok.encode(text, add_special_tokens=False).ids:
            m.advance(t)
        assert m.is_final(), text
    # byte-fallback tokens spell the same text but are never the tokenizer's own choice here
    fallback = [i for i, b in enumerate(a1.vocab.token_bytes) if b == b"q"]
    m_all, m_canon = a1.matcher(), canon.matcher()
    allowed_all, allowed_canon = set(m_all.allowed_token_ids().tolist()), set(m_canon.allowed_token_ids().tolist())
    assert allowed_canon < allowed_all
    assert any(t in allowed_all and t not in allowed_canon for t in fallback)


def test_canonical_works_after_a_compile_from_the_bare_vocabulary(tok, monkeypatch):
    """The process's Compiler for a tokenizer must not stay the one a bare Vocab made first: that
    one cannot run the tokenizer that canonical=True needs (it failed only on a cold disk cache)."""
    from fstbeam.contract.vocab import load_vocab

    monkeypatch.setenv("FSTBEAM_NO_DISK_CACHE", "1")
    fstbeam.compile_constraints(words=["cat", "dog"], tokenizer=load_vocab("default"))
    canon = fstbeam.compile_constraints(words=["cat", "dog"], tokenizer="default", canonical=True)
    m = canon.matcher()
    for t in tok.encode("cat dog", add_special_tokens=False).ids:
        m.advance(t)
    assert m.is_final()


@pytest.mark.parametrize("kwargs, text", [
    (dict(json_schema={"type": "object", "properties": {"html": {"type": "string", "maxLength": 60}}}),
     '{"html":"<h1>Title</h1><table><tr><td>1</td></tr></table>"}'),
    (dict(json_schema={"type": "object"}), '{"a":{"b":"<b>bold</b> and <em>more</em>"}}'),
    (dict(regex=r"<(h[1-6]|p)>[a-z ]+</(h[1-6]|p)>"), "<h2>hello there</h2>"),
])
def test_html_tag_tokens_are_text_in_structured_output(tok, kwargs, text):
    """Gemma spells every "<h1>" with its added tag token: a valid text holding HTML walks through
    the masks in the tokenizer's own spelling (llguidance refuses those tokens), and so does the
    spelling by single characters."""
    cc = fstbeam.compile_constraints(tokenizer="default", **kwargs)
    canonical = tok.encode(text, add_special_tokens=False).ids
    tag_ids = {i for i, a in tok.get_added_tokens_decoder().items() if a.content.strip("</>").isalnum()}
    assert tag_ids & set(canonical), canonical  # the spelling does use a tag token
    by_chars = [t for ch in text for t in tok.encode(ch, add_special_tokens=False).ids]
    image = tok.token_to_id("<start_of_image>")
    for ids in (canonical, by_chars):
        m = cc.matcher()
        for t in ids:
            allowed = set(m.allowed_token_ids().tolist())
            assert t in allowed, (text, tok.decode([t]))
            assert image not in allowed  # where a tag may come, a control token still may not
            m.advance(t)
        assert m.is_final(), text
