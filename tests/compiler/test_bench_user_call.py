"""The compile benchmark (benchmarks/compile_user.py) times the calls the README shows:
``fstbeam.compile_constraints(cefr=..., tokenizer=...)`` and ``fstbeam.with_request(base,
phrases=...)``, through the public names, with their default options (issue 26)."""
from __future__ import annotations

import ast
import random
import sys
from pathlib import Path

import fstbeam
from fstbeam.contract.vocab import Vocab

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "compile_user.py"


def _public_calls(path: Path) -> dict[str, list[ast.Call]]:
    """Calls of ``fstbeam.<name>(...)`` (or of a name bound to ``fstbeam.<name>``), by name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) \
                and isinstance(node.value.value, ast.Name) and node.value.value.id == "fstbeam":
            for t in node.targets:
                if isinstance(t, ast.Name):
                    bound[t.id] = node.value.attr
    out: dict[str, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "fstbeam":
            out.setdefault(f.attr, []).append(node)
        elif isinstance(f, ast.Name) and f.id in bound:
            out.setdefault(bound[f.id], []).append(node)
    return out


def test_benchmark_calls_the_readme_functions():
    bench = _public_calls(BENCH)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("compile_constraints", "with_request"):
        assert f"fstbeam.{name}(" in readme, name  # the README shows the call ...
        assert bench.get(name), name  # ... and the benchmark makes it, through the public name
    # default options: only the spec and the tokenizer, no option that changes what is compiled
    allowed = {"compile_constraints": {"cefr", "tokenizer"}, "with_request": {"phrases"}}
    for name, keys in allowed.items():
        for call in bench[name]:
            given = {k.arg for k in call.keywords}
            assert given <= keys | {None}, (name, given)  # ``**spec`` (None) carries cefr= only


def _vocab() -> Vocab:
    pieces = ["the", " the", "cat", " cat", "dog", " dog", "s", " ", ".", "t", "h", "e", "c", "a", "d", "o", "g"]
    return Vocab.from_dict({i: p.encode() for i, p in enumerate(pieces)}, eos_ids=[len(pieces)])


def test_tiny_run_goes_through_the_public_functions(monkeypatch):
    """Run the benchmark's functions on a tiny vocabulary with spies on the public names."""
    sys.path.insert(0, str(BENCH.parent))
    try:
        import compile_user
    finally:
        sys.path.remove(str(BENCH.parent))
    seen = []
    real_compile, real_request = fstbeam.compile_constraints, fstbeam.with_request

    def spy_compile(**kw):
        seen.append(("compile_constraints", sorted(kw)))
        return real_compile(**kw)

    def spy_request(base, **kw):
        seen.append(("with_request", sorted(kw)))
        return real_request(base, **kw)

    monkeypatch.setattr(fstbeam, "compile_constraints", spy_compile)
    monkeypatch.setattr(fstbeam, "with_request", spy_request)
    words = ["the", "cat", "dog", "cats", "dogs"]
    r = compile_user.user_compile(_vocab(), words=words)
    assert seen[0] == ("compile_constraints", ["tokenizer", "words"])
    assert abs(sum(r["stages_s"].values()) - r["total_s"]) < 0.01  # the stages add up to the total
    out = compile_user.user_requests(r["cc"], words, sizes=(3,), repeat=2, seed=1)
    assert {s[0] for s in seen[1:]} == {"with_request"} and all(s[1] == ["phrases"] for s in seen[1:])
    assert out["3_phrases"]["fresh_best_ms"] > 0
    phrases = compile_user.short_phrases(words, 5, random.Random(0), set())
    assert len(set(phrases)) == 5 and all(len(p.split()) == 2 for p in phrases)
