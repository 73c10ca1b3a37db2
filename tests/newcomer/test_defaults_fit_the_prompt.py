"""Issue 39, "defaults that fit the prompt": the Python API applies the prompt format's preset as
every other door does; an output ends at its line where the prompt asks for one line; an empty
output says why; leading_space="auto" works for every constraint kind; reprs are short."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import warnings

import fstbeam
from fstbeam.runtime.presets import search_config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runtime"))
from rt_helpers import StubLM  # noqa: E402

PROMPTS = ["the cat", "a dog ran", "on a"]
KW = dict(beam_size=3, max_new_tokens=8)


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def _facts(results):
    return [(r.text, round(r.score, 4), r.finish_reason) for r in results]


def test_the_api_default_is_the_prompt_formats_preset(tiny_decoder):
    """The same call through the API without preset=, with preset="auto", and through a batch
    worker (the door that always applied the format's preset) gives the same outputs."""
    dec = tiny_decoder
    assert dec.preset == "continuation"
    default = _quiet(dec.generate, PROMPTS, **KW)
    auto = _quiet(dec.generate, PROMPTS, preset="auto", **KW)
    assert _facts(default) == _facts(auto)
    # the batch door's config for the same format (what it always applied)
    cfg = search_config("continuation", KW)
    assert _facts(_quiet(dec.generate, PROMPTS, None, cfg)) == _facts(default)
    # a config of the user's own: its settings over the preset, as keywords are
    assert _facts(_quiet(dec.generate, PROMPTS, None, fstbeam.SearchConfig(**KW))) == _facts(default)
    # log-probability ranking alone is still there, by name: a different search (no length reward)
    plain = _quiet(dec.generate, PROMPTS, preset="plain", **KW)
    assert [r.score for r in plain] != [r.score for r in default]


def test_a_door_built_config_is_taken_whole(tiny_decoder):
    """`fstbeam generate --preset plain` builds a plain config: the decoder must not put its
    format's preset back on top of it."""
    plain_cfg = search_config("plain", KW)
    by_config = _quiet(tiny_decoder.generate, PROMPTS, None, plain_cfg)
    by_name = _quiet(tiny_decoder.generate, PROMPTS, preset="plain", **KW)
    assert _facts(by_config) == _facts(by_name)


def _line_vocab():
    from fstbeam.contract.vocab import Vocab

    toks = ["<eos>", "a", "b", "\n", " a", "\n\n", " b", "G", ":", "x"]
    return Vocab.from_dict({i: t for i, t in enumerate(toks) if i}, eos_ids=[0])


def test_a_prompt_ending_in_a_cue_line_is_answered_in_one_line():
    """stop_at="auto" (the raw format's preset): a prompt whose last line is a cue ("German:")
    after other text ends its output at a newline token, as stop_at="line" does; any other
    prompt runs to EOS, as stop_at="eos" does; a mixed call keeps each rule and the order."""
    v = _line_vocab()
    dec = fstbeam.Decoder(StubLM(v.width, eos=[0], eos_bias=-3.0, scale=2.0), v, eos_ids=[0], device="cpu")
    cue = [1, 3, 7, 8]  # "a\nG:"
    plain = [1, 2]  # "ab"
    kw = dict(beam_size=3, max_new_tokens=6)
    mixed = _quiet(dec.generate, [cue, plain, cue], **kw)
    line = _quiet(dec.generate, [cue], stop_at="line", preset="continuation", **kw)
    eos = _quiet(dec.generate, [plain], stop_at="eos", preset="continuation", **kw)
    assert [r.index for r in mixed] == [0, 1, 2]
    assert mixed[0].token_ids == line[0].token_ids == mixed[2].token_ids
    assert mixed[1].token_ids == eos[0].token_ids
    # the rule made a difference: without it the cue prompt's output goes past a newline
    through = _quiet(dec.generate, [cue], stop_at="eos", preset="continuation", **kw)
    assert through[0].token_ids != line[0].token_ids
    # ordered streaming over a lazy source reads the inputs one at a time and keeps the order
    got = [r.index for r in _quiet(lambda: list(dec.stream(iter([cue, plain, plain, cue]), ordered=True, **kw)))]
    assert got == [0, 1, 2, 3]
    assert dec.ends_at_line(cue) and not dec.ends_at_line(plain)


def test_the_cue_rule_reads_the_formatted_prompt(tiny_dir):
    dec = fstbeam.Decoder(str(tiny_dir), device="cpu", prompt_format="English: {prompt}\nGerman:")
    assert dec.ends_at_line("the cat")
    raw = fstbeam.Decoder(str(tiny_dir), device="cpu", prompt_format="raw")
    assert raw.ends_at_line("English: the cat\nGerman:") and not raw.ends_at_line("the cat sat")
    assert not raw.ends_at_line("German:")  # a cue alone asks for nothing in particular


def test_an_empty_output_says_why():
    """A model that ranks EOS first, under log-probability ranking: the empty output carries a
    warning naming the cause and the way out."""
    v = _line_vocab()
    dec = fstbeam.Decoder(StubLM(v.width, eos=[0], eos_bias=8.0), v, eos_ids=[0], device="cpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [r] = dec.generate([[1, 2]], preset="plain", beam_size=2, max_new_tokens=4)
    assert r.text == "" and r.error is None
    assert r.warnings and "empty" in r.warnings[0] and "preset" in r.warnings[0]
    assert any("empty" in str(w.message) for w in caught)


def test_leading_space_auto_is_ignored_without_a_word_list(tiny_decoder):
    """The README's leading_space="auto" with avoid- or prefix-only constraints compiles (there is
    nothing for it to do) instead of failing with an error that names True."""
    for kw in (dict(avoid=["dog"]), dict(prefix=" the"), dict(phrases=["cat"])):
        cc = fstbeam.compile_constraints(tokenizer=tiny_decoder, leading_space="auto", **kw)
        same = fstbeam.compile_constraints(tokenizer=tiny_decoder, **kw)
        assert cc.fingerprint == same.fingerprint, kw
    # with a word list it still decides by the prompt format (raw: continued text, so a space)
    words = fstbeam.compile_constraints(tokenizer=tiny_decoder, words=["cat", "dog"], leading_space="auto")
    spaced = fstbeam.compile_constraints(tokenizer=tiny_decoder, words=["cat", "dog"], leading_space=True)
    assert words.fingerprint == spaced.fingerprint


def test_a_cut_output_says_length_at_every_door(tiny_dir, tiny_decoder, capsys):
    """An output the length limit cut has finish_reason "length" (satisfied stays about the
    constraints) in the API, --jsonl and the text lines of fstbeam generate."""
    from fstbeam.cli.generate import main

    args = ["generate", "--model", str(tiny_dir), "--device", "cpu", "--format", "raw", "--max-new-tokens", "3",
            "--beam", "2", "--preset", "plain", "--min-new-tokens", "2"]
    main(args + ["--jsonl", *PROMPTS])
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    api = _quiet(tiny_decoder.generate, PROMPTS, preset="plain", beam_size=2, max_new_tokens=3, min_new_tokens=2)
    assert [r["finish_reason"] for r in rows] == [r.finish_reason for r in api]
    cut = [i for i, r in enumerate(rows) if r["finish_reason"] == "length"]
    assert cut, "the limit of 3 tokens cut no output: the test needs one"
    main(args + PROMPTS)
    out = capsys.readouterr().out
    assert out.count("cut at the length limit") == len(cut)
    main(args + ["--phrase", "the", *PROMPTS])
    lines = capsys.readouterr().out.splitlines()
    sat = [x for x in lines if x.strip().startswith("satisfied:")]
    assert any("cut at the length limit" in x for x in sat) or all("NO" in x for x in sat)


def test_reprs_are_one_short_line(tiny_decoder):
    cc = fstbeam.compile_constraints(tokenizer=tiny_decoder, words=["cat", "dog", "the"], phrases=["cat"],
                                     avoid=["dog"], leading_space=True)
    [r] = _quiet(tiny_decoder.generate, ["the cat"], cc, **KW)
    for obj in (cc, r, r.hypotheses[0], tiny_decoder):
        text = repr(obj)
        assert "\n" not in text and len(text) < 400, text[:500]
    assert "phrases=['cat']" in repr(cc) and "avoid=['dog']" in repr(cc)
    assert f"finish_reason={r.finish_reason!r}" in repr(r) and "satisfied=" in repr(r)
    assert "preset='continuation'" in repr(tiny_decoder)
    assert dataclasses.is_dataclass(r)  # still a dataclass: fields, to_dict, equality unchanged


def test_an_empty_output_says_why_at_the_batch_and_cli_doors(tiny_dir, capsys):
    """The tiny model ends at once under log-probability ranking: a batch row and the command's
    lines carry the reason, as the API does."""
    from fstbeam.cli.generate import main
    from fstbeam.distributed.worker import DecodeWorker

    worker = DecodeWorker(model=str(tiny_dir), device="cpu", prompt_format="raw", preset="plain", beam_size=2,
                          max_new_tokens=4)
    rows = worker.decode_rows([{"prompt": p} for p in PROMPTS], first_index=0)
    empty = [r for r in rows if not r["text"].strip()]
    assert empty, "the tiny model gave no empty output: the test needs one"
    assert all(r["warnings"] and "empty" in r["warnings"][0] and not r["warnings"][0].startswith("input ") for r in empty)
    main(["generate", "--model", str(tiny_dir), "--device", "cpu", "--format", "raw", "--preset", "plain",
          "--beam", "2", "--max-new-tokens", "4", *PROMPTS])
    out = capsys.readouterr().out
    assert out.count("warning: ") >= len(empty) and "the output is empty" in out
