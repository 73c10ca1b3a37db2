"""``cefr=`` reads the CEFR table's first two columns directly (`grammar.forms_at`): the same
forms as the full table gives (`words_at` without inflections)."""
from __future__ import annotations

import pytest

from fstbeam import grammars


@pytest.mark.parametrize("level", ["A1", "A2", "B1", "B2", "C1", "C2"])
def test_forms_at_equals_the_table(level):
    m = grammars.get("cefr").module
    forms = m.forms_at(level)
    assert forms == sorted(forms) and len(set(forms)) == len(forms)
    assert set(forms) == m.words_at(level, inflections=False)
