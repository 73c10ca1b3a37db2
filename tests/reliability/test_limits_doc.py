"""docs/trust.md lists every limit with the value the code uses (issue 23, item 6)."""
from __future__ import annotations

import re
from pathlib import Path

from fstbeam.compiler.hard.lift import token_fsa
from fstbeam.contract import artifact, artifact_validate
from fstbeam.files import textfile
from fstbeam.validate import LIMITS

DOC = Path(__file__).resolve().parents[2] / "docs" / "trust.md"
CONSTANTS = {
    "MAX_ARTIFACT_BYTES": 8 << 30,  # the default (FSTBEAM_MAX_ARTIFACT_BYTES may change it at run time)
    "MAX_MANIFEST_BYTES": artifact_validate.MAX_MANIFEST_BYTES,
    "MAX_MEMBERS": artifact_validate.MAX_MEMBERS,
    "MAX_WIDTH_PADDING": artifact.MAX_WIDTH_PADDING,
    "MAX_TEXT_BYTES": textfile.MAX_TEXT_BYTES,
    "MAX_TOKEN_ARCS": token_fsa.MAX_TOKEN_ARCS,
    "TOKEN_FST_MAX_ARCS": artifact.TOKEN_FST_MAX_ARCS,
}


def documented() -> dict[str, int]:
    rows = re.findall(r"^\| `(\w+)` \| ([\d,]+) \|", DOC.read_text(encoding="utf-8"), re.M)
    return {name: int(value.replace(",", "")) for name, value in rows}


def test_every_limit_is_documented_with_its_value():
    doc = documented()
    assert {k: doc.get(k) for k in LIMITS} == LIMITS
    assert {k: doc.get(k) for k in CONSTANTS} == CONSTANTS
    assert set(doc) == set(LIMITS) | set(CONSTANTS)  # nothing documented that the code lacks


def test_the_manifest_limit_in_the_prose_matches():
    mib = artifact_validate.MAX_MANIFEST_BYTES >> 20
    text = DOC.read_text(encoding="utf-8")
    assert f"The manifest.** At most {mib} MiB" in text and "64 MiB" not in text
