"""Every usage error of the command lines is reported before anything slow: no model, tokenizer,
torch or transformers is loaded (a proxy for "in a fraction of a second", which
benchmarks/bench_usage_errors.py times)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

CASES = [
    ("generate", ["--shortlist", "on", "x"], "shortlist='on' needs renormalize=True"),
    ("generate", ["--beam", "2", "--nbest", "3", "x"], "nbest must be between 1 and beam_size=2 (got 3) (the flag --nbest)"),
    ("generate", ["--beam", "0", "x"], "beam_size must be a positive integer (got 0) (the flag --beam)"),
    ("generate", ["--nbest", "0", "x"], "nbest must be between 1 and beam_size=5 (got 0)"),
    ("generate", ["--max-new-tokens", "4", "--min-new-tokens", "9", "x"], "min_new_tokens=9 exceeds max_new_tokens=4"),
    ("generate", ["--length-reward", "nan", "x"], "(the flag --length-reward)"),
    ("generate", ["--cefr", "Z9", "x"], "unknown CEFR level 'Z9'"),
    ("generate", ["--grammar", "nope", "x"], "unknown grammar 'nope'"),
    ("generate", ["--param", "level=A1", "--cefr", "A1", "x"],
     "grammar_params= sets parameters of a grammar: give grammar= too (the flag --param)"),
    ("generate", ["--constraints", "a.fstbeam", "--cefr", "A1", "x"], "not both"),
    ("generate", ["--constraints", "missing.fstbeam", "x"], "artifact 'missing.fstbeam' does not exist"),
    ("generate", ["--constraints", "a.fstbeam", "--leading-space", "x"], "an artifact keeps the choice"),
    ("generate", ["--phrase", "tea", "--leading-space", "x"], "--leading-space applies to a word list"),
    ("generate", ["--words", "missing.txt", "x"], "word list 'missing.txt' does not exist"),
    ("generate", ["--file", "missing.txt"], "prompt file 'missing.txt' does not exist"),
    ("generate", ["--format", "no placeholder", "x"], "is none of raw, chat, auto, qa and holds no {prompt}"),
    ("generate", [], "no prompts"),
    ("batch", ["--input", "missing.jsonl", "--output", "out"], "input file 'missing.jsonl' is not a file"),
    ("batch", ["--input", "in.jsonl", "--output", "out", "--shortlist", "on"], "shortlist='on' needs renormalize=True"),
    ("compile", ["--cefr", "A1", "--param", "x=1", "-o", "a.fstbeam"], "grammar_params= sets parameters of a grammar"),
    ("compile", ["-o", "a.fstbeam"], "no constraint given"),
    ("compile", ["--any", "--cefr", "A1", "-o", "a.fstbeam"], "--any means no constraint"),
    ("compile", ["--cefr", "A9", "-o", "a.fstbeam"], "unknown CEFR level 'A9'"),
    ("compile", ["--cefr", "A1", "-o", "missing/a.fstbeam"], "the folder 'missing' does not exist"),
    ("inspect", [], "give an artifact file, --grammar NAME or --list-grammars"),
    ("inspect", ["a.fstbeam", "--check", "hi"], "--check checks a grammar"),
    ("inspect", ["--grammar", "dates", "--after", "3"], "--after lists the tokens allowed in an artifact"),
    ("inspect", ["--grammar", "dates", "--draw", "d.pdf"], "cannot draw to 'd.pdf'"),
    ("inspect", ["--grammar", "dates", "--draw-after", "3"], "give --draw FILE too"),
    ("inspect", ["--grammar", "nope"], "unknown grammar 'nope'"),
]

_CHILD = r"""
import contextlib, io, json, sys
from fstbeam.cli.main import main as fstbeam_main
from fstbeam.cli.compile_constraints import main as cc_main
out = []
for cmd, args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        main = fstbeam_main if cmd in ("generate", "batch") else cc_main
        code = main([cmd, *args])
    out.append([code, err.getvalue()])
heavy = sorted(m for m in ("torch", "transformers", "safetensors") if m in sys.modules)
print(json.dumps({"results": out, "heavy": heavy}))
"""


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    d = tmp_path_factory.mktemp("usage")
    (d / "a.fstbeam").write_bytes(b"not read")
    (d / "in.jsonl").write_text('{"prompt": "x"}\n')
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([[c, a] for c, a, _ in CASES])],
                          cwd=d, check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_no_usage_error_loads_anything_heavy(outcomes):
    assert outcomes["heavy"] == []


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{c}-{n}" for n, (c, _, _) in enumerate(CASES)])
def test_usage_error_exits_2_with_its_reason(outcomes, i):
    code, err = outcomes["results"][i]
    assert code == 2 and CASES[i][2] in err, err
