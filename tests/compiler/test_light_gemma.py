"""Light automata on the real Gemma 3 vocabulary (262,144 ids).

The definitive check that the candidate queries are complete: for every state, the lifted
transition of every token equals a brute-force run of the character DFA over that token's bytes.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from fstbeam.compiler.light.automaton import LightAutomaton, compile_avoid, compile_phrase, compile_prefix
from fstbeam.compiler.light.token_index import TokenIndex

pytestmark = pytest.mark.integration


def brute_force_next(a: LightAutomaton, index: TokenIndex) -> np.ndarray:
    """int32 [n, V]: every token walked byte by byte through the char DFA from every state."""
    dfa = a.char_dfa
    syms = dfa.sym_of_byte[index.padded]  # [V, L]
    cur = np.repeat(a.char_state[:, None].astype(np.int64), index.width, axis=1)  # [n, V]
    for pos in range(index.padded.shape[1]):
        live = np.flatnonzero(index.lengths > pos)
        cur[:, live] = dfa.delta[cur[:, live], syms[live, pos][None, :]]
    light_of = np.full(dfa.n_states, -1, dtype=np.int64)
    light_of[a.char_state] = np.arange(a.n_states)
    out = light_of[cur]
    out[:, index.lengths == 0] = -1  # special / EOS / padding ids are never transitions
    return out


CASES = [
    ("phrase", "New York", {}),
    ("phrase", "C++", {}),
    ("phrase", "naïve", {"case_sensitive": False}),
    ("phrase", "COVID-19", {"word_boundary": False}),
    ("phrase", "e-mail", {}),
    ("phrase", "°C", {}),  # "}°" and ">°" exist: every non-word byte range matters
    ("avoid", "Dr. Smith", {}),
    ("avoid", "the", {"case_sensitive": False}),
    ("prefix", "Hel", {}),
]


def compile_case(kind, text, opts, index):
    if kind == "phrase":
        return compile_phrase(text, index, **opts)
    if kind == "avoid":
        return compile_avoid(text, index, **opts)
    return compile_prefix(text, index)


@pytest.mark.parametrize("kind,text,opts", CASES, ids=[f"{k}-{t}-{o}" for k, t, o in CASES])
def test_every_token_from_every_state(gemma, kind, text, opts):
    _, index = gemma
    a = compile_case(kind, text, opts, index)
    expect = brute_force_next(a, index)
    for q in range(a.n_states):
        got = a.row(q)
        bad = np.flatnonzero(got != expect[q])
        assert bad.size == 0, f"{a.describe()}: state {q}, tokens {bad[:10].tolist()}"
    # exceptions are exactly the tokens that differ from their class default
    n_diff = sum(
        int(((expect[q] != a.default_next[q][np.minimum(index.token_class, 3)]) & (index.token_class < 4)).sum())
        for q in range(a.n_states)
    )
    assert n_diff == a.n_exceptions


def test_prefix_heals_into_hello(gemma):
    vocab, index = gemma
    a = compile_prefix("Hel", index)
    hello = index.ids_equal(b"Hello")
    assert hello.size and all(a.is_final(a.next_state(a.start, int(t))) for t in hello)
    allowed = a.allowed(a.start)
    assert all(vocab.token_bytes[t].startswith(b"Hel") or b"Hel".startswith(vocab.token_bytes[t]) for t in allowed)


SENTENCES = [
    "I moved to New York in 2019.",
    "New Yorkers love the city.",
    "Send me an e-mail, please.",
    "She wrote C++ and C code.",
    "A naïve question about COVID-19 vaccines.",
    "Dr. Smith met Dr. Smithers.",
]


def test_real_tokenizations_against_regex(gemma):
    from tokenizers import Tokenizer

    from fstbeam.files.default_model import default_tokenizer_dir

    vocab, index = gemma
    tok = Tokenizer.from_file(str(default_tokenizer_dir() / "tokenizer.json"))
    phrases = ["New York", "e-mail", "C++", "naïve", "Dr. Smith", "COVID-19"]
    automata = {p: compile_phrase(p, index) for p in phrases}
    for sentence in SENTENCES:
        ids = [i for i in tok.encode(sentence, add_special_tokens=False).ids]
        text = b"".join(vocab.token_bytes[i] for i in ids)
        for p, a in automata.items():
            lit = p.encode()
            w = rb"[A-Za-z0-9\x80-\xff]"
            pat = (rb"(?<!" + w + rb")" if re.match(w, lit[:1]) else b"") + re.escape(lit)
            pat += rb"(?!" + w + rb")" if re.match(w, lit[-1:]) else b""
            q = a.start
            for t in ids:
                q = a.next_state(q, t)
            assert a.is_final(q) == bool(re.search(pat, text)), (p, sentence)
