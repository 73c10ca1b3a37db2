"""Import direction (DESIGN.md): the compile side never imports torch, the decode side never
imports pynini, and the contract package imports neither. Every module of the package is
imported, in a subprocess per group, with the forbidden packages blocked; and no two modules of
the package import each other (a cycle between two modules, lazy imports included)."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "fstbeam"

BLOCKED = {
    "contract": ("torch", "pynini", "transformers"),
    "runtime": ("pynini",),
    "kernels": ("pynini",),
    "fst": ("torch", "transformers"),
    "grammars": ("torch", "transformers"),
    "compiler": ("torch", "transformers"),
    # Files every layer reads (cache folder, text files, the default model's files).
    "files": ("torch", "pynini", "transformers"),
    # Batch jobs run the decoder and compile per-row phrases: both halves, nothing blocked.
    "distributed": (),
    # The front doors use both halves.
    "cli": (),
    # The HTTP server: the decoder and per-request compiles, like batch jobs.
    "serve": (),
}

# The decoder's public modules (fstbeam/runtime/*.py) that its subpackages never import.
_RUNTIME_API = ("decoder", "results", "explain", "explain_view", "presets", "defaults", "templates", "logits_processor")

# Layers inside and between the halves (DESIGN.md, docs/architecture.md): a module of the key
# never imports one of the listed packages, lazy imports included.
LAYERS = {
    "fstbeam.fst": ("fstbeam.grammars", "fstbeam.compiler", "fstbeam.runtime", "fstbeam.cli"),
    "fstbeam.files": ("fstbeam.fst", "fstbeam.grammars", "fstbeam.compiler", "fstbeam.contract", "fstbeam.runtime", "fstbeam.cli"),
    "fstbeam.contract": ("fstbeam.compiler", "fstbeam.runtime", "fstbeam.cli"),
    "fstbeam.compiler.hard": ("fstbeam.compiler.light", "fstbeam.cli"),
    # the lift (a character DFA to a token automaton) under the hard pipeline that calls it
    "fstbeam.compiler.hard.lift": ("fstbeam.compiler.hard.automaton", "fstbeam.compiler.hard.tables"),
    "fstbeam.compiler.light": ("fstbeam.compiler.hard", "fstbeam.cli"),
    # structured constraints: each kind is a byte automaton, lifted by the hard pipeline that
    # the spec (`structured.language`) calls; JSON Schema builds on regexes, never the reverse
    "fstbeam.compiler.structured.json_schema": ("fstbeam.compiler.structured.language", "fstbeam.compiler.hard",
                                                "fstbeam.compiler.light"),
    "fstbeam.compiler.structured.regex": ("fstbeam.compiler.structured.json_schema", "fstbeam.compiler.structured.language",
                                          "fstbeam.compiler.hard", "fstbeam.compiler.light"),
    "fstbeam.runtime": ("fstbeam.compiler", "fstbeam.grammars", "fstbeam.cli"),
    # Inside the decoder: the public API (runtime/*.py) over the search over the model side.
    "fstbeam.runtime.model": ("fstbeam.runtime.search",) + tuple(f"fstbeam.runtime.{m}" for m in _RUNTIME_API),
    "fstbeam.runtime.search": tuple(f"fstbeam.runtime.{m}" for m in _RUNTIME_API),
    "fstbeam.compiler": ("fstbeam.cli", "fstbeam.distributed"),
    "fstbeam.grammars": ("fstbeam.compiler", "fstbeam.cli"),
}

_PROBE = r"""
import importlib, json, sys
blocked = set(sys.argv[1].split(","))

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"import of blocked package {name}")
        return None

sys.meta_path.insert(0, Block())
failed = {}
for mod in sys.argv[2:]:
    try:
        importlib.import_module(mod)
    except Exception as exc:
        failed[mod] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""


def modules(sub: str) -> list[str]:
    """Every importable module of ``fstbeam.<sub>`` (grammar folders are loaded by path, not here)."""
    out = []
    for f in sorted((PKG / sub).rglob("*.py")):
        if not (f.parent / "__init__.py").exists() or f.name == "__main__.py":
            continue
        parts = f.relative_to(PKG.parent).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_every_subpackage_is_covered():
    subs = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}
    assert subs == set(BLOCKED), "add the new subpackage to BLOCKED with what it must not import"


@pytest.mark.parametrize("sub", sorted(BLOCKED))
def test_modules_import_without_forbidden_packages(sub):
    if sub in ("runtime", "kernels"):
        pytest.importorskip("torch")
    mods = modules(sub)
    if sub == "kernels":  # the triton kernel needs triton (a GPU extra)
        try:
            import triton  # noqa: F401
        except ImportError:
            mods = [m for m in mods if not m.endswith("triton_masked_topk")]
    assert mods
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, ",".join(BLOCKED[sub]), *mods], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == {}


def test_package_import_is_light():
    code = "import sys, fstbeam; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    mods = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert not {"torch", "pynini", "transformers"} & mods


def _imports(path: Path, module: str) -> set[str]:
    """fstbeam modules imported anywhere in ``path`` (top level or inside functions)."""
    is_pkg = path.name == "__init__.py"
    package = module if is_pkg else module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("fstbeam"))
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(max(node.level - 1, 0)):
                base = base.rsplit(".", 1)[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            if not target.startswith("fstbeam"):
                continue
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)  # `from . import x` names a module
    return out


def _graph() -> dict[str, set[str]]:
    graph = {}
    for f in PKG.rglob("*.py"):
        parts = f.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[name] = _imports(f, name)
    return graph


def test_layers_import_downwards_only():
    bad = sorted(
        (mod, dep) for mod, deps in _graph().items() for layer, banned in LAYERS.items()
        if mod == layer or mod.startswith(layer + ".")
        for dep in deps for b in banned if dep == b or dep.startswith(b + ".")
    )
    assert bad == []


def test_no_two_modules_import_each_other():
    graph = _graph()
    pairs = sorted(
        (a, b) for a, deps in graph.items() for b in deps
        if a < b and b in graph and a in graph[b] and not b.startswith(a + ".") and not a.startswith(b + ".")
    )
    assert pairs == []


# A newcomer reads a folder or a module in a sitting (issue 38): the package keeps these bounds.
MAX_MODULES_PER_FOLDER = 15
MAX_MODULE_LINES = 450


def test_folders_and_modules_stay_small():
    folders = {f.parent for f in PKG.rglob("*.py")}
    crowded = sorted(f"{d.relative_to(PKG.parent)}: {n}" for d in folders
                     if (n := len(list(d.glob("*.py")))) > MAX_MODULES_PER_FOLDER)
    long = sorted(f"{f.relative_to(PKG.parent)}: {n}" for f in PKG.rglob("*.py")
                  if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES)
    assert crowded == [] and long == [], "split the folder into subpackages or the module by job"


# Folders whose modules use only the public names of their siblings (issue 38).
PUBLIC_ONLY = ("runtime/model", "runtime/search", "compiler/light")


@pytest.mark.parametrize("folder", PUBLIC_ONLY)
def test_modules_import_no_private_names_of_siblings(folder):
    """A private name is free to change without looking at its callers: no module of these folders
    imports one from another module, or reads one as ``sibling._name``."""
    siblings = {f.stem for f in (PKG / folder).glob("*.py")}
    bad = []
    for f in sorted((PKG / folder).glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("fstbeam")):
                bad += [f"{f.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_") and a.name != "__version__"]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and isinstance(node.value, ast.Name) and node.value.id in siblings:
                bad.append(f"{f.name}: {node.value.id}.{node.attr}")
    assert bad == []
