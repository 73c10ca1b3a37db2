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


# Modules a structured compile imports that cannot change a language: errors, cancellation,
# the caches themselves and reading files.
NOT_LANGUAGE = ("fstbeam.errors", "fstbeam.cancel", "fstbeam.contract.disk_cache", "fstbeam.files.cache",
                "fstbeam.files.textfile")


def test_every_module_a_structured_language_is_built_with_is_in_a_cache_key(monkeypatch):
    """A structured language is built only on a miss of the hard tables' disk cache, whose key
    fingerprints this package (`source_hash`) and the hard pipeline's modules (`hard_key`). Every
    fstbeam module the package imports, directly or through another (not through the hard
    pipeline, whose own test covers it), is in one of them: `required_choices` and `exactly_one`,
    which sat in compiler/ outside both, left stale tables behind a change."""
    from fstbeam.compiler.hard import automaton
    from fstbeam.contract import disk_cache
    from fstbeam.contract.vocab import Vocab

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1]))
    from test_import_direction import PKG, _graph

    graph = _graph()
    packages = {m for m in graph if (PKG.parent / m.replace(".", "/") / "__init__.py").exists()}
    todo = [m for m in graph if m.startswith("fstbeam.compiler.structured")]
    reached = set(todo)
    while todo:
        for dep in graph[todo.pop()]:
            outside = dep in packages or dep.startswith("fstbeam.compiler.hard")
            if dep in graph and dep not in reached and not outside:
                reached.add(dep)
                todo.append(dep)
    seen: list[str] = []
    record = lambda *mods: seen.extend(m.__name__ for m in mods) or "x"  # noqa: E731
    monkeypatch.setattr(disk_cache, "source_fingerprint", record)
    monkeypatch.setattr(automaton, "source_fingerprint", record)
    language.StructuredSpec.of(r"a+", None, None, None, None).source_hash()
    automaton.hard_key(Vocab.from_dict({0: b"a", 1: b"b"}, eos_ids=[2]), None, "g", {})
    assert "fstbeam.fst.optimize" in reached
    missing = sorted(m for m in reached - set(seen) if not m.startswith(NOT_LANGUAGE))
    assert missing == [], missing
