"""The ``fstbeam generate`` command on a tiny model saved to disk (byte-level BPE tokenizer)."""
from __future__ import annotations

import json

import pytest
import torch

from fstbeam.cli import main


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("tiny-model")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["a cat and a dog. the cat sat on a mat."] * 20, vocab_size=300, min_frequency=1,
                            special_tokens=["<eos>"], show_progress=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<eos>")
    tok.save_pretrained(d)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                      eos_token_id=tok.eos_token_id, bos_token_id=None, pad_token_id=None)
    LlamaForCausalLM(cfg).save_pretrained(d)
    return d


def test_generate_with_a_phrase_prints_json_lines(model_dir, capsys):
    code = main(["generate", "--model", str(model_dir), "--device", "cpu", "--phrase", "cat", "--beam", "3",
                 "--max-new-tokens", "8", "--jsonl", "the dog", "a mat"])
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["index"] for o in out] == [0, 1]
    for o in out:
        assert o["phrases"] == ["cat"]
        if o["satisfied"]:
            assert "cat" in o["text"] and o["phrases_met"] == [True]
    assert code == (0 if all(o["satisfied"] for o in out) else 1)


def test_generate_from_an_artifact_and_a_file(model_dir, tmp_path, capsys):
    from fstbeam.compiler.compile import compile_constraints
    from transformers import AutoTokenizer

    cc = compile_constraints(tokenizer=AutoTokenizer.from_pretrained(model_dir), words=["a", "cat", "dog", "the"])
    art = tmp_path / "words.fstbeam"
    cc.save(art)
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("the cat\n\na dog\n", encoding="utf-8")
    code = main(["generate", "--model", str(model_dir), "--device", "cpu", "--constraints", str(art), "--file",
                 str(prompts), "--beam", "2", "--nbest", "2", "--max-new-tokens", "6"])
    out = capsys.readouterr().out
    assert out.count("> ") == 2 and "satisfied:" in out and "[2]" in out
    blocks = [b.splitlines() for b in out.split("> ")[1:]]
    top_ok = []
    for lines in blocks:
        flags = [ln.split("satisfied: ")[1].startswith("yes") for ln in lines if "satisfied: " in ln]
        texts = [ln.split("] ", 1)[1] for ln in lines if ln.startswith("[")]
        assert len(flags) == len(texts) == 2
        for text, ok in zip(texts, flags):
            if ok:  # the word list's language: listed words (any case), digits, punctuation
                words = [w.strip(".,!?;:)\"'(-").lower() for w in text.split()]
                assert words and all(w in {"a", "cat", "dog", "the"} or w.isdigit() or not w for w in words), text
        top_ok.append(flags[0])
    # exit status 0 exactly when every prompt's best output satisfies the constraints
    assert code == (0 if all(top_ok) else 1)


def test_usage_errors_exit_2(model_dir, capsys):
    assert main(["generate", "--model", str(model_dir), "--device", "cpu"]) == 2
    assert "no prompts" in capsys.readouterr().err
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--beam", "0", "x"]) == 2
    assert "beam_size" in capsys.readouterr().err
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--constraints", "a", "--phrase", "b", "x"]) == 2


def test_leading_space_follows_the_prompt_format(model_dir, tmp_path, capsys):
    """Word lists allow a leading space when the prompt is continued as text (raw, qa, a template),
    not in a chat turn; --leading-space / --no-leading-space override."""
    from fstbeam.cli import _constraints, build_parser
    from fstbeam.runtime.decoder import Decoder

    words = tmp_path / "words.txt"
    words.write_text("a\ncat\ndog\n", encoding="utf-8")
    raw = Decoder(str(model_dir), device="cpu", prompt_format="raw")
    chat = Decoder(str(model_dir), device="cpu", prompt_format="chat")
    parse = lambda *extra: build_parser().parse_args(["generate", "--words", str(words), *extra, "x"])  # noqa: E731
    assert _constraints(parse(), raw).spec.get("leading_space") is True
    assert _constraints(parse(), chat).spec.get("leading_space") is None
    assert _constraints(parse("--no-leading-space"), raw).spec.get("leading_space") is None
    assert _constraints(parse("--leading-space"), chat).spec.get("leading_space") is True
    # a leading space is allowed after a raw prompt: the allowed first tokens include " cat"
    cc = _constraints(parse(), raw)
    first = {raw.vocab.token_bytes[t] for t in cc.matcher().allowed_token_ids() if raw.vocab.token_bytes[t]}
    assert any(b.startswith(b" ") for b in first) and any(not b.startswith(b" ") for b in first)
    code = main(["generate", "--model", str(model_dir), "--device", "cpu", "--phrase", "cat", "--leading-space", "x"])
    assert code == 2 and "--leading-space applies to a word list" in capsys.readouterr().err


def test_grammar_parameters_reach_the_compiler(model_dir, capsys):
    from fstbeam.cli import _constraints, build_parser
    from fstbeam.runtime.decoder import Decoder

    dec = Decoder(str(model_dir), device="cpu", prompt_format="raw")
    args = build_parser().parse_args(["generate", "--grammar", "numbers", "--param", "mode=only", "x"])
    cc = _constraints(args, dec)
    assert "mode=only" in str(cc.spec.get("grammar"))
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--param", "mode=only", "x"]) == 2
    assert "--grammar" in capsys.readouterr().err
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--grammar", "numbers", "--param", "oops", "x"]) == 2
    assert "key=value" in capsys.readouterr().err
