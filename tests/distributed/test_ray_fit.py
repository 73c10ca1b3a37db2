"""Issue 39: `generate_dataset` on rows whose columns differ in type (AnyOf lists beside plain
phrases), read as `fstbeam batch` reads them, and a `concurrency` the cluster cannot hold cut to
what fits with a warning, never a silent wait (Ray: ``running=2, pending=2``)."""
from __future__ import annotations

import json

import pytest

from fstbeam.distributed.ray_data import fit_concurrency
from fstbeam.errors import BatchError


class FakeRay:
    """What fit_concurrency asks of Ray: whether it runs, and the cluster's resources."""

    def __init__(self, resources):
        self.resources, self.started = resources, False

    def is_initialized(self):
        return self.started

    def init(self, **kw):
        self.started = True

    def cluster_resources(self):
        return dict(self.resources)


def test_concurrency_above_the_cpus_is_cut_with_a_warning():
    ray = FakeRay({"CPU": 2.0})
    with pytest.warns(RuntimeWarning, match=r"concurrency=4 actors of 1 CPU\(s\) do not fit the Ray cluster's 2 CPU\(s\): running 2"):
        assert fit_concurrency(ray, 4, 1) == 2
    assert ray.started  # a local Ray started first, as Ray Data would
    assert fit_concurrency(ray, 2, 1) == 2
    with pytest.warns(RuntimeWarning, match="running 1"):
        assert fit_concurrency(ray, 3, 1.5) == 1
    with pytest.warns(RuntimeWarning, match="GPU"):
        assert fit_concurrency(FakeRay({"CPU": 16.0, "GPU": 2.0}), 4, 1, 1) == 2


def test_a_dataset_leaves_one_cpu_to_ray_datas_own_tasks():
    """generate_dataset's actors leave a CPU free where the cluster has more than one actor's:
    a dataset written with write_parquet otherwise waits for ever (its write tasks get no CPU)."""
    with pytest.warns(RuntimeWarning, match=r"running 1, 1 CPU left for Ray Data's read and write tasks"):
        assert fit_concurrency(FakeRay({"CPU": 2.0}), 2, 1, spare_cpus=1) == 1
    assert fit_concurrency(FakeRay({"CPU": 8.0}), 4, 1, spare_cpus=1) == 4
    with pytest.warns(RuntimeWarning, match="running 1"):  # one actor always runs
        assert fit_concurrency(FakeRay({"CPU": 1.0}), 2, 1, spare_cpus=1) == 1


@pytest.mark.parametrize("resources, kw, match", [
    ({"CPU": 2.0}, dict(num_cpus=4), r"one actor needs 4 CPU\(s\) but the Ray cluster has 2: lower num_cpus"),
    ({"CPU": 8.0}, dict(num_gpus=1), r"one actor needs 1 GPU\(s\) but the Ray cluster has 0: lower num_gpus"),
])
def test_a_cluster_that_cannot_hold_one_actor_is_an_error(resources, kw, match):
    with pytest.raises(BatchError, match=match):
        fit_concurrency(FakeRay(resources), 2, **{"num_cpus": 1, **kw})


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_concurrency_must_be_a_positive_integer(bad):
    with pytest.raises(BatchError, match="concurrency must be a positive integer"):
        fit_concurrency(FakeRay({"CPU": 2.0}), bad)


@pytest.mark.ray
@pytest.mark.slow
def test_generate_dataset_reads_mixed_rows_and_fits_the_cluster(ray_cluster, model_dir, words_artifact, tmp_path):
    """The README's prompts.jsonl shape (AnyOf beside plain phrases) through read_rows, the path
    itself, with concurrency=4 on the 2-CPU test cluster: every row comes back, as the batch
    worker decodes it, with a warning instead of a wait."""
    import fstbeam.distributed as fd
    from fstbeam.distributed.ray_data import read_rows
    from fstbeam.distributed.worker import DecodeWorker

    rows = [{"prompt": "the cat", "phrases": ["dog"]}, {"prompt": "a", "phrases": [["mat", "cat"]], "avoid": ["ran"]},
            {"prompt": "on a"}, "not json"]
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join((json.dumps(r) if isinstance(r, dict) else r) + "\n" for r in rows), encoding="utf-8")
    kw = dict(model=str(model_dir), batch_size=2, device="cpu", prompt_format="raw", beam_size=3, max_new_tokens=8)
    with pytest.warns(RuntimeWarning, match="running 1"):  # 2 CPUs: one actor, one CPU for Ray Data's tasks
        out = fd.generate_dataset(read_rows(path), str(words_artifact), concurrency=4, **kw)
    got = sorted(out.take_all(), key=lambda r: r["id"])
    assert [r["id"] for r in got] == [0, 1, 2, 3]
    assert "is not JSON" in got[3]["error"] and got[3]["finish_reason"] == "error"
    worker = DecodeWorker(model=str(model_dir), constraints=str(words_artifact), device="cpu", prompt_format="raw",
                          beam_size=3, max_new_tokens=8)
    want = worker.decode_rows([dict(r, id=i) for i, r in enumerate(rows[:3])])
    for g, w in zip(got, want):
        assert (g["text"], g["satisfied"], list(g["phrases_met"]), g["finish_reason"]) == \
               (w["text"], w["satisfied"], w["phrases_met"], w["finish_reason"])
    with pytest.warns(RuntimeWarning, match="running 1"):
        written = fd.generate_dataset(str(path), str(words_artifact), concurrency=2, **kw)
        written.write_parquet(str(tmp_path / "out"))  # the docs' last step: it must not wait for a CPU
    import pyarrow.parquet as pq

    by_path = sorted(pq.read_table(tmp_path / "out").to_pylist(), key=lambda r: r["id"])
    assert [r["text"] for r in by_path] == [r["text"] for r in got]
