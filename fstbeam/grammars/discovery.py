"""Where grammars are found: one folder per grammar in this package, then in every directory of
``$FSTBEAM_GRAMMAR_PATH``; each folder's ``grammar.py`` is loaded once per process."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
import types
from pathlib import Path

from ..errors import GrammarError

__all__ = ["ENV_PATH", "LIB_DIR", "PACKAGE_DIR", "check_grammar_name", "grammar_dirs", "list_grammars"]

PACKAGE_DIR = Path(__file__).resolve().parent
LIB_DIR = PACKAGE_DIR / "lib"
ENV_PATH = "FSTBEAM_GRAMMAR_PATH"
_NOT_GRAMMARS = {"lib", "__pycache__"}


def grammar_dirs() -> list[Path]:
    """Where grammars are looked up: this package, then ``$FSTBEAM_GRAMMAR_PATH``."""
    dirs = [PACKAGE_DIR]
    for entry in os.environ.get(ENV_PATH, "").split(os.pathsep):
        if entry.strip():
            dirs.append(Path(entry.strip()).expanduser().resolve())
    return dirs


def _candidates() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for root in grammar_dirs():
        if not root.is_dir():
            continue
        for sub in sorted(root.iterdir()):
            if sub.name in _NOT_GRAMMARS or sub.name.startswith((".", "_")):
                continue
            if (sub / "grammar.py").is_file():
                found.setdefault(sub.name, []).append(sub)
    return found


def list_grammars() -> list[str]:
    """Names of every grammar folder found (see `grammar_dirs`), sorted."""
    return sorted(_candidates())


def check_grammar_name(name, where: str = "grammar") -> str:
    """``name`` if a grammar folder of that name exists (nothing is built): the one check of a
    grammar name, at every door. The message lists the names, never a folder's path."""
    from ..errors import GrammarError

    if not isinstance(name, str) or not name:
        raise GrammarError(f"{where}: a grammar name must be a non-empty string, got {name!r:.60}")
    names = list_grammars()
    if name not in names:
        raise GrammarError(f"{where}: unknown grammar {name!r:.80}; known grammars: {', '.join(names) or 'none'} "
                           f"(compile-constraints inspect --list-grammars; a grammar is a folder with grammar.py in "
                           f"fstbeam/grammars or under ${ENV_PATH})")
    return name


_MODULES: dict[Path, tuple[float, types.ModuleType]] = {}
_MODULES_LOCK = threading.Lock()


def _load_module(name: str, folder: Path) -> types.ModuleType:
    path = folder / "grammar.py"
    mtime = path.stat().st_mtime
    with _MODULES_LOCK:
        hit = _MODULES.get(path)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        mod_name = f"fstbeam.grammars._loaded.{name}_{hashlib.sha1(str(folder).encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise GrammarError(f"grammar {name!r}: cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(mod_name, None)
            raise GrammarError(
                f"grammar {name!r}: {path} failed to import: {type(exc).__name__}: {exc}"
            ) from exc
        _MODULES[path] = (mtime, module)
        return module
