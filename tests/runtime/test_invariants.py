"""Metamorphic invariants of the decoder (kept live, on tiny models)."""
from __future__ import annotations

import re
import warnings

import pytest

from fstbeam.runtime import Decoder

from rt_helpers import StubLM, tiny_gemma3, tiny_gpt2, tiny_llama, tiny_t5, tiny_vocab

WORD = rb"[A-Za-z0-9\x80-\xff]"


@pytest.fixture(scope="module")
def vocab():
    return tiny_vocab()


def compile_(v, **kw):
    from fstbeam.compiler.api import compile_constraints

    return compile_constraints(tokenizer=v, **kw)


def _occurs(text: bytes, phrase: bytes) -> bool:
    """``phrase`` occurs in ``text`` with a word boundary where its edge is a word byte."""
    left = rb"(?<!" + WORD + rb")" if re.match(WORD, phrase[:1]) else b""
    right = rb"(?!" + WORD + rb")" if re.match(WORD, phrase[-1:]) else b""
    return re.search(left + re.escape(phrase) + right, text) is not None


def _char_accepts(cc, text: bytes) -> bool:
    """The compiler's *character* automaton accepts the text (independent of the token tables)."""
    import pynini

    if cc.char_fst is None:
        return True
    fst = pynini.Fst.read_from_string(cc.char_fst)
    acc = _byte_acceptor(text)
    out = pynini.compose(acc, fst)
    out.connect()
    return out.num_states() > 0


def _byte_acceptor(text: bytes):
    import pynini

    f = pynini.Fst()
    s = f.add_state()
    f.set_start(s)
    for b in text:
        n = f.add_state()
        f.add_arc(s, pynini.Arc(b, b, pynini.Weight.one(f.weight_type()), n))
        s = n
    f.set_final(s)
    return f


SPECS = [
    dict(words=["a", "b", "ab"]),
    dict(words=["a", "b", "ab", "c"], phrases=["b a"]),
    dict(phrases=["c", "a b"], avoid=["ab"]),
    dict(words=["a", "b", "c", "ab"], prefix="a b"),
    dict(words=["a", "b", "c", "ab", "ba"], phrases=["c"], avoid=["b a"]),
]


@pytest.mark.parametrize("beam", [1, 3])
def test_every_finished_output_is_accepted_by_the_character_automaton(vocab, beam):
    """Checked on the decoded text with pynini and regular expressions, not with the tables."""
    lm = StubLM(vocab.width, eos=[0], eos_bias=0.0)
    dec = Decoder(lm, vocab, eos_ids=[0], device="cpu")
    prompts = [[i % 11 + 1, (3 * i) % 11 + 1] for i in range(12)]
    checked = 0
    for spec in SPECS:
        cc = compile_(vocab, **spec)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dec.generate(prompts, cc, beam_size=beam, max_new_tokens=7, batch_size=4)
        for r in res:
            if not r.satisfied:
                continue
            text = b"".join(vocab.token_bytes[t] for t in r.token_ids)
            assert _char_accepts(cc, text), (spec, text)
            for p in spec.get("phrases", ()):
                assert _occurs(text, p.encode()), (spec, text)
            for p in spec.get("avoid", ()):
                assert not _occurs(text, p.encode()), (spec, text)
            if "prefix" in spec:
                assert text.startswith(spec["prefix"].encode()), (spec, text)
            checked += 1
    assert checked >= 40


def test_constraining_on_the_unconstrained_best_reproduces_it(vocab):
    V, L = vocab.width, 3
    lm = StubLM(V, eos=[0], eos_bias=-1.0)
    dec = Decoder(lm, vocab, eos_ids=[0], device="cpu")
    prompts = [[1], [2], [3, 4], [5, 6, 7], [8], [10]]
    free = dec.generate(prompts, None, beam_size=V ** L, max_new_tokens=L)
    checked = 0
    for p, r in zip(prompts, free):
        text = b"".join(vocab.token_bytes[t] or b"" for t in r.token_ids)
        if not text.strip() or any(vocab.token_bytes[t] is None for t in r.token_ids):
            continue
        for kw in (dict(phrases=[text.decode()]), dict(prefix=text.decode())):
            cc = compile_(vocab, **kw)
            [again] = dec.generate([p], cc, beam_size=V ** L, max_new_tokens=L)
            assert again.token_ids == r.token_ids and again.satisfied
            assert again.logprob == pytest.approx(r.logprob, abs=1e-5)
            checked += 1
    assert checked >= 4


MODELS = {"llama": tiny_llama, "gpt2": tiny_gpt2, "gemma3": tiny_gemma3}


@pytest.mark.parametrize("name", list(MODELS))
def test_batch_equals_singles_and_streaming_equals_static(vocab, name):
    """Prompts of different lengths, mixed constraints: one batch, a static batch of 2, a
    streaming batch of 2 refilled at epsilon = 1/2, and each input alone give the same outputs."""
    model = MODELS[name](vocab.width)
    dec = Decoder(model, vocab, eos_ids=[0], device="cpu")
    ccs = [None, compile_(vocab, words=["a", "b", "ab"], phrases=["b a"]), compile_(vocab, phrases=["c"]),
           None, compile_(vocab, words=["a", "b", "c", "ab"], prefix="a b"), compile_(vocab, avoid=["ab"])]
    prompts = [[1, 2, 3, 4, 5, 6, 7], [2], [3, 4], [5, 5, 5, 5, 5], [7, 1], [8, 9, 10, 11]]
    kw = dict(beam_size=3, max_new_tokens=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = dec.generate(prompts, ccs, batch_size=8, **kw)
        static = dec.generate(prompts, ccs, batch_size=2, streaming=False, **kw)
        stream = dec.generate(prompts, ccs, batch_size=2, streaming=True, refill=0.5, **kw)
        singles = [dec.generate([p], c, **kw)[0] for p, c in zip(prompts, ccs)]
    for variant in (static, stream, singles):
        for a, b in zip(whole, variant):
            assert a.token_ids == b.token_ids
            assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
            assert a.steps == b.steps
    assert any(r.token_ids for r in whole)


def test_streaming_equals_static_on_t5(vocab):
    model = tiny_t5(vocab.width)
    dec = Decoder(model, vocab, eos_ids=[0], device="cpu")
    srcs = [[1, 2, 3], [4], [5, 6, 7, 8, 9], [10, 11], [2, 2]]
    cc = compile_(vocab, phrases=["b"])
    kw = dict(beam_size=3, max_new_tokens=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        static = dec.generate(srcs, [cc, None, cc, None, cc], batch_size=2, streaming=False, **kw)
        stream = dec.generate(srcs, [cc, None, cc, None, cc], batch_size=2, streaming=True, refill=0.5, **kw)
        singles = [dec.generate([s], c, **kw)[0] for s, c in zip(srcs, [cc, None, cc, None, cc])]
    for variant in (stream, singles):
        for a, b in zip(static, variant):
            assert a.token_ids == b.token_ids and a.logprob == pytest.approx(b.logprob, abs=1e-4)


@pytest.mark.parametrize("name", ["llama", "t5"])
def test_reported_score_equals_rescoring(vocab, name):
    model = tiny_llama(vocab.width) if name == "llama" else tiny_t5(vocab.width)
    dec = Decoder(model, vocab, eos_ids=[0], device="cpu")
    cc = compile_(vocab, words=["a", "b", "ab", "c"], phrases=["c"])
    prompts = [[1, 2], [3], [4, 5, 6]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dec.generate(prompts, [None, cc, cc], beam_size=3, max_new_tokens=6, nbest=2)
    for p, r in zip(prompts, res):
        for h in r.hypotheses:
            again = dec.score(p, h.token_ids, eos=h.finish_reason == "eos")
            assert h.logprob == pytest.approx(again, abs=1e-4)


def test_unsatisfiable_in_length_is_flagged_and_stays_constrained(vocab):
    lm = StubLM(vocab.width, eos=[0])
    dec = Decoder(lm, vocab, eos_ids=[0], device="cpu")
    tight = compile_(vocab, words=["a", "b", "ab"], phrases=["a b a b a"])  # needs >= 5 tokens
    ok = compile_(vocab, words=["a", "b", "ab"])
    with pytest.warns(UserWarning, match="satisf"):
        res = dec.generate([[1], [2]], [tight, ok], beam_size=3, max_new_tokens=3)
    bad, good = res
    assert not bad.satisfied and bad.finish_reason == "incomplete" and bad.phrases_met == (False,)
    assert any("max_new_tokens" in w for w in bad.warnings)
    m = tight.matcher()  # the partial output still obeys the word list (never unconstrained text)
    for t in bad.token_ids:
        m.advance(t)
    assert good.satisfied
    [alone] = dec.generate([[2]], ok, beam_size=3, max_new_tokens=3)
    assert alone.token_ids == good.token_ids  # the other input is unaffected


def test_extra_eos_ids_end_outputs_only_where_the_constraints_accept(vocab):
    """``eos_ids`` per call (e.g. newline tokens to stop at a line end): such a token ends the
    output, is never part of the text (even where the word list allows it as text), and is
    allowed only in accepting states."""
    lm = StubLM(vocab.width, eos=[5], eos_bias=4.0)  # " a" (5) is very likely everywhere
    dec = Decoder(lm, vocab, eos_ids=[0], device="cpu")
    cc = compile_(vocab, words=["a", "b", "ab"], phrases=["b ab"])  # " a" is text in this language
    res = dec.generate([[1], [2], [3], [4], [6], [7]], cc, beam_size=3, max_new_tokens=6, eos_ids=[0, 5])
    for r in res:
        assert 5 not in r.token_ids
        m = cc.matcher()
        for t in r.token_ids:
            m.advance(t)
        assert r.satisfied and m.is_final()
