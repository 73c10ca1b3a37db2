"""Every option of a request has a command-line flag, and the flags build the same request as the
API's keywords (issue 38: ``case_variants`` and ``digits`` had no flag; ``sentence_case`` was
missing from ``compile_constraints``)."""
from __future__ import annotations

import inspect

import pytest

import fstbeam
from fstbeam.cli.compile_constraints import build_parser as compile_parser
from fstbeam.cli.main import build_parser
from fstbeam.compiler.request import JSON_KEYS, ConstraintRequest

CASES = [
    (["--cefr", "a1", "--no-case-variants", "--no-digits"], dict(cefr="A1", case_variants=False, digits=False)),
    (["--cefr", "B2", "--digits"], dict(cefr="B2", digits=True)),
    (["--phrase", "green tea", "--sentence-case", "--ordered", "--phrase", "cup"],
     dict(phrases=["green tea", "cup"], sentence_case=True, ordered=True)),
    (["--grammar", "dates", "--param", "order=dmy"], dict(grammar="dates", grammar_params={"order": "dmy"})),
]


@pytest.mark.parametrize("flags,kwargs", CASES)
def test_flags_build_the_apis_request(flags, kwargs):
    want = ConstraintRequest.from_kwargs(where="command line", **kwargs)
    gen = ConstraintRequest.from_args(build_parser().parse_args(["generate", *flags, "x"]))
    comp = ConstraintRequest.from_args(compile_parser().parse_args(["compile", *flags, "-o", "a.fstbeam"]))
    assert gen == want and comp == want
    assert gen.to_json() == want.to_json()


def test_compile_constraints_takes_every_request_key():
    params = set(inspect.signature(fstbeam.compile_constraints).parameters)
    assert set(JSON_KEYS) <= params
