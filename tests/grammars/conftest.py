from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def grammar_dir(tmp_path, monkeypatch):
    """A directory on $FSTBEAM_GRAMMAR_PATH; ``make(name, code, files={...})`` adds a grammar."""
    root = tmp_path / "grammars"
    root.mkdir()
    monkeypatch.setenv("FSTBEAM_GRAMMAR_PATH", str(root))

    def make(name: str, code: str, files: dict[str, str | bytes] | None = None) -> Path:
        folder = root / name
        folder.mkdir()
        (folder / "grammar.py").write_text(textwrap.dedent(code), encoding="utf-8")
        for rel, content in (files or {}).items():
            p = folder / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(textwrap.dedent(content), encoding="utf-8")
        return folder

    return make
