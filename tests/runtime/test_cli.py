"""The ``fstbeam generate`` command on a tiny model saved to disk (byte-level BPE tokenizer)."""
from __future__ import annotations

import json

import pytest
import torch

from fstbeam.cli.main import main


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
    from transformers import AutoTokenizer

    from fstbeam.compiler.api import compile_constraints

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
    assert "beam_size must be a positive integer (got 0) (the flag --beam)" in capsys.readouterr().err  # SearchConfig's, and the flag
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--constraints", "a", "--phrase", "b", "x"]) == 2
    assert main(["generate", "--format", "Q: no placeholder", "x"]) == 2
    assert "{prompt}" in capsys.readouterr().err


def test_leading_space_follows_the_prompt_format(model_dir, tmp_path, capsys):
    """Word lists allow a leading space when the prompt is continued as text (raw, qa, a template),
    not in a chat turn; --leading-space / --no-leading-space override."""
    from fstbeam.cli.generate import _constraints
    from fstbeam.cli.main import build_parser
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
    from fstbeam.cli.generate import _constraints
    from fstbeam.cli.main import build_parser
    from fstbeam.runtime.decoder import Decoder

    dec = Decoder(str(model_dir), device="cpu", prompt_format="raw")
    args = build_parser().parse_args(["generate", "--grammar", "numbers", "--param", "mode=only", "x"])
    cc = _constraints(args, dec)
    assert "mode=only" in str(cc.spec.get("grammar"))
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--param", "mode=only", "x"]) == 2
    assert "give grammar= too (the flag --param)" in capsys.readouterr().err
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--grammar", "numbers", "--param", "oops", "x"]) == 2
    assert "key=value" in capsys.readouterr().err


def test_empty_string_prompt_is_flagged_like_an_empty_id_list(model_dir):
    """The choice (docs/decoding.md): an empty or blank string prompt is an error for that input
    only, even though the tokenizer could turn it into special tokens."""
    from fstbeam.runtime.decoder import Decoder

    dec = Decoder(str(model_dir), device="cpu", prompt_format="raw")
    with pytest.warns(UserWarning):
        res = dec.generate(["", "  ", "a cat"], beam_size=2, max_new_tokens=2)
    assert [bool(r.error) for r in res] == [True, True, False]
    assert "empty prompt" in res[0].error


@pytest.mark.parametrize("flag", ["--cefr", "--words", "--grammar", "--prefix", "--constraints", "--phrase", "--avoid",
                                  "--param", "--file", "--model", "--tokenizer"])
def test_empty_flag_value_is_a_usage_error(model_dir, flag, capsys):
    """An empty value never means "no constraint" (it used to decode unconstrained and exit 0)."""
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", flag, "", "What do you eat?"]) == 2
    assert "empty value" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--cefr", "--words", "--grammar", "--prefix", "--phrase", "--avoid", "--param",
                                  "--tokenizer", "-o"])
def test_compile_constraints_empty_flag_value_is_a_usage_error(flag, tmp_path, capsys):
    from fstbeam.cli.compile_constraints import main as cc_main

    args = ["compile", "--phrase", "cat", "-o", str(tmp_path / "x.fstbeam")]
    assert cc_main(args + [flag, ""]) == 2
    assert "empty value" in capsys.readouterr().err
    assert not (tmp_path / "x.fstbeam").exists()


def test_compile_without_any_constraint_needs_any(tmp_path, capsys):
    from fstbeam.cli.compile_constraints import main as cc_main

    out = tmp_path / "x.fstbeam"
    assert cc_main(["compile", "--tokenizer", "default", "-o", str(out)]) == 2
    assert "no constraint given" in capsys.readouterr().err and not out.exists()
    assert cc_main(["compile", "--param", "level=A1", "--phrase", "x", "-o", str(out)]) == 2
    assert "give grammar= too (the flag --param)" in capsys.readouterr().err


@pytest.mark.parametrize("content, what", [(None, "does not exist"), (b"\xff\xfe bad\n", "not UTF-8"), ("dir", "directory")])
def test_bad_prompt_file_is_a_usage_error(model_dir, tmp_path, capsys, content, what):
    f = tmp_path / "prompts.txt"
    if content == "dir":
        f.mkdir()
    elif content is not None:
        f.write_bytes(content)
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--file", str(f)]) == 2
    err = capsys.readouterr().err
    assert what in err and "Traceback" not in err


def test_undecodable_phrase_argument_is_a_usage_error(model_dir, capsys):
    import os

    bad = os.fsdecode(b"\xff")  # what Python makes of $'\xff' in argv (a lone surrogate)
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", "--phrase", bad, "x"]) == 2
    assert "UTF-8" in capsys.readouterr().err


def test_jsonl_streams_results_and_ctrl_c_keeps_them(model_dir, tmp_path):
    """Each result is printed (and flushed) as it finishes; SIGINT exits 130 with one line on
    stderr and keeps every line already printed."""
    import os
    import signal
    import subprocess
    import sys
    import time

    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(["the cat"] * 400) + "\n", encoding="utf-8")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fstbeam.cli", "generate", "--model", str(model_dir), "--device", "cpu", "--file",
         str(prompts), "--jsonl", "--beam", "2", "--max-new-tokens", "24", "--batch-size", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # not ignored, even under nohup ... &
    first = proc.stdout.readline()  # blocks until the first result is out: proof of streaming
    assert json.loads(first)["index"] == 0
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    # Read through the same buffered stream as readline() above (communicate() reads the raw pipe
    # and would miss lines that readline() had already buffered); stderr holds a few lines only.
    rest, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=60) == 130
    lines = [first] + rest.splitlines()
    assert 1 <= len(lines) < 400
    assert [json.loads(line)["index"] for line in lines] == list(range(len(lines)))  # complete, in order
    from fstbeam.files.status import PREFIX

    ours = [ln for ln in err.splitlines()  # not transformers' bar, nor a status line of a slow load
            if ln.strip() and not ln.startswith(("Loading weights", PREFIX))]
    assert len(ours) == 1 and "interrupted" in ours[0] and "Traceback" not in err


def test_tokenizer_json_holding_a_list_is_a_tokenizer_error(model_dir, tmp_path):
    import shutil

    from fstbeam.errors import TokenizerError
    from fstbeam.runtime.decoder import Decoder

    bad = tmp_path / "tok"
    shutil.copytree(model_dir, bad)
    (bad / "tokenizer.json").write_text("[1, 2, 3]", encoding="utf-8")
    with pytest.raises(TokenizerError, match="tokenizer"):
        Decoder(str(model_dir), tokenizer=str(bad), device="cpu")


def test_renormalize_and_shortlist_flags_reach_the_search(model_dir, tmp_path, capsys, monkeypatch):
    from fstbeam.runtime.decoder import Decoder

    words = tmp_path / "words.txt"
    words.write_text("a\ncat\ndog\nthe\n", encoding="utf-8")
    seen = []
    real = Decoder.stream

    def spy(self, prompts, constraints=None, config=None, **kw):
        yield from real(self, prompts, constraints, config, **kw)
        seen.append((vars(config), self.last_stats))

    monkeypatch.setattr(Decoder, "stream", spy)
    base = ["generate", "--model", str(model_dir), "--device", "cpu", "--words", str(words), "--beam", "2",
            "--max-new-tokens", "4", "--jsonl", "the cat"]
    outs = {}
    for flags in ([], ["--renormalize", "--shortlist", "on"], ["--renormalize", "--shortlist", "off"]):
        assert main(base + flags) in (0, 1)
        outs[tuple(flags)] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    (kw0, st0), (kw_on, st_on), (kw_off, st_off) = seen
    assert (kw0["renormalize"], kw0["shortlist"]) == (False, "auto") and st0.shortlist_steps == 0
    assert (kw_on["renormalize"], kw_on["shortlist"]) == (True, "on") and st_on.shortlist_steps == st_on.steps > 0
    assert st_off.shortlist_steps == 0
    on, off = outs[("--renormalize", "--shortlist", "on")], outs[("--renormalize", "--shortlist", "off")]
    assert [o["text"] for o in on] == [o["text"] for o in off]


@pytest.mark.parametrize("flags,needle", [
    (["--shortlist", "on"], "shortlist='on' needs renormalize=True"),
    (["--renormalize", "--shortlist", "yes"], "invalid choice: 'yes'"),
])
def test_bad_shortlist_flags_are_usage_errors(model_dir, capsys, flags, needle):
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", *flags, "x"]) == 2
    assert needle in capsys.readouterr().err


def test_packed_weights_flag_reaches_the_decoder(model_dir, monkeypatch, capsys):
    from fstbeam.runtime.decoder import Decoder

    made = []
    real = Decoder.__init__

    def spy(self, *a, **kw):
        real(self, *a, **kw)
        made.append(self.adapter.packing)

    monkeypatch.setattr(Decoder, "__init__", spy)
    base = ["generate", "--model", str(model_dir), "--device", "cpu", "--beam", "2", "--max-new-tokens", "3", "the cat"]
    for flag in ("off", "auto"):
        assert main(base + ["--packed-weights", flag]) in (0, 1)
    assert made[0].mode == "off" and not made[0].active and made[1].mode == "auto"
    capsys.readouterr()
    assert main(base + ["--packed-weights", "always"]) == 2
    assert "invalid choice: 'always'" in capsys.readouterr().err


def test_jsonl_lines_with_their_own_constraints_print_a_satisfied_line(model_dir, tmp_path, capsys):
    """Text mode: a .jsonl line's own phrases are constraints, so its result says whether they hold."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"prompt": "the dog", "phrases": ["cat"]}\n{"prompt": "a mat"}\n'
                      '{"prompt": "the cat", "avoid": ["dog"]}\n', encoding="utf-8")
    code = main(["generate", "--model", str(model_dir), "--device", "cpu", "--file", str(inputs), "--beam", "2",
                 "--max-new-tokens", "6"])
    blocks = capsys.readouterr().out.split("> ")[1:]
    assert len(blocks) == 3
    with_constraints = [b for i, b in enumerate(blocks) if i != 1]
    assert all("satisfied: " in b for b in with_constraints) and "satisfied: " not in blocks[1]
    assert "phrases met: [" in blocks[0]
    flags = [b.split("satisfied: ")[1].startswith("yes") for b in with_constraints]
    assert code == (0 if all(flags) else 1)


def test_generate_timings_prints_each_stage(model_dir, capsys):
    code = main(["generate", "--model", str(model_dir), "--device", "cpu", "--phrase", "cat", "--beam", "2",
                 "--max-new-tokens", "4", "-q", "--timings", "the dog"])
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if ln.startswith("fstbeam generate: ")]
    names = [ln.split()[2] for ln in lines]
    assert names == ["import", "model", "constraints", "decode", "total"]
    for ln in lines:
        wall, cpu = float(ln.split()[3]), float(ln.split("(cpu ")[1].split()[0])
        assert wall >= 0 and cpu >= 0
    assert cap.out.strip() and code in (0, 1)  # the output itself is unchanged by --timings


def test_stop_flag_ends_outputs_in_the_search(model_dir, capsys):
    """``--stop TEXT`` (repeatable) is ``SearchConfig.stop``: the same outputs as the API's."""
    import warnings

    from fstbeam.runtime.decoder import Decoder

    dec = Decoder(str(model_dir), device="cpu")
    opts = dict(beam_size=3, max_new_tokens=8, min_new_tokens=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [free] = dec.generate(["the dog"], **opts)
        # text the model writes without the flag (an ASCII character: a random model writes broken UTF-8 too,
        # shown as U+FFFD, which is not its bytes)
        stop = [next(ch for ch in free.text[1:] if ch.isascii() and ch.isprintable()), "\n"]
        [want] = dec.generate(["the dog"], stop=stop, **opts)
    code = main(["generate", "--model", str(model_dir), "--device", "cpu", "--beam", "3", "--max-new-tokens", "8",
                 "--min-new-tokens", "6", "--stop", stop[0], "--stop", "\n", "--jsonl", "the dog"])
    [out] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and out["text"] == want.text and out["finish_reason"] == want.finish_reason
    assert stop[0] not in out["text"] and want.text != free.text
