"""benchmarks/structured_oracle.py: schema_coverage counts compiled schemas, accepted valid and
rejected invalid instances, and groups refusals by keyword (tiny synthetic sample)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("jsonschema")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from structured_oracle import schema_coverage, serialize  # noqa: E402


def test_schema_coverage_counts_and_refusals(tmp_path):
    good = {"schema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}},
                       "required": ["n"]},
            "tests": [{"valid": True, "data": {"n": 2}}, {"valid": True, "data": {"x": 1, "n": 3}},
                      {"valid": False, "data": {"n": 4}}, {"valid": False, "data": {}}]}
    refused = {"schema": {"unevaluatedProperties": False}, "tests": []}
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps(refused))
    jsonl = tmp_path / "out.jsonl"
    summary = schema_coverage(sorted(str(p) for p in tmp_path.glob("*.json")), timeout_s=60,
                              jsonl=str(jsonl))
    assert summary["schemas"] == 2 and summary["compiled"] == 1
    assert summary["valid"] == 2 and summary["valid_accepted_pct"] == 100.0
    assert summary["invalid"] == 2 and summary["invalid_rejected_pct"] == 100.0
    assert summary["refusals"] == {"unevaluatedProperties": 1}
    assert len(jsonl.read_text().splitlines()) == 2
    assert serialize(good["schema"], {"x": 1, "n": 3}) == '{"n":3,"x":1}'
