"""Batch decoding on a local Ray cluster (2 CPUs, tiny model): generate_dataset equals
Decoder.generate, the batch command's output equals the in-process run row for row, a job
resumes after an interrupt, and a killed actor's batch is retried with no row lost or doubled.

Each job starts its actors (a Python process that imports torch and loads the model), so these
tests take tens of seconds; they are marked ``ray`` and ``slow`` and skip without Ray."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("transformers")

from batch_helpers import SEARCH, assert_same, assert_same_rows, check_constraints, make_rows, oracle, read_shards, write_jsonl  # noqa: E402
from test_batch_cli import batch_args  # noqa: E402

from fstbeam.cli.main import main  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_generate_dataset_equals_decoder_generate(ray_cluster, model_dir, words_artifact):
    import fstbeam.distributed as fd

    rows = [dict(r, id=i) for i, r in enumerate(make_rows(9))]
    rows[4] = {"id": 4, "prompt": "", "phrases": []}
    ds = ray_cluster.data.from_items(rows)
    out = fd.generate_dataset(ds, str(words_artifact), model=str(model_dir), concurrency=2, batch_size=3, device="cpu",
                              prompt_format="raw", **SEARCH)
    got = sorted(out.take_all(), key=lambda r: r["id"])
    assert [r["id"] for r in got] == list(range(9))
    assert set(got[0]) == set(fd.OUTPUT_COLUMNS)
    assert "empty prompt" in got[4]["error"] and got[4]["satisfied"] is False
    good = [r for r in rows if r["prompt"]]
    for o, r, res in zip([g for g in got if not g["error"]], good, oracle(model_dir, words_artifact, good)):
        o = dict(o, phrases_met=list(o["phrases_met"]))
        assert_same(o, res)
        check_constraints(o, r)


def test_generate_dataset_refuses_unknown_columns(ray_cluster, model_dir):
    import fstbeam.distributed as fd
    from fstbeam.errors import BatchError

    ds = ray_cluster.data.from_items([{"prompt": "a", "phrase": ["cat"]}])
    with pytest.raises(BatchError, match="unknown column"):
        fd.generate_dataset(ds, model=str(model_dir))


def test_batch_on_ray_equals_in_process_and_resumes(ray_cluster, model_dir, words_artifact, tmp_path):
    """Two actors; the job is interrupted after its first shard, rerun, and then equals the
    in-process run byte for byte."""
    from fstbeam.cli.batch import _job
    from fstbeam.cli.main import build_parser
    from fstbeam.distributed.job import run_batch

    rows = make_rows(24)
    rows[7] = {"prompt": "the", "phrases": ["zebra"]}  # unsatisfiable: an error row, not a failed job
    write_jsonl(tmp_path / "in.jsonl", rows)
    assert main(batch_args(model_dir, words_artifact, tmp_path / "in.jsonl", tmp_path / "local")) == 1
    ray_args = batch_args(model_dir, words_artifact, tmp_path / "in.jsonl", tmp_path / "ray",
                          "--ray-address", "auto", "--concurrency", "2")
    job = _job(build_parser().parse_args(ray_args))

    def interrupt(shard):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_batch(job, on_shard=interrupt)
    assert len(list((tmp_path / "ray").glob("rows-*.jsonl"))) == 1
    assert main(ray_args) == 1
    names = sorted(p.name for p in (tmp_path / "local").glob("rows-*"))
    assert names == sorted(p.name for p in (tmp_path / "ray").glob("rows-*")) and len(names) == 5
    ray_rows, local_rows = read_shards(tmp_path / "ray"), read_shards(tmp_path / "local")
    assert_same_rows(ray_rows, local_rows)
    assert [o["id"] for o in ray_rows] == list(range(24)) and "zebra" in ray_rows[7]["error"]


def test_an_artifact_for_another_tokenizer_fails_before_any_actor_starts(ray_cluster, model_dir, tmp_path, capsys):
    import fstbeam

    other = fstbeam.Vocab.from_dict({1: "a", 2: "b", 3: " "}, eos_ids=[0], width=4)
    fstbeam.compile_constraints(tokenizer=other, words=["a", "b"]).save(tmp_path / "other.fstbeam")
    write_jsonl(tmp_path / "in.jsonl", make_rows(2))
    args = batch_args(model_dir, tmp_path / "other.fstbeam", tmp_path / "in.jsonl", tmp_path / "out", "--ray-address", "auto")
    assert main(args) == 2
    assert "tokenizer" in capsys.readouterr().err


def _actor_pids() -> list[int]:
    """Processes of our decoding actors (Ray titles them after the actor class)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if b"FstbeamDecoder" in cmd:
                pids.append(int(d.name))
    return pids


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds actor processes through /proc")
def test_a_killed_actor_is_restarted_and_its_batch_retried(ray_cluster, model_dir, words_artifact):
    import fstbeam.distributed as fd

    rows = [dict(r, id=i) for i, r in enumerate(make_rows(30))]
    ds = fd.generate_dataset(ray_cluster.data.from_items(rows, override_num_blocks=15), str(words_artifact),
                             model=str(model_dir), concurrency=2, batch_size=2, device="cpu", prompt_format="raw", **SEARCH)
    got, killed = [], []
    for batch in ds.iter_batches(batch_format="pyarrow", batch_size=None):
        got += batch.to_pylist()
        if not killed:  # mid-job: some output is back, more is running
            pids = _actor_pids()
            assert pids, "no actor process found"
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
    assert killed and killed[0] not in _actor_pids()
    ids = sorted(r["id"] for r in got)
    assert ids == list(range(30))  # none lost, none doubled
    got.sort(key=lambda r: r["id"])
    for o, res in zip(got, oracle(model_dir, words_artifact, rows)):
        assert_same(dict(o, phrases_met=list(o["phrases_met"])), res)
