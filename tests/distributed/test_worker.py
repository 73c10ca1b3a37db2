"""The decoding worker (the body of every Ray actor), in-process: equal to Decoder.generate,
per-row constraints applied, every bad row an output row with ``error``."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from batch_helpers import SEARCH, assert_same, check_constraints, make_rows, oracle  # noqa: E402

from fstbeam.distributed.rows import OUTPUT_COLUMNS  # noqa: E402
from fstbeam.distributed.worker import DecodeWorker  # noqa: E402


@pytest.fixture(scope="module")
def worker(model_dir, words_artifact):
    return DecodeWorker(model=str(model_dir), constraints=str(words_artifact), device="cpu", prompt_format="raw", **SEARCH)


def test_rows_equal_decoder_generate_with_per_row_phrases(worker, model_dir, words_artifact):
    rows = make_rows(10)
    out = worker.decode_rows(rows, first_index=100)
    assert [o["id"] for o in out] == list(range(100, 110))
    assert all(list(o) == list(OUTPUT_COLUMNS) for o in out)
    for o, r, res in zip(out, rows, oracle(model_dir, words_artifact, rows)):
        assert o["prompt"] == r["prompt"] and o["error"] is None
        assert_same(o, res)
        assert len(o["phrases_met"]) == len(r["phrases"])
        check_constraints(o, r)
    assert any(o["satisfied"] and o["phrases_met"] for o in out)  # the phrases did something


def test_avoid_and_prefix_columns_apply(worker, model_dir, words_artifact):
    rows = [{"prompt": "the cat", "avoid": ["mat"], "id": "x1"}, {"prompt": "a dog", "prefix": " the", "id": "x2"},
            {"prompt": "the", "phrases": "dog", "avoid": ["cat"], "id": "x3"}]  # one phrase may be a plain string
    out = worker.decode_rows(rows)
    assert [o["id"] for o in out] == ["x1", "x2", "x3"]
    fixed = [dict(r, phrases=["dog"]) if isinstance(r.get("phrases"), str) else r for r in rows]
    for o, r, res in zip(out, fixed, oracle(model_dir, words_artifact, fixed)):
        assert_same(o, res)
        check_constraints(o, r)
    assert out[1]["satisfied"] and out[1]["text"].startswith(" the")


def test_bad_rows_become_error_rows_and_spare_the_others(worker, model_dir, words_artifact):
    good = make_rows(3)
    bad = [
        ({"prompt": ""}, "empty prompt"),
        ({"phrases": ["cat"]}, "'prompt'"),
        ({"prompt": 7}, "type int"),
        ({"prompt": "a", "phrases": ["zebra"]}, "zebra"),  # no listed word spells it: unsatisfiable
        ({"prompt": "a", "phrases": [3]}, "must be text"),
        ({"prompt": "a", "prefix": ""}, "prefix"),
        ({"prompt": "cat " * 80}, "context"),  # 64 positions in the tiny model
    ]
    rows = [good[0], *[b for b, _ in bad[:4]], good[1], *[b for b, _ in bad[4:]], good[2]]
    out = worker.decode_rows(rows, first_index=0)
    assert len(out) == len(rows) and [o["id"] for o in out] == list(range(len(rows)))
    errs = [o for o in out if o["error"]]
    assert len(errs) == len(bad)
    for o, (_, needle) in zip(errs, bad):
        assert needle in o["error"] and o["satisfied"] is False and o["finish_reason"] == "error" and o["score"] is None
    oks = [o for o in out if not o["error"]]
    for o, res in zip(oks, oracle(model_dir, words_artifact, good)):
        assert_same(o, res)


def test_row_phrases_add_to_the_shared_phrases(model_dir, words_artifact):
    """A shared constraint set with its own phrase keeps it when a row adds another."""
    import fstbeam

    dec = fstbeam.Decoder(str(model_dir), device="cpu", prompt_format="raw")
    shared = fstbeam.with_request(fstbeam.load_constraints(words_artifact, tokenizer=dec.tokenizer), phrases=["cat"])
    w = DecodeWorker(model=str(model_dir), constraints=shared, device="cpu", prompt_format="raw", **SEARCH)
    [plain, more] = w.decode_rows([{"prompt": "a"}, {"prompt": "a", "phrases": ["dog"]}], first_index=0)
    assert len(plain["phrases_met"]) == 1 and len(more["phrases_met"]) == 2
    if more["satisfied"]:
        check_constraints(more, {"phrases": ["cat", "dog"]})
    [clash] = w.decode_rows([{"prompt": "a", "prefix": " the"}])
    assert clash["error"] is None  # the shared set has no prefix: the row's applies


def test_constraints_for_another_tokenizer_are_refused(model_dir, tmp_path):
    import fstbeam
    from fstbeam.errors import TokenizerError, TokenizerMismatchError

    other = fstbeam.Vocab.from_dict({1: "a", 2: "b", 3: " "}, eos_ids=[0], width=4)
    cc = fstbeam.compile_constraints(tokenizer=other, words=["a", "b"])
    with pytest.raises(TokenizerMismatchError, match="another tokenizer"):
        DecodeWorker(model=str(model_dir), constraints=cc, device="cpu")
    cc.save(tmp_path / "other.fstbeam")
    with pytest.raises((TokenizerMismatchError, TokenizerError)):
        DecodeWorker(model=str(model_dir), constraints=str(tmp_path / "other.fstbeam"), device="cpu")
