"""Every grammar's cases.tsv, one test per line: accept/reject as the linguist wrote it.

A failing case prints the grammar with its parameters, cases.tsv:line, why the text was
rejected and its longest accepted prefix (what could come next).
"""
from __future__ import annotations

import pytest

from fstbeam import grammars
from fstbeam.errors import GrammarError
from fstbeam.grammars.cases import check_case, read_cases


def _all_cases():
    out = []
    for name in grammars.list_grammars():
        path = grammars.get(name).cases_path
        if path.is_file():
            out += read_cases(path, name)
    return out


CASES = _all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_case(case):
    try:
        failure = check_case(case)
    except GrammarError as exc:
        if isinstance(exc.__cause__, GrammarError) and isinstance(exc.__cause__.__cause__, ImportError):
            pytest.skip(f"{case.grammar}: optional dependency missing ({exc.__cause__})")
        raise
    if failure is not None:
        pytest.fail(failure, pytrace=False)


@pytest.mark.parametrize("name", grammars.list_grammars())
def test_every_grammar_has_accepts_and_rejects(name):
    # A grammar without a reject case would pass even if it accepted everything.
    path = grammars.get(name).cases_path
    assert path.is_file(), f"grammar {name!r} has no cases.tsv: add golden cases in {path}"
    cases = read_cases(path, name)
    assert any(c.expect for c in cases), f"{path}: add at least one accept case"
    assert any(not c.expect for c in cases), f"{path}: add at least one reject case"
