"""The compile side never imports torch; the decode side never imports pynini (DESIGN.md)."""
from __future__ import annotations

import subprocess
import sys

import pytest


def imported_after(stmt: str) -> set[str]:
    code = f"import sys; {stmt}; print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_compiler_does_not_import_torch():
    mods = imported_after(
        "import fstbeam; import fstbeam.compiler.compile, fstbeam.contract.artifact, fstbeam.compiler.cli, "
        "fstbeam.compiler.light, fstbeam.compiler.token_index, fstbeam.kernels.bitmask; fstbeam.compile_constraints"
    )
    assert "torch" not in mods
    assert "transformers" not in mods


def test_package_import_is_light():
    mods = imported_after("import fstbeam")
    assert not {"torch", "pynini", "transformers"} & mods


def test_runtime_does_not_import_pynini():
    pytest.importorskip("torch")
    try:
        mods = imported_after("import fstbeam.runtime, fstbeam.kernels.dispatch")
    except subprocess.CalledProcessError as exc:  # runtime not importable yet
        pytest.fail(exc.stderr)
    assert "pynini" not in mods
