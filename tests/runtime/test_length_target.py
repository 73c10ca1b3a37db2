"""The length target's query (fstbeam.runtime.search.length_target): the rule on hand-built prompts, the
token count against a byte-level oracle, and the Decoder using it for ``length_ratio``."""
from __future__ import annotations

import warnings

import pytest

from fstbeam.runtime.search.length_target import query_span, query_tokens

FEW_SHOT = ("Words: dog, frisbee, catch\nSentence: A dog catches a frisbee.\n\n"
            "Words: chef, pan, cook\nSentence: A chef cooks in a pan.\n\n"
            "Words: drill, field, run\nSentence:")


def q(text: str) -> str:
    b = text.encode()
    s, e = query_span(b)
    return b[s:e].decode()


@pytest.mark.parametrize("prompt,query", [
    (FEW_SHOT, "Words: drill, field, run"),  # last block, the "Sentence:" cue dropped
    (FEW_SHOT + " A", "Words: drill, field, run\nSentence: A"),  # a started answer is no bare cue
    ("English: Hi.\nGerman: Hallo.\n\nEnglish: The cat sat.\nGerman:\n", "English: The cat sat."),
    ("Words: a, b\nSentence: A b.\nWords: c, d\nSentence:", "Words: c, d"),  # no blank line: the last line
    ("What do you do on Sunday mornings?", "What do you do on Sunday mornings?"),
    ("Answer:", "Answer:"),  # a cue alone is all there is
    ("Once upon a time\nthere was", "there was"),
    ("Intro.\n \t\nÜbersetze bitte: Der Hund.\nEnglisch:", "Übersetze bitte: Der Hund."),
    ("Words: a\nThe answer to the question is:", "The answer to the question is:"),  # > 3 words: not a cue
    ("  \n\n  padded line  \n", "padded line"),
])
def test_query_span(prompt, query):
    assert q(prompt) == query


def test_query_tokens_counts_overlapping_tokens_only():
    # tokens: 0 control (no bytes), then pieces that straddle the query's start
    table = [None, b"Words: a", b"\n\n", b"Wor", b"ds: b", b"\nSen", b"tence:"]
    ids = [0, 1, 2, 3, 4, 5, 6]
    assert q("Words: a\n\nWords: b\nSentence:") == "Words: b"
    assert query_tokens(ids, table) == 2  # "Wor" and "ds: b"; "\nSen" starts after the query
    straddle = [None, b"x\n\nWo", b"rds: b"]
    assert query_tokens([0, 1, 2], straddle) == 2  # a token holding the blank line and the query's start counts
    assert query_tokens([0], [None]) == 1  # nothing to measure: at least 1


@pytest.mark.parametrize("prompt", [FEW_SHOT, "plain sentence", "a\n\nb\n\nc d e\nX:", "Tú:\n\nCafé con leche y pan\nEspañol:"])
def test_query_tokens_byte_level_oracle(prompt):
    table = [bytes([i]) for i in range(256)]
    ids = list(prompt.encode())
    assert query_tokens(ids, table) == len(q(prompt).encode())


def _decoder():
    from fstbeam.contract.vocab import Vocab
    from fstbeam.runtime import Decoder

    from rt_helpers import tiny_llama

    toks = ["<eos>", "a", "b", " ", "\n", "\n\n", "Q:", "A:", ".", "c"]
    v = Vocab.from_dict({i: t for i, t in enumerate(toks) if i}, eos_ids=[0], width=len(toks))
    return Decoder(tiny_llama(len(toks), seed=3, scale=2.0), v, eos_ids=[0], device="cpu")


def test_decoder_length_ratio_uses_the_query():
    dec = _decoder()
    # three examples, then the query "Q: a b c" (4 tokens) and its cue "A:"
    shot = [6, 3, 1, 4, 7, 3, 2, 8, 5]
    prompt = shot * 3 + [6, 3, 1, 3, 2, 3, 9, 4, 7]
    assert dec.query_tokens(prompt, prompt) == 7  # "Q:", " ", "a", " ", "b", " ", "c"
    kw = dict(beam_size=4, max_new_tokens=12, length_reward=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_ratio = dec.generate([prompt], length_ratio=1.0, **kw)[0]
        by_query = dec.generate([prompt], target_length=7, **kw)[0]
        by_all = dec.generate([prompt], target_length=len(prompt), **kw)[0]
    assert by_ratio.token_ids == by_query.token_ids
    assert by_ratio.score == pytest.approx(by_query.score)
    for r, target in ((by_ratio, 7), (by_all, len(prompt))):  # the objective: logp + r * min(l, |y|)
        n = len(r.token_ids) + (r.finish_reason == "eos")
        assert r.score == pytest.approx(r.logprob + 1.0 * min(target, n), abs=1e-4)


def _char_decoder(fmt):
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from fstbeam.runtime import Decoder

    from rt_helpers import tiny_llama

    chars = ["<eos>"] + list("abcdefghijklmnopqrstuvwxyzQA: .\n")
    t = Tokenizer(models.WordLevel({c: i for i, c in enumerate(chars)}, unk_token="<eos>"))
    t.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok = PreTrainedTokenizerFast(tokenizer_object=t, eos_token="<eos>")
    tok.chat_template = "{% for m in messages %}Q: {{ m['content'] }}\n{% endfor %}A:"
    return Decoder(tiny_llama(len(chars)), tok, eos_ids=[0], device="cpu", prompt_format=fmt)


@pytest.mark.parametrize("fmt,prompt,expected", [
    ("raw", "Q: x\nA: y\n\nQ: ab c\nA:", len("Q: ab c")),  # the last block, one token per character
    ("Question: {prompt}\nAnswer:", "ab c", len("ab c")),  # the user's text, not the template's words
    ("Question: {prompt}\nAnswer:", "ab\n\nwhy so", len("why so")),  # and of it, the last block
    ("chat", "why not", len("why not")),
])
def test_decoder_query_of_each_prompt_format(fmt, prompt, expected):
    dec = _char_decoder(fmt)
    ids = dec.encode(prompt)
    assert len(ids) > expected
    assert dec.query_tokens(prompt, ids) == expected


def test_a_prompt_that_is_all_query_counts_every_token():
    """Where the query is the whole prompt, q is the prompt's length, control tokens (BOS)
    included, as before the query rule; a few-shot prompt still counts its query only."""
    table = [None, b"The cat", b" sat", b"\n\n", b"Dogs", b" run"]
    assert query_tokens([0, 1, 2], table) == 3
    assert query_tokens([0, 1, 2, 3, 4, 5], table) == 2
