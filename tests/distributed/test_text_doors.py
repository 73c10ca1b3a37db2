"""``text`` is the same in every door: the decoded output exactly as generated, with the leading
space that continues a prompt (" sat on a mat" after "the cat"), so ``prompt + text`` is the
whole text. Only the human-readable lines of ``fstbeam generate`` (text mode and ``-q``) show
it without the surrounding white space."""
from __future__ import annotations

import json

from batch_helpers import SEARCH, read_shards, write_jsonl

import fstbeam
from fstbeam.cli.main import main

PROMPTS = ["the cat", "a dog", "on a"]


def test_text_is_the_same_in_the_api_generate_jsonl_and_batch(model_dir, words_artifact, tmp_path, capsys):
    dec = fstbeam.Decoder(str(model_dir), device="cpu", prompt_format="raw")
    cc = fstbeam.load_constraints(words_artifact, tokenizer=dec.tokenizer)
    api = [r.text for r in dec.generate(PROMPTS, cc, **SEARCH)]
    assert any(t.startswith(" ") for t in api)  # a continuation of "the cat" starts with its space

    common = ["--model", str(model_dir), "--device", "cpu", "--constraints", str(words_artifact), "--format", "raw",
              "--beam", str(SEARCH["beam_size"]), "--max-new-tokens", str(SEARCH["max_new_tokens"])]
    plain: list[str] = []  # every door, the API included, starts from the format's preset (issue 39)
    main(["generate", *common, *plain, "--jsonl", *PROMPTS])
    assert [json.loads(x)["text"] for x in capsys.readouterr().out.splitlines()] == api

    main(["generate", *common, *plain, "-q", *PROMPTS])
    assert capsys.readouterr().out.splitlines() == [t.strip() for t in api]

    write_jsonl(tmp_path / "in.jsonl", [{"prompt": p} for p in PROMPTS])
    main(["batch", "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"), *common, *plain, "-q"])
    assert [r["text"] for r in read_shards(tmp_path / "out")] == api
