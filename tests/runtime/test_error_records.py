"""One shape for an input that could not be decoded (issue 38): `GenerationResult.failed` is the
error record of the API, of a JSONL output line and of a batch row; its JSON is valid JSON."""
from __future__ import annotations

import json

import pytest

from fstbeam.distributed.rows import RowRequest, error_row, result_row
from fstbeam.runtime.results import GenerationResult, Hypothesis


def _no_constants(name):
    raise AssertionError(f"{name} is not JSON")


def _decoded() -> GenerationResult:
    h = Hypothesis("a cat", (5, 6), -1.5, -2.0, True, (True,), "eos")
    return GenerationResult(index=0, text=h.text, token_ids=h.token_ids, score=h.score, logprob=h.logprob,
                            satisfied=True, phrases=("cat",), phrases_met=(True,), steps=2, finish_reason="eos",
                            hypotheses=(h,), prompt="the")


def test_a_failed_result_has_the_shape_of_a_decoded_one():
    bad = GenerationResult.failed(3, "prompt too long", prompt="x", phrases=("cat",))
    assert bad.error == "prompt too long" and bad.finish_reason == "error" and not bad.satisfied
    assert bad.phrases_met == (False,) and bad.text == "" and bad.token_ids == ()
    good, failed = _decoded().to_dict(), bad.to_dict()
    assert set(failed) == set(good)
    text = json.dumps(failed)
    assert json.loads(text, parse_constant=_no_constants)["score"] is None  # -inf is not JSON


@pytest.mark.parametrize("error", ["line 3: bad request", "prompt of 9000 tokens exceeds the context"])
def test_a_batch_error_row_has_the_shape_of_a_result_row(error):
    req = RowRequest(7, "the")
    row, good = error_row(req, error), result_row(req, _decoded())
    assert set(row) == set(good)
    assert row["error"] == error and row["finish_reason"] == "error" and row["score"] is None and row["id"] == 7
