"""``GenerationResult.explain()`` and ``fstbeam generate --explain`` on a tiny random model.

Oracles: each token's log-probability against ``Decoder.score`` of the growing output (an
independent forward pass per prefix); the end term against the EOS log-probability; the
unconstrained score against a separate unconstrained search; the marks against the text."""
from __future__ import annotations

import json
import math

import pytest

import fstbeam
from fstbeam.runtime.decoder import Decoder

from rt_helpers import tiny_llama

TOKENS = ["<eos>", "I", " like", " my", " family", " tea", " the", " cat", ".", " dog", "my", " fam", "ily", "The",
          " and", " a"]


@pytest.fixture(scope="module")
def dec():
    v = fstbeam.Vocab.from_dict({i: t for i, t in enumerate(TOKENS) if i}, eos_ids=[0], width=len(TOKENS))
    return Decoder(tiny_llama(len(TOKENS), seed=3, scale=2.0), v, eos_ids=[0], device="cpu")


PROMPT = [1, 2, 5, 8]  # "I like tea."
CFG = {"beam_size": 4, "max_new_tokens": 8, "length_reward": 0.5, "target_length": 6}


def _check_common(dec, r, e):
    ids = list(r.token_ids)
    assert [t.token_id for t in e.tokens] == ids and e.text == r.text
    for k, t in enumerate(e.tokens):  # each token's log-probability, from a separate forward pass
        want = dec.score(PROMPT, ids[: k + 1], eos=False) - dec.score(PROMPT, ids[:k], eos=False) if k else \
            dec.score(PROMPT, ids[:1], eos=False)
        assert t.logprob == pytest.approx(want, abs=1e-4)
    if r.finish_reason == "eos":
        eos = dec.score(PROMPT, ids, eos=True) - dec.score(PROMPT, ids, eos=False)
        assert e.end_logprob == pytest.approx(eos, abs=1e-3)
    assert sum(t.logprob for t in e.tokens) + e.end_logprob == pytest.approx(r.logprob, abs=1e-3)
    assert e.length_term == pytest.approx(r.score - r.logprob) and e.length_mode == "reward"
    # r * min(l, |y|), the end token counted in |y|
    assert e.length_term == pytest.approx(0.5 * min(6, len(ids) + (r.finish_reason == "eos")), abs=1e-4)
    [u] = dec.generate([PROMPT], None, **CFG)
    assert e.unconstrained_score == pytest.approx(u.score) and e.unconstrained_text == u.text
    assert e.unconstrained_logprob == pytest.approx(u.logprob)
    assert e.difference == pytest.approx(r.score - u.score)
    d = e.to_dict()
    assert json.loads(json.dumps(d))["difference"] == pytest.approx(e.difference)


def _span_texts(e, kind="phrase"):
    return [e.text[s.start:s.end] for s in e.spans if s.kind == kind]


def test_a_phrase_is_marked_where_it_was_met(dec):
    cc = fstbeam.compile_constraints(tokenizer=dec.vocab, phrases=["my family"])
    [r] = dec.generate([PROMPT], cc, **CFG)
    assert r.satisfied
    e = r.explain()
    _check_common(dec, r, e)
    assert _span_texts(e) == ["my family"]
    met = [k for k, t in enumerate(e.tokens) if any("met" in a for a in t.advanced)]
    assert len(met) == 1
    upto = "".join(t.text for t in e.tokens[: met[0] + 1])
    assert "my family" in upto and "my family" not in "".join(t.text for t in e.tokens[: met[0]])
    plain, colored = e.render(False), e.render(True)
    assert "[my family]" in plain and "\x1b" not in plain
    assert "\x1b[1;32mmy family\x1b[0m" in colored
    assert "phrase 'my family'" in plain and "difference" in plain


def test_any_of_marks_the_alternative_that_appeared(dec):
    cc = fstbeam.compile_constraints(tokenizer=dec.vocab, phrases=[fstbeam.AnyOf("my family", "the cat")])
    [r] = dec.generate([PROMPT], cc, **CFG)
    e = r.explain()
    _check_common(dec, r, e)
    assert r.satisfied and len(_span_texts(e)) == 1 and _span_texts(e)[0] in ("my family", "the cat")


def test_prefix_and_avoid_say_what_each_token_did(dec):
    cc = fstbeam.compile_constraints(tokenizer=dec.vocab, prefix="The cat", avoid=["cat and"])
    [r] = dec.generate([PROMPT], cc, **CFG)
    e = r.explain()
    _check_common(dec, r, e)
    assert r.text.startswith("The cat") and "cat and" not in r.text
    assert _span_texts(e, "prefix") == ["The cat"]
    assert "prefix 'The cat' 3/7" in e.tokens[0].advanced and "prefix 'The cat' done" in e.tokens[1].advanced
    assert "avoid 'cat and': 3/7 bytes matched (must not complete)" in e.tokens[1].advanced
    assert "{The cat}" in e.render(False)


def test_word_list_and_unconstrained(dec):
    cc = fstbeam.compile_constraints(tokenizer=dec.vocab, words=["the", "cat", "dog", "a", "and", "."])
    [r] = dec.generate([PROMPT], cc, **CFG)
    e = r.explain()
    _check_common(dec, r, e)
    assert e.constraints == ("every word from the word list",) and not e.spans
    assert all(not t.advanced for t in e.tokens)
    [u] = dec.generate([PROMPT], None, **CFG)
    eu = u.explain()
    assert eu.difference == 0 and not eu.constraints


def test_renormalized_logprobs_are_over_the_allowed_tokens(dec):
    cc = fstbeam.compile_constraints(tokenizer=dec.vocab, words=["the", "cat", "dog"])
    [r] = dec.generate([PROMPT], cc, beam_size=3, max_new_tokens=5, renormalize=True)
    e = r.explain(unconstrained=False)
    assert e.unconstrained_score is None and e.notes
    if r.finish_reason == "eos":
        assert sum(t.logprob for t in e.tokens) + e.end_logprob == pytest.approx(r.logprob, abs=1e-3)
    assert all(t.logprob <= 0 for t in e.tokens)
    full = dec.score(PROMPT, list(r.token_ids), eos=False)
    assert sum(t.logprob for t in e.tokens) >= full - 1e-4  # fewer competitors: never lower
    assert math.isfinite(e.score)


def test_cli_explain_in_text_and_json(tmp_path, capsys):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from fstbeam.cli.main import main

    d = tmp_path / "m"
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["a cat and a dog. the cat sat on a mat."] * 20, vocab_size=300, min_frequency=1,
                            special_tokens=["<eos>"], show_progress=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<eos>")
    tok.save_pretrained(d)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                                 eos_token_id=tok.eos_token_id, bos_token_id=None, pad_token_id=None)).save_pretrained(d)
    base = ["generate", "--model", str(d), "--device", "cpu", "--phrase", "cat", "--beam", "3", "--max-new-tokens", "6",
            "--format", "raw", "--explain", "the dog"]
    assert main(base + ["--jsonl"]) in (0, 1)
    [o] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    ex = o["explain"]
    assert [t["token_id"] for t in ex["tokens"]] == o["token_ids"] and ex["score"] == pytest.approx(o["score"])
    assert {"spans", "length_term", "unconstrained_score", "difference", "end_logprob"} <= set(ex)
    assert main(base) in (0, 1)
    out = capsys.readouterr().out
    assert "output" in out and "unconstrained" in out and "log-prob" in out and "\x1b" not in out  # not a TTY
