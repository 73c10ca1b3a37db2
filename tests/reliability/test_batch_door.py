"""``fstbeam batch`` (issue 23): a bad row is an error row, the job completes with every shard
written and no temporary left, and ``--retry-errors`` decodes just the errored rows again."""
from __future__ import annotations

import json

import pytest

from fstbeam.cli.main import main


def _rows(n):
    words = ["the cat", "a dog", "the mat", "a cat sat"]
    return [{"id": i, "prompt": words[i % len(words)]} for i in range(n)]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _args(model_dir, inp, out, *extra):
    return ["batch", "--input", str(inp), "--output", str(out), "--model", str(model_dir), "--device", "cpu",
            "--format", "raw", "--beam", "2", "--max-new-tokens", "4", "--shard-size", "3", "-q", *extra]


def _shards(out):
    return [json.loads(x) for p in sorted(out.glob("rows-*.jsonl")) for x in p.read_text(encoding="utf-8").splitlines()]


def test_surrogate_row_becomes_an_error_row(model_dir, tmp_path):
    rows = _rows(7)
    rows[4]["prompt"] = "the \ud800 cat"
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(_args(model_dir, tmp_path / "in.jsonl", tmp_path / "out")) == 1
    out = _shards(tmp_path / "out")
    assert [o["id"] for o in out] == list(range(7))
    assert "surrogate" in out[4]["error"] and out[4]["text"] == ""
    assert all(o["error"] is None for i, o in enumerate(out) if i != 4)
    assert not list((tmp_path / "out").glob(".*tmp*"))
    # the good rows equal a job without the bad one
    good = [r for i, r in enumerate(rows) if i != 4]
    _write(tmp_path / "good.jsonl", good)
    main(_args(model_dir, tmp_path / "good.jsonl", tmp_path / "good", "--shard-size", "7"))
    alone = {o["id"]: o for o in _shards(tmp_path / "good")}
    for o in out:
        if o["id"] != 4:  # (scores to float noise: a batch of another size sums the matmuls in another order)
            a, exact = alone[o["id"]], lambda d: {k: v for k, v in d.items() if k not in ("score", "logprob")}
            assert exact(o) == exact(a)
            assert o["score"] == pytest.approx(a["score"], abs=1e-4) and o["logprob"] == pytest.approx(a["logprob"], abs=1e-4)


def test_retry_errors_reruns_only_the_errored_rows(model_dir, tmp_path, monkeypatch):
    from fstbeam.distributed import worker as worker_mod

    _write(tmp_path / "in.jsonl", _rows(6))
    real = worker_mod.DecodeWorker.constraints_for

    def flaky(self, req):  # row 2 fails the first time round, as a crashed worker would
        if req.id == 2:
            raise ValueError("transient failure")
        return real(self, req)

    monkeypatch.setattr(worker_mod.DecodeWorker, "constraints_for", flaky)
    _rows_with_phrase = _rows(6)
    for r in _rows_with_phrase:
        r["phrases"] = ["cat"]
    _write(tmp_path / "in.jsonl", _rows_with_phrase)
    assert main(_args(model_dir, tmp_path / "in.jsonl", tmp_path / "out")) == 1
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").glob("rows-*.jsonl")}
    out = _shards(tmp_path / "out")
    assert out[2]["error"] == "transient failure"
    monkeypatch.setattr(worker_mod.DecodeWorker, "constraints_for", real)
    main(_args(model_dir, tmp_path / "in.jsonl", tmp_path / "out", "--retry-errors"))
    after = _shards(tmp_path / "out")
    assert after[2]["error"] is None and after[2]["text"]
    assert [a for i, a in enumerate(after) if i != 2] == [o for i, o in enumerate(out) if i != 2]
    second = (tmp_path / "out" / "rows-000000003-000000005.jsonl")
    assert second.read_bytes() == before[second.name]  # a shard without errors is not rewritten
    assert not list((tmp_path / "out").glob(".*tmp*"))


def test_bad_device_or_format_exits_2_before_anything_runs(tmp_path, capsys):
    _write(tmp_path / "in.jsonl", _rows(2))
    for flags in (["--device", "bogus"], ["--format", "no placeholder"]):
        args = ["batch", "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"), *flags]
        assert main(args) == 2
        assert flags[0] in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
