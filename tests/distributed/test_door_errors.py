"""One check per rule (issue 38): an invalid request gets the same message at every door -- the
API, ``compile-constraints``, ``fstbeam generate`` flags, a JSONL line, a batch row and an HTTP
body -- because each door builds a `ConstraintRequest` and the request's check is the only one.

The oracle is the API's own message: every other door's message must contain it (a door may put
where the input was in front: ``in.jsonl:1: ...``, ``command line: ...``)."""
from __future__ import annotations

import json
import os
import sys

import pytest

pytest.importorskip("transformers")

from batch_helpers import read_shards  # noqa: E402

import fstbeam  # noqa: E402
from fstbeam.cli import main  # noqa: E402
from fstbeam.cli.compile_constraints import main as compile_main  # noqa: E402

# (request JSON, the same request as command-line flags, or None where flags cannot say it)
CASES = [
    ({"cefr": "Z9"}, ["--cefr", "Z9"]),
    ({"grammar": "nope"}, ["--grammar", "nope"]),
    ({"grammar_params": {"level": "A1"}, "phrases": ["the"]}, ["--param", "level=A1", "--phrase", "the"]),
    ({"phrases": ["a" * 5000]}, ["--phrase", "a" * 5000]),
    ({"phrases": [[]]}, None),
    ({"avoid": ["ok", ""]}, None),
]
IDS = ["cefr", "grammar", "params", "long-phrase", "empty-anyof", "empty-avoid"]


def api_message(request: dict, tokenizer) -> str:
    from fstbeam.errors import Error

    with pytest.raises(Error) as exc:
        fstbeam.compile_constraints(tokenizer=tokenizer, **request)
    return str(exc.value)


def http_400_messages(server_args: list, constraints: list) -> list:
    """The error message of a 400 answer to a completion with each of ``constraints``, from a
    real server started with ``server_args`` (stopped after, exit 0)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "serve"))
    import urllib.error
    import urllib.request

    from serve_helpers import Server

    server = Server(server_args)
    out = []
    try:
        for r in constraints:
            body = json.dumps({"prompt": "the cat", "max_tokens": 4, "constraints": r}).encode()
            req = urllib.request.Request(server.url + "/v1/completions", body, {"Content-Type": "application/json"})
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(req, timeout=120)
            assert exc.value.code == 400
            out.append(json.loads(exc.value.read())["error"]["message"])
    finally:
        assert server.stop() == 0
    return out


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


@pytest.mark.parametrize("case", range(len(CASES)), ids=IDS)
def test_the_command_lines_give_the_apis_message(case, model_dir, tokenizer, tmp_path, capsys):
    request, flags = CASES[case]
    if flags is None:
        pytest.skip("no command-line flag can say this request")
    expected = api_message(request, tokenizer)
    assert compile_main(["compile", *flags, "--tokenizer", str(model_dir), "-o", str(tmp_path / "a.fstbeam")]) == 2
    assert expected in capsys.readouterr().err
    assert main(["generate", "--model", str(model_dir), "--device", "cpu", *flags, "x"]) == 2
    assert expected in capsys.readouterr().err


def test_a_jsonl_line_a_batch_row_and_http_give_the_apis_message(model_dir, tokenizer, tmp_path, capsys):
    expected = [api_message(r, tokenizer) for r, _ in CASES]
    rows = [{"prompt": "the cat", **r} for r, _ in CASES]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    common = ["--model", str(model_dir), "--device", "cpu", "--format", "raw", "--max-new-tokens", "4", "--beam", "2"]
    # fstbeam generate --file: one error record per bad line
    assert main(["generate", *common, "--file", str(tmp_path / "in.jsonl"), "--jsonl"]) in (1, 2)  # 2: no good line
    jsonl = [json.loads(x)["error"] for x in capsys.readouterr().out.splitlines()]
    # fstbeam batch: the error column of each row
    main(["batch", "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"), "-q", *common])
    batch = [r["error"] for r in sorted(read_shards(tmp_path / "out"), key=lambda r: r["id"])]
    # HTTP: the 400's message
    http = http_400_messages(["--model", model_dir, "--device", "cpu", "--format", "raw"], [r for r, _ in CASES])
    for want, got_jsonl, got_batch, got_http in zip(expected, jsonl, batch, http):
        assert want in got_jsonl and want in got_batch and want in got_http, (want, got_jsonl, got_batch, got_http)


# Requests that the merge rule refuses on a base (words, the ordered phrases "the cat" then "dog",
# the prefix "the"): a second hard part, a second ordered list, a second prefix.
ON_BASE = [{"cefr": "A1"}, {"phrases": ["a", "mat"], "ordered": True}, {"prefix": "a"}]


def test_the_merge_rules_refusals_are_one_message_at_every_door(model_dir, tokenizer, tmp_path, capsys):
    """`ConstraintRequest.added_to` is the one check: the API (a service's Compiler), a JSONL line
    of ``fstbeam generate --constraints``, a batch row on the job's artifact and an HTTP body on a
    stored artifact give its message (after the door's own place)."""
    from batch_helpers import WORDS

    from fstbeam import ConstraintRequest
    from fstbeam.compiler.compiler import compiler_for
    from fstbeam.errors import SpecError

    base = fstbeam.compile_constraints(tokenizer=tokenizer, words=WORDS, phrases=["the cat", "dog"], ordered=True,
                                       prefix="the")
    path = tmp_path / "base.fstbeam"
    base.save(path)
    expected = []
    for r in ON_BASE:
        with pytest.raises(SpecError) as exc:
            compiler_for(tokenizer).compile_request(ConstraintRequest.from_kwargs(**r), base=base)
        expected.append(str(exc.value).split(": ", 1)[1])  # after the place ("request", "prefix")
    rows = [{"prompt": "the cat", **r} for r in ON_BASE]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    common = ["--model", str(model_dir), "--device", "cpu", "--format", "raw", "--max-new-tokens", "4", "--beam", "2",
              "--constraints", str(path)]
    assert main(["generate", *common, "--file", str(tmp_path / "in.jsonl"), "--jsonl"]) in (1, 2)
    jsonl = [json.loads(x)["error"] for x in capsys.readouterr().out.splitlines()]
    main(["batch", "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out"), "-q", *common])
    batch = [r["error"] for r in sorted(read_shards(tmp_path / "out"), key=lambda r: r["id"])]
    http = http_400_messages(["--model", model_dir, "--device", "cpu", "--format", "raw", "--constraints", f"base={path}"],
                             [{"artifact": "base", **r} for r in ON_BASE])
    assert len(jsonl) == len(batch) == len(http) == len(ON_BASE)
    for want, got_jsonl, got_batch, got_http in zip(expected, jsonl, batch, http):
        assert want in got_jsonl and want in got_batch and want in got_http, (want, got_jsonl, got_batch, got_http)
