"""``fstbeam batch`` in-process: shards named by row range, equal to Decoder.generate, resumable,
bad input reported, progress on stderr. (The same command on Ray: test_ray.py.)"""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from batch_helpers import SEARCH, assert_same, assert_same_rows, make_rows, oracle, read_shards, write_jsonl  # noqa: E402

from fstbeam.cli.main import main  # noqa: E402


def batch_args(model_dir, artifact, inp, out, *extra):
    return ["batch", "--input", str(inp), "--output", str(out), "--constraints", str(artifact), "--model", str(model_dir),
            "--device", "cpu", "--format", "raw", "--beam", str(SEARCH["beam_size"]),
            "--max-new-tokens", str(SEARCH["max_new_tokens"]), "--shard-size", "5", "--rows-per-task", "2", *extra]


def test_shards_by_row_range_equal_generate(model_dir, words_artifact, tmp_path, capsys):
    rows = make_rows(12)
    write_jsonl(tmp_path / "in.jsonl", rows)
    code = main(batch_args(model_dir, words_artifact, tmp_path / "in.jsonl", tmp_path / "out"))
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["_job.json", "rows-000000000-000000004.jsonl", "rows-000000005-000000009.jsonl",
                     "rows-000000010-000000011.jsonl"]
    out = read_shards(tmp_path / "out")
    assert [o["id"] for o in out] == list(range(12))
    for o, res in zip(out, oracle(model_dir, words_artifact, rows)):
        assert_same(o, res)
    assert code == (1 if any(o["error"] or not o["satisfied"] for o in out) else 0)
    err = capsys.readouterr().err
    assert "12/12 rows" in err and "rows/s" in err and "ETA" in err and "3 shard(s)" in err


def test_resume_after_an_interrupt_skips_written_shards(model_dir, words_artifact, tmp_path):
    from fstbeam.cli.batch import _job
    from fstbeam.cli.main import build_parser
    from fstbeam.distributed.job import run_batch

    rows = make_rows(14)
    rows[6] = {"prompt": ""}  # a failing row is kept in its place
    write_jsonl(tmp_path / "in.jsonl", rows)
    with open(tmp_path / "in.jsonl", "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    assert main(batch_args(model_dir, words_artifact, tmp_path / "in.jsonl", tmp_path / "full")) == 1
    job = _job(build_parser().parse_args(batch_args(model_dir, words_artifact, tmp_path / "in.jsonl", tmp_path / "cut")))
    seen = []

    def ctrl_c_after_one(shard):
        seen.append(shard.name)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_batch(job, on_shard=ctrl_c_after_one)
    assert seen == ["rows-000000000-000000004.jsonl"]
    (tmp_path / "cut" / ".rows-000000005-000000009.jsonl.tmp-999").write_text("half a shard")  # killed mid-write
    summary = run_batch(job)
    assert summary.skipped_shards == 1 and summary.written == ["rows-000000005-000000009.jsonl",
                                                               "rows-000000010-000000014.jsonl"]
    assert sorted(os.listdir(tmp_path / "cut")) == sorted(os.listdir(tmp_path / "full"))
    out = read_shards(tmp_path / "cut")
    assert_same_rows(out, read_shards(tmp_path / "full"))
    assert [o["id"] for o in out] == list(range(15))
    assert "empty prompt" in out[6]["error"] and "not JSON" in out[14]["error"]
    assert main(batch_args(model_dir, words_artifact, tmp_path / "in.jsonl", tmp_path / "cut")) == 1  # nothing to do


@pytest.mark.slow
def test_ctrl_c_keeps_finished_shards_and_exits_130(model_dir, words_artifact, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", make_rows(400))
    out = tmp_path / "out"
    args = batch_args(model_dir, words_artifact, tmp_path / "in.jsonl", out)
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")]))
    # SIGINT back to default in the child: under `nohup ... &` the suite itself runs with SIGINT
    # ignored, and an ignored signal stays ignored across exec (Python would then never raise
    # KeyboardInterrupt).
    proc = subprocess.Popen([sys.executable, "-m", "fstbeam.cli", *args], stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not list(out.glob("rows-*.jsonl")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("[fstbeam] ")]
    assert "interrupted" in lines[-1] and "rerun" in lines[-1] and sum("interrupted" in x for x in lines) == 1
    kept = sorted(out.glob("rows-*.jsonl"))
    assert 1 <= len(kept) < 80
    assert all(len(f.read_text().splitlines()) == 5 for f in kept)


def test_progress_lines_off_a_terminal():
    from fstbeam.distributed.progress import Progress

    buf = io.StringIO()
    p = Progress(10, 4, stream=buf, interval=0)
    time.sleep(0.01)
    p.update(2)
    p.close()
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("fstbeam batch: 6/10 rows (60.0%), ") and "rows/s, ETA " in lines[0]
    assert lines[0].split("ETA ")[1] != "?"


def test_bad_jobs_are_usage_errors(model_dir, words_artifact, tmp_path, capsys):
    write_jsonl(tmp_path / "in.jsonl", make_rows(3))
    write_jsonl(tmp_path / "typo.jsonl", [{"prompt": "a", "phrase": ["cat"]}])
    run = lambda inp, out, *x: main(batch_args(model_dir, words_artifact, tmp_path / inp, tmp_path / out, *x))  # noqa: E731
    assert run("typo.jsonl", "o1") == 2
    assert "unknown column(s) ['phrase']" in capsys.readouterr().err
    assert run("missing.jsonl", "o2") == 2
    assert "not a file" in capsys.readouterr().err
    assert run("in.jsonl", "o3") in (0, 1)
    capsys.readouterr()
    assert run("in.jsonl", "o3", "--beam", "2") == 2  # other settings: not mixed into the same output
    assert "another job (differs in: settings)" in capsys.readouterr().err
    (tmp_path / "o4").mkdir()
    (tmp_path / "o4" / "notes.txt").write_text("mine")
    assert run("in.jsonl", "o4") == 2
    assert "not empty" in capsys.readouterr().err
    assert run("in.jsonl", "o5", "--shard-size", "0") == 2  # argparse's usage error, as an exit code
    assert main(["batch", "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "o6"), "--constraints",
                 str(tmp_path / "nope.fstbeam")]) == 2
    assert "no artifact" in capsys.readouterr().err
    assert run("in.jsonl", "o7", "--shortlist", "on") == 2  # the full softmax needs every logit
    assert "shortlist='on' needs renormalize=True" in capsys.readouterr().err  # SearchConfig's message


def test_renormalize_and_shortlist_reach_the_workers(model_dir, words_artifact, tmp_path):
    from fstbeam.cli.batch import _job
    from fstbeam.cli.main import build_parser

    parse = lambda *x: _job(build_parser().parse_args(batch_args(model_dir, words_artifact, tmp_path / "in.jsonl",  # noqa: E731
                                                                 tmp_path / "out", *x)))
    cfg = parse("--renormalize", "--shortlist", "off").worker
    assert (cfg["renormalize"], cfg["shortlist"]) == (True, "off")
    assert "renormalize" not in parse().worker and "shortlist" not in parse().worker  # not given: the preset's


def test_parquet_input_gives_the_jsonl_output(model_dir, words_artifact, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [dict(r, id=f"r{i}") for i, r in enumerate(make_rows(6))]
    write_jsonl(tmp_path / "in.jsonl", rows)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    assert main(batch_args(model_dir, words_artifact, tmp_path / "in.jsonl", tmp_path / "a")) in (0, 1)
    assert main(batch_args(model_dir, words_artifact, tmp_path / "in.parquet", tmp_path / "b")) in (0, 1)
    a, b = read_shards(tmp_path / "a"), read_shards(tmp_path / "b")
    assert a == b and [o["id"] for o in a] == [f"r{i}" for i in range(6)]


def test_packed_weights_reach_the_workers(model_dir, words_artifact, tmp_path):
    from fstbeam.cli.batch import _job
    from fstbeam.cli.main import build_parser
    from fstbeam.distributed.worker import DecodeWorker

    parse = lambda *x: _job(build_parser().parse_args(batch_args(model_dir, words_artifact, tmp_path / "in.jsonl",  # noqa: E731
                                                                 tmp_path / "out", *x)))
    cfg = parse("--packed-weights", "off").worker
    assert cfg["packed_weights"] == "off"
    assert "packed_weights" not in parse().worker  # the default: the old job settings
    assert not DecodeWorker(**cfg).decoder.adapter.packing.active
