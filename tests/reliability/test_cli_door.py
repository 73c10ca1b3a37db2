"""The command-line doors (issue 23): usage errors exit 2 with a message, never a traceback;
``-o`` never replaces a device node or FIFO; one bad JSONL line costs only itself."""
from __future__ import annotations

import json
import os
import stat

import pytest
import torch

from fstbeam.cli.compile_constraints import main as compile_main
from fstbeam.cli.main import main


@pytest.mark.parametrize("flags, match", [
    (["--device", "bogus"], "--device"),
    (["--device", "cuda:7"], "--device"),
    (["--format", "Q: no placeholder"], "--format"),
])
def test_generate_usage_errors_exit_2_before_the_model_loads(monkeypatch, capsys, flags, match):
    if flags[1].startswith("cuda") and torch.cuda.device_count() > 7:
        pytest.skip("this machine has 8 GPUs")
    import fstbeam.files.default_model as dm

    monkeypatch.setattr(dm, "load_default_model", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(["generate", *flags, "hello"]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


def test_generate_missing_model_folder_exits_2(capsys, tmp_path):
    assert main(["generate", "--model", str(tmp_path / "nope"), "--device", "cpu", "hi"]) == 2
    err = capsys.readouterr().err
    assert "no such folder" in err and "Repo id" not in err


@pytest.mark.parametrize("node", ["fifo", "devnull-link", "dir"])
def test_compile_output_over_a_non_regular_file_is_refused(tmp_path, capsys, node):
    out = tmp_path / "out.fstbeam"
    if node == "fifo":
        os.mkfifo(out)
    elif node == "devnull-link":
        os.symlink("/dev/null", out)
    else:
        out.mkdir()
    assert compile_main(["compile", "--phrase", "cat", "--tokenizer", "default", "-o", str(out)]) == 2
    assert "not a regular file" in capsys.readouterr().err or node == "dir"
    if node == "fifo":
        assert stat.S_ISFIFO(os.stat(out).st_mode)
    if node == "devnull-link":
        assert os.path.islink(out) and stat.S_ISCHR(os.stat(out).st_mode)


def test_save_refuses_a_device_node(tmp_path):
    import fstbeam
    from fstbeam.errors import ArtifactError

    from rt_helpers import tiny_vocab

    cc = fstbeam.compile_constraints(tokenizer=tiny_vocab(), phrases=["a"])
    os.mkfifo(tmp_path / "p")
    with pytest.raises(ArtifactError, match="not a regular file"):
        cc.save(tmp_path / "p")
    with pytest.raises(ArtifactError, match="NUL"):
        cc.save(str(tmp_path / "a\x00b"))


def test_jsonl_bad_line_is_an_error_record_and_the_rest_is_written(model_dir, tmp_path, capsys):
    lines = ['{"prompt": "the cat"}', '{"prompt": "the \\ud800 dog"}', "not json", '{"prompt": "a mat", "phrases": ["cat"]}']
    f = tmp_path / "in.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["generate", "--model", str(model_dir), "--device", "cpu", "--format", "raw", "--file", str(f),
                 "--jsonl", "--beam", "2", "--max-new-tokens", "4"])
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 2
    assert [o["line"] for o in out] == [1, 2, 3, 4]  # in file order, bad lines in their place
    assert "surrogate" in out[1]["error"] and f"{f}:2" in out[1]["error"] and out[1]["text"] == ""
    assert "not valid JSON" in out[2]["error"]
    assert out[0]["error"] is None and out[3]["error"] is None
    # the good lines decode as in a file without the bad ones
    g = tmp_path / "good.jsonl"
    g.write_text(lines[0] + "\n" + lines[3] + "\n", encoding="utf-8")
    main(["generate", "--model", str(model_dir), "--device", "cpu", "--format", "raw", "--file", str(g),
          "--jsonl", "--beam", "2", "--max-new-tokens", "4"])
    alone = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [a["token_ids"] for a in alone] == [out[0]["token_ids"], out[3]["token_ids"]]
    assert [a["score"] for a in alone] == [out[0]["score"], out[3]["score"]]


def test_prompt_file_path_with_nul_is_a_usage_error(capsys):
    assert main(["generate", "--device", "cpu", "--file", "pro\x00mpts.txt"]) == 2
    assert "NUL" in capsys.readouterr().err
