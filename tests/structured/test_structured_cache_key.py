"""The disk-cache key of a structured language fingerprints the source of every module that
builds it, subpackages included (a stale entry would be read as this code's language)."""
from __future__ import annotations

from pathlib import Path

from fstbeam.compiler.structured import language


def test_the_key_covers_every_module_of_the_package_and_its_subpackages(monkeypatch):
    folder = Path(language.__file__).parent
    want = set()
    for f in folder.rglob("*.py"):
        parts = f.relative_to(folder).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts:
            want.add(".".join(("fstbeam.compiler.structured", *parts)))
    got = {m.__name__ for m in language._package_modules()}
    assert "fstbeam.compiler.structured.regex.parse" in want
    assert want <= got, sorted(want - got)
    seen: list[str] = []
    from fstbeam.contract import disk_cache

    monkeypatch.setattr(disk_cache, "source_fingerprint", lambda *mods: seen.extend(m.__name__ for m in mods) or "x")
    language.StructuredSpec.of(r"a+", None, None, None, None).source_hash()
    assert want <= set(seen)
