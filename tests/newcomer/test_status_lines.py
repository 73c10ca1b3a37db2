"""Issue 39, "no long silence": the slow paths of every door print status lines while they run.

A tiny model slowed down on purpose (each forward pass sleeps) stands in for a real model on a
busy CPU; the thresholds are lowered so that the test takes seconds, not minutes. The lines must
come while the work runs, not only at its end."""
from __future__ import annotations

import json
import re
import time

import pytest

from fstbeam.files.status import PREFIX


@pytest.fixture
def slow_model(monkeypatch):
    """Every forward pass of a Llama model takes 50 ms more."""
    from transformers import LlamaForCausalLM

    real = LlamaForCausalLM.forward

    def slow(self, *a, **k):
        time.sleep(0.05)
        return real(self, *a, **k)

    monkeypatch.setattr(LlamaForCausalLM, "forward", slow)


@pytest.fixture
def quick_status(monkeypatch):
    import fstbeam.cli.progress as cp
    import fstbeam.distributed.progress as dp

    monkeypatch.setattr(cp, "AFTER", 0.2)
    monkeypatch.setattr(cp, "EVERY", 0.3)
    monkeypatch.setattr(dp, "INTERVAL", 0.3)
    monkeypatch.delenv("FSTBEAM_QUIET", raising=False)


def _status(err: str) -> list[str]:
    return [x for x in err.splitlines() if x.startswith(PREFIX)]


def test_generate_a_file_prints_status_lines(tiny_dir, tmp_path, slow_model, quick_status, capsys):
    from fstbeam.cli.generate import main

    f = tmp_path / "prompts.txt"
    f.write_text("the cat\na dog\non a mat\nthe dog ran\n", encoding="utf-8")
    code = main(["generate", "--model", str(tiny_dir), "--device", "cpu", "--format", "raw", "--file", str(f),
                 "--beam", "3", "--max-new-tokens", "8", "--min-new-tokens", "6"])
    out, err = capsys.readouterr()
    lines = _status(err)
    assert code in (0, 1) and out.count("> ") == 4
    assert any("decoding 4 input(s):" in x for x in lines), err
    counts = [int(x.split(": ")[1].split(" done")[0]) for x in lines if "decoding 4 input(s):" in x]
    assert counts == sorted(counts) and all(0 <= c <= 4 for c in counts)


def test_explain_prints_a_status_line(tiny_dir, slow_model, quick_status, capsys):
    from fstbeam.cli.generate import main

    code = main(["generate", "--model", str(tiny_dir), "--device", "cpu", "--format", "raw", "--explain",
                 "--phrase", "cat", "--beam", "3", "--max-new-tokens", "8", "--min-new-tokens", "6", "the dog"])
    err = capsys.readouterr().err
    assert code in (0, 1)
    assert any("explaining output 0" in x for x in _status(err)), err


def test_quiet_generate_prints_no_status_line(tiny_dir, tmp_path, slow_model, quick_status, capsys):
    from fstbeam.cli.generate import main

    f = tmp_path / "prompts.txt"
    f.write_text("the cat\na dog\n", encoding="utf-8")
    main(["generate", "--model", str(tiny_dir), "--device", "cpu", "--format", "raw", "--file", str(f), "-q",
          "--max-new-tokens", "8", "--min-new-tokens", "6"])
    assert not any("decoding" in x for x in _status(capsys.readouterr().err))


def test_batch_prints_progress_while_no_row_is_back(tiny_dir, tmp_path, slow_model, quick_status, capsys):
    """The first lines come before any row finishes (the model loading, the first chunk), and
    a line follows at least every interval."""
    from fstbeam.cli.generate import main

    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"prompt": p, "phrases": ph}) + "\n"
                           for p, ph in [("the cat", ["dog"]), ("a", [["mat", "cat"]]), ("on a", [])]), encoding="utf-8")
    t0 = time.monotonic()
    code = main(["batch", "--input", str(inp), "--output", str(tmp_path / "out"), "--model", str(tiny_dir),
                 "--device", "cpu", "--format", "raw", "--beam", "3", "--max-new-tokens", "8", "--min-new-tokens", "6",
                 "--rows-per-task", "3"])
    took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code in (0, 1), err
    lines = [x for x in err.splitlines() if re.match(r"fstbeam batch: \d+/\d+ rows", x)]
    assert any(x.startswith("fstbeam batch: 0/3 rows, starting") for x in lines), err
    assert lines[-1].startswith("fstbeam batch: 3/3 rows (100.0%)")
    assert len(lines) >= int(took / 0.3 / 3)  # about one per interval (a busy machine delays some)


def test_progress_ticks_without_updates():
    import io

    from fstbeam.distributed.progress import Progress

    buf = io.StringIO()
    p = Progress(5, stream=buf, interval=0.1)
    time.sleep(0.45)
    p.update(5)
    p.close()
    lines = buf.getvalue().splitlines()
    assert sum("starting" in x for x in lines) >= 2 and lines[-1].startswith("fstbeam batch: 5/5 rows (100.0%)")


def test_status_lines_stop_when_the_step_ends():
    """counted() prints nothing once its items are done (no stray line after the results)."""
    import io

    from fstbeam.cli.progress import counted

    buf = io.StringIO()

    def slow():
        for i in range(3):
            time.sleep(0.15)
            yield i

    assert list(counted(slow(), 3, stream=buf, after=0.1, every=0.1)) == [0, 1, 2]
    n = len(buf.getvalue().splitlines())
    assert n >= 2
    time.sleep(0.3)
    assert len(buf.getvalue().splitlines()) == n
