"""benchmarks/json_schema_suite.py: one JSONSchemaBench-style file per test group of a suite
laid out as the official JSON Schema Test Suite is (a synthetic two-draft suite here)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from json_schema_suite import convert, main  # noqa: E402


def test_groups_become_files_with_their_draft(tmp_path):
    suite = tmp_path / "tests"
    (suite / "draft7" / "optional" / "format").mkdir(parents=True)
    (suite / "draft2020-12").mkdir()
    groups = [{"description": "g", "schema": {"type": "integer"}, "tests": [{"description": "t", "data": 1, "valid": True}]},
              {"description": "h", "schema": {"$schema": "x", "minimum": 2}, "tests": []},
              {"description": "b", "schema": True, "tests": [{"description": "t", "data": None, "valid": True}]}]
    (suite / "draft7" / "type.json").write_text(json.dumps(groups))
    (suite / "draft7" / "optional" / "format" / "ipv4.json").write_text(json.dumps(groups[:1]))
    (suite / "draft2020-12" / "refRemote.json").write_text(json.dumps(groups))
    out = tmp_path / "cases"
    assert convert(suite, out) == 4
    names = sorted(p.name for p in out.iterdir())
    assert names == ["draft7---optional-format-ipv4_0.json", "draft7---type_0.json", "draft7---type_1.json",
                     "draft7---type_2.json"]
    first = json.loads((out / "draft7---type_0.json").read_text())
    assert first["schema"] == {"type": "integer", "$schema": "http://json-schema.org/draft-07/schema#"}
    assert first["tests"] == [{"description": "t", "valid": True, "data": 1}]
    assert json.loads((out / "draft7---type_1.json").read_text())["schema"]["$schema"] == "x"  # (its own kept)
    assert json.loads((out / "draft7---type_2.json").read_text())["schema"] is True
    assert main([str(tmp_path / "nowhere"), str(out)]) == 2
