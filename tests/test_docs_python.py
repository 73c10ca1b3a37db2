"""Every Python block in README.md and docs/*.md runs as written, as a newcomer runs it: the
blocks of one document in order in one Python process (a reader follows a page in one session:
a later block uses the names an earlier one made), in a clean HOME, in a folder that holds the
files the documents make before it (the README's prompts.jsonl and a1.fstbeam, made by running
the documents' own commands).

A block that cannot run here is listed in ``NOT_RUN`` with the reason, and its document says so
in the lines right before it (the reason's words). Documents whose blocks load the real default
model or tokenizer are marked ``slow`` and ``integration`` (``ray`` too where Ray runs them).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_docs_commands import DOCS, ROOT, _block, _blocks, _materialize, _path_without_dot, _runnable  # noqa: E402

#: (document, first line of the block) -> why it cannot run as a script here; the document says
#: so right before the block (these words appear in the 4 lines above it).
NOT_RUN = {
    ("serve.md", "from openai import OpenAI"): "needs a running fstbeam serve",
    ("kernels.md", "from fstbeam.kernels import masked_topk"): "a signature sketch",
    ("grammar_authoring.md", "# y -> ie between a consonant"): "one rule of the inflection grammar",
}
# The documents' commands that make the files a later Python block reads, by file.
MAKES = {"prompts.jsonl": "> prompts.jsonl", "a1.fstbeam": "-o a1.fstbeam"}
NEEDS_MODEL = re.compile(r"Decoder\(|tokenizer=\"default\"|Compiler\(\"default\"\)|generate_dataset|compile_constraints\(")

DRIVER = r'''
import json, sys, traceback
blocks = json.load(open(sys.argv[1], encoding="utf-8"))
ns = {"__name__": "__main__", "__file__": sys.argv[2]}
for line, code in blocks:
    print(f"--- block at line {line}", flush=True)
    try:
        exec(compile(code, f"{sys.argv[3]}:{line}", "exec"), ns)
    except BaseException:
        traceback.print_exc()
        print(f"=== FAILED block at line {line}", flush=True)
        sys.exit(1)
print("=== all blocks ran", flush=True)
'''


def _python_blocks(doc: Path) -> list[tuple[int, list[str]]]:
    return [(start, lines) for lang, start, lines, _ in _blocks(doc) if lang in ("python", "py")]


def _reason(doc: Path, lines: list[str]) -> str | None:
    return next((why for (name, first), why in NOT_RUN.items()
                 if name == doc.name and lines and lines[0].startswith(first)), None)


def _doc_params():
    for doc in DOCS:
        blocks = _python_blocks(doc)
        if not blocks:
            continue
        text = "\n".join("\n".join(b) for _, b in blocks)
        marks = []
        if NEEDS_MODEL.search(text):
            marks += [pytest.mark.slow, pytest.mark.integration]
        if "import ray" in text:
            marks.append(pytest.mark.ray)
        yield pytest.param(doc, marks=marks, id=doc.name)


def test_every_block_not_run_is_named_in_its_document():
    """A block left out says so where a reader sees it, and every entry of NOT_RUN still exists."""
    found = set()
    for doc in DOCS:
        lines = doc.read_text(encoding="utf-8").splitlines()
        for start, block in _python_blocks(doc):
            why = _reason(doc, block)
            if why is None:
                continue
            found.add(why)
            above = " ".join(lines[max(0, start - 6) : start - 1]).lower()
            assert why.lower() in above, f"{doc.name}:{start}: say '{why}' right before the block"
    assert found == set(NOT_RUN.values())


def test_the_documents_have_python_blocks():
    names = {doc.name for doc in DOCS if _python_blocks(doc)}
    assert {"README.md", "api.md", "batch.md", "decoding.md", "terminology.md"} <= names


def _shell_commands(upto: Path) -> list[tuple[str, str]]:
    """(where, command) of every shell line in the documents up to ``upto``, in reading order,
    backslash continuations joined (``printf`` included, which test_docs_commands does not run)."""
    out = []
    for doc in DOCS[: DOCS.index(upto) + 1]:
        for lang, start, lines, _ in _blocks(doc):
            if lang not in ("", "bash", "sh", "console"):
                continue
            buf = ""
            for n, raw in enumerate(lines):
                line = raw.removeprefix("$ ")
                buf += line[:-1] + " " if line.endswith("\\") else line
                if not line.endswith("\\"):
                    if buf.strip() and not buf.lstrip().startswith("#"):
                        out.append((f"{doc.name}:{start + n}", buf.strip()))
                    buf = ""
    return out


def _make_files(work: Path, env: dict, upto: Path) -> None:
    """Run the documents' commands (in reading order, up to ``upto``) that make the files a later
    Python block reads."""
    for file, marker in MAKES.items():
        cmd = next(((where, c) for where, c in _shell_commands(upto) if marker in c), None)
        if cmd is None or (work / file).exists():
            continue
        where, text = cmd
        run = _runnable(text)
        proc = subprocess.run(["bash", "-c", run], cwd=work, env=env, capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0 and (work / file).exists(), f"{where}: {run}\n{proc.stderr[-2000:]}"


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("newcomer-py")
    home = tmp / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FSTBEAM_GRAMMAR", "XDG_"))}
    env.update(HOME=str(home), PATH=_path_without_dot(tmp), FSTBEAM_GRAMMAR_PATH=str(home / "my-grammars"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), NO_COLOR="1")
    env["FSTBEAM_CACHE"] = os.environ["FSTBEAM_CACHE"]
    work = tmp / "work"
    work.mkdir()
    _materialize(work, home)
    (work / "prompts.jsonl").unlink()  # the README makes its own (mixed rows: AnyOf beside plain phrases)
    terms = _block(ROOT / "docs/terminology.md", "# terms.tsv")  # the term base the document shows
    (work / "terms.tsv").write_text("\n".join(terms) + "\n", encoding="utf-8")
    return env, work


@pytest.mark.parametrize("doc", list(_doc_params()))
def test_python_blocks_run_as_written(doc: Path, place, tmp_path):
    env, work = place
    _make_files(work, env, doc)
    blocks = [(start, "\n".join(lines)) for start, lines in _python_blocks(doc) if _reason(doc, lines) is None]
    if not blocks:
        pytest.skip("; ".join(sorted({_reason(doc, lines) or "" for _, lines in _python_blocks(doc)})))
    (tmp_path / "blocks.json").write_text(json.dumps(blocks), encoding="utf-8")
    (tmp_path / "driver.py").write_text(DRIVER, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-W", "error::FutureWarning", str(tmp_path / "driver.py"),
                           str(tmp_path / "blocks.json"), str(work / "block.py"), doc.name],
                          cwd=work, env=env, capture_output=True, text=True, timeout=3600)
    where = f"{doc.name}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0 and "=== all blocks ran" in proc.stdout, where
    assert not re.search(r"DeprecationWarning|FutureWarning", proc.stderr), where  # none on a documented path
