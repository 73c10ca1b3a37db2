"""Every shell command in README.md and docs/*.md runs as written, the way a newcomer runs it: in
a clean temporary HOME, with no Graphviz ``dot`` on PATH, in one working folder (the README
first, then docs/ in name order, each in document order: an artifact the README compiles, such as
a1.fstbeam, is there for docs/decoding.md, as it is for a reader who follows them).

A command passes when it exits 0, or 1 where 1 is an answer rather than a failure (``generate``
and ``batch``: some output unsatisfied; ``inspect --check``: the text is rejected), prints no
traceback, and, where the document shows its output in a ``text`` block right after it, prints
lines like those (numbers may differ; ``...`` stands for anything).

The files the documents assume (prompts.txt, prompts.jsonl, inputs.jsonl, animals.txt, the
tutorial's greetings grammar) are made from the documents' own blocks where they show them.
Commands that load the real default model or tokenizer are marked ``slow`` and ``integration``
(CI runs them; the converted model is cached once per run, in the session cache that
tests/conftest.py sets up). The others run in the default ``pytest``.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMANDS = ("compile-constraints", "fstbeam", "python", "python3", "export", "ray", ".")

# Commands a CI machine cannot run as written, each with the reason.
SKIP = {
    "python -m pytest -q": "the test suite itself (CI runs it as its own step)",
    "ray start": "needs a multi-node Ray cluster",
    "--ray-address auto": "needs the multi-node cluster that `ray start` makes",
    "benchmarks/bench_": "a benchmark (minutes of timing on a quiet machine), not a usage example",
    "--model ./my-model": "needs the reader's own model folder",
}
# Steps of a command chain that set up the environment the tests already run in.
SETUP_STEP = re.compile(r"^(python3? -m venv|\. \.venv/bin/activate|pip install)")
# The real default model or tokenizer (minutes each on a busy machine), or a test session of its own.
NEEDS_MODEL = re.compile(r"\bfstbeam (generate|batch|serve)\b|-m fstbeam\.serve\b|compile-constraints compile\b|\.fstbeam\b"
                         r"|-m pytest\b")
# A server: started as written, asked the documented request once ready, stopped with SIGTERM.
SERVES = re.compile(r"\bfstbeam serve\b|-m fstbeam\.serve\b")
ANSWER_IS_ONE = re.compile(r"\bfstbeam (generate|batch)\b|--check\b|--cases\b")


@dataclass(frozen=True)
class Command:
    doc: Path
    line: int
    text: str
    expected: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.doc.name}:{self.line}"


def _blocks(doc: Path):
    """(language, first line number, lines) of every fenced block."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang, start = lines[i][3:].strip(), i + 2
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            yield lang, start, lines[i + 1 : j], j
            i = j + 1
        else:
            i += 1


def _commands_of(doc: Path) -> list[Command]:
    out: list[Command] = []
    blocks = list(_blocks(doc))
    text_lines = doc.read_text(encoding="utf-8").splitlines()
    for k, (lang, start, lines, end) in enumerate(blocks):
        if lang not in ("", "bash", "sh", "console"):
            continue
        cmds: list[Command] = []
        buf, first = "", 0
        for n, raw in enumerate(lines):
            line = raw.removeprefix("$ ")
            if not buf and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if not buf and line.split(" ", 1)[0] not in COMMANDS:
                continue
            if not buf:
                first = start + n
            buf += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
            if not line.endswith("\\"):
                cmds.append(Command(doc, first, buf.strip()))
                buf = ""
        # a ``text`` block right after (prose in between allowed) shows the last command's output
        nxt = blocks[k + 1] if k + 1 < len(blocks) else None
        if cmds and nxt and nxt[0] == "text" and not any(t.startswith("```") for t in text_lines[end + 1 : nxt[1] - 2]):
            cmds[-1] = Command(doc, cmds[-1].line, cmds[-1].text, tuple(x for x in nxt[2] if x.strip()))
        out += cmds
    return out


ALL = [c for doc in DOCS for c in _commands_of(doc)]


def _runnable(cmd: str) -> str | None:
    """The command without the set-up steps of its chain, or None if nothing is left."""
    steps = [s.strip() for s in cmd.split("&&")]
    keep = [s for s in steps if not SETUP_STEP.match(s)]
    return " && ".join(keep) or None


def _block(doc: Path, first_line: str) -> list[str]:
    for _, _, lines, _ in _blocks(doc):
        if lines and lines[0].startswith(first_line):
            return lines
    raise AssertionError(f"{doc.name} has no block starting with {first_line!r}: the tutorial changed")


def _materialize(work: Path, home: Path) -> None:
    """The files the documents assume, from the documents' own blocks where they show them."""
    ga, batch, terms = ROOT / "docs/grammar_authoring.md", ROOT / "docs/batch.md", ROOT / "docs/terminology.md"
    (work / "animals.txt").write_text("\n".join(_block(ga, "# animals.txt")) + "\n", encoding="utf-8")
    greet = home / "my-grammars" / "greetings"
    (greet / "data").mkdir(parents=True)
    (greet / "grammar.py").write_text("\n".join(_block(ga, '"""Greetings followed by a name')) + "\n", encoding="utf-8")
    (greet / "data/greetings.tsv").write_text("\n".join(_block(ga, "# greeting")) + "\n", encoding="utf-8")
    (greet / "data/names.tsv").write_text("Anna\nMaria\n", encoding="utf-8")  # "with Anna and Maria, one per line"
    (greet / "cases.tsv").write_text("\n".join(_block(ga, "# Golden cases for greetings.")) + "\n", encoding="utf-8")
    (work / "prompts.jsonl").write_text("\n".join(_block(batch, '{"id": "s1"')) + "\n", encoding="utf-8")
    (work / "inputs.jsonl").write_text("\n".join(_block(terms, '{"prompt"')) + "\n", encoding="utf-8")
    (work / "prompts.txt").write_text("What do you eat for breakfast?\nWho is in your family?\n", encoding="utf-8")
    (work / "tests").symlink_to(ROOT / "tests")  # `python -m pytest tests/...` from a clone's root


def _entry_points(tools: Path) -> None:
    """The console scripts pyproject.toml declares, as an install makes them (so a stale script
    left in a shared environment by an older layout cannot stand in for them)."""
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for name, target in scripts.items():
        module, func = target.split(":")
        (tools / name).write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n")
        (tools / name).chmod(0o755)


def _path_without_dot(tmp: Path) -> str:
    """The package's commands, this Python's bin folder and a folder of the few system tools a
    command may call."""
    tools = tmp / "tools"
    tools.mkdir()
    _entry_points(tools)
    for name in ("sh", "bash", "env", "cat", "ls", "head", "grep", "mkdir", "rm", "cp", "uname", "curl"):
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    path = os.pathsep.join([str(tools), str(Path(sys.executable).parent)])
    assert shutil.which("dot", path=path) is None
    return path


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """(environment, working folder): a fresh HOME and one folder for all the documents."""
    tmp = tmp_path_factory.mktemp("newcomer")
    home = tmp / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FSTBEAM_GRAMMAR", "XDG_"))}
    env.update(HOME=str(home), PATH=_path_without_dot(tmp), FSTBEAM_GRAMMAR_PATH=str(home / "my-grammars"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), NO_COLOR="1")
    env["FSTBEAM_CACHE"] = os.environ["FSTBEAM_CACHE"]  # the session cache: the converted model once per run
    work = tmp / "work"
    work.mkdir()
    _materialize(work, home)
    return env, work


def _pattern(expected: str) -> re.Pattern:
    """A shown line as a pattern: numbers match any number, ``...`` anything."""
    number = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
    parts = re.split(r"(\.\.\.|-?\d[\d,]*(?:\.\d+)?)", expected.strip())
    rx = "".join(".*" if p == "..." else r"-?[\d,.]+" if number.fullmatch(p) else re.escape(p) for p in parts)
    return re.compile(rx)


def _params():
    for c in ALL:
        marks = []
        reason = next((why for key, why in SKIP.items() if key in c.text), None)
        if reason:
            marks.append(pytest.mark.skip(reason=reason))
        if NEEDS_MODEL.search(c.text):
            marks += [pytest.mark.slow, pytest.mark.integration]
        yield pytest.param(c, marks=marks, id=c.id)


def test_the_documents_have_commands():
    docs = {c.doc.name for c in ALL}
    assert {"README.md", "decoding.md", "grammar_authoring.md", "batch.md", "terminology.md"} <= docs
    assert any("inspect --grammar dates --check" in c.text and "--draw dates.svg" in c.text for c in ALL)


@pytest.mark.parametrize("cmd", list(_params()))
def test_documented_command_runs_as_written(cmd: Command, place):
    env, work = place
    run = _runnable(cmd.text)
    if run is None:
        pytest.skip("only sets up the environment")
    if SERVES.search(run):
        _serve_as_documented(cmd, run, env, work)
        return
    proc = subprocess.run(["bash", "-c", run], cwd=work, env=env, check=False, capture_output=True, text=True,
                          timeout=1800)
    ok = (0, 1) if ANSWER_IS_ONE.search(run) else (0,)
    where = f"{cmd.id}: {run}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    assert proc.returncode in ok, where
    assert "Traceback" not in proc.stderr, where
    out = [x.strip() for x in proc.stdout.splitlines()]
    at = 0
    for want in cmd.expected:  # the shown lines, in order
        rx = _pattern(want)
        while at < len(out) and not rx.fullmatch(out[at]):
            at += 1
        assert at < len(out), f"no line like {want!r} in the output of {where}"
        at += 1


def _documented_request() -> str:
    """The first request docs/serve.md sends (its first curl command, continuation lines joined)."""
    lines = _block(ROOT / "docs/serve.md", "curl -s localhost:8000/v1/completions")
    end = next(i for i, x in enumerate(lines) if not x.strip())
    return "\n".join(lines[:end])


def _serve_as_documented(cmd: Command, run: str, env: dict, work: Path) -> None:
    """Start the server as written, wait until it is ready, send the documented request, then
    SIGTERM: the request is answered and the server exits 0 without a traceback."""
    import json
    import signal
    import socket
    import threading
    import time

    port = int(m.group(1)) if (m := re.search(r"--port (\d+)", run)) else 8000
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            pytest.skip(f"port {port} is in use on this machine: the documented command needs it free")
    proc = subprocess.Popen(["bash", "-c", "exec " + run], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    ready = threading.Event()

    def read():
        for line in proc.stderr:
            lines.append(line)
            if "fstbeam serve: ready on " in line:
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + 1800
        while not ready.wait(1) and time.monotonic() < deadline:
            pass
        where = lambda: f"{cmd.id}: {run}\n--- stderr\n{''.join(lines)[-3000:]}"  # noqa: E731
        assert proc.poll() is None and any("ready on" in x for x in lines), where()
        if port == 8000:  # the documented request names the default port
            req = subprocess.run(["bash", "-c", _documented_request()], cwd=work, env=env, capture_output=True,
                                 text=True, timeout=900)
            answer = json.loads(req.stdout)
            assert req.returncode == 0 and answer["object"] == "text_completion", where() + req.stdout
            assert answer["choices"][0]["text"].strip() and answer["usage"]["completion_tokens"] > 0, where()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0, where()
        assert "Traceback" not in "".join(lines), where()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
