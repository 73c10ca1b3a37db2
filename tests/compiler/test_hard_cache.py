"""A compiled word list is cached on disk by its content, options and tokenizer fingerprint:
a second compile (in this process or another) loads it instead of building it again."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fstbeam
from fstbeam.compiler.hard import automaton as H
from fstbeam.contract.vocab import Vocab

PIECES = ["the", " the", "cat", " cat", "s", " ", ".", "t", "h", "e", "c", "a"]
WORDS = ["the", "cat", "cats"]


def _vocab() -> Vocab:
    return Vocab.from_dict({i: p.encode() for i, p in enumerate(PIECES)}, eos_ids=[len(PIECES)])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FSTBEAM_CACHE", str(tmp_path))
    monkeypatch.delenv("FSTBEAM_NO_DISK_CACHE", raising=False)
    return tmp_path


def _hard_files(root):
    return sorted((root / "index").glob("hard-*.npz"))


def test_second_compile_loads_the_cached_tables(cache, monkeypatch):
    first = fstbeam.compile_constraints(words=WORDS, tokenizer=_vocab())
    assert len(_hard_files(cache)) == 1 and "word list" in first.stats["seconds"]

    def no_build(*a, **k):
        raise AssertionError("rebuilt instead of loading the cache")

    monkeypatch.setattr(H, "word_list_dfa", no_build)
    second = fstbeam.compile_constraints(words=WORDS, tokenizer=_vocab(), phrases=["cat"])
    assert "word list" not in second.stats["seconds"]
    for name, a in first.hard.arrays().items():
        assert np.array_equal(a, getattr(second.hard, name)), name
    assert second.char_fst == first.char_fst and second.token_fst_bytes() == first.token_fst_bytes()


def test_a_different_list_option_or_tokenizer_is_a_different_entry(cache):
    fstbeam.compile_constraints(words=WORDS, tokenizer=_vocab())
    fstbeam.compile_constraints(words=WORDS + ["a"], tokenizer=_vocab())
    fstbeam.compile_constraints(words=WORDS, tokenizer=_vocab(), digits=False)
    other = Vocab.from_dict({i: p.encode() for i, p in enumerate(PIECES + ["ca"])}, eos_ids=[len(PIECES) + 1])
    fstbeam.compile_constraints(words=WORDS, tokenizer=other)
    assert len(_hard_files(cache)) == 4


def test_a_damaged_entry_is_rebuilt(cache):
    fstbeam.compile_constraints(words=WORDS, tokenizer=_vocab())
    (path,) = _hard_files(cache)
    path.write_bytes(b"not an npz file")
    again = fstbeam.compile_constraints(words=WORDS, tokenizer=_vocab())
    assert "word list" in again.stats["seconds"] and again.hard.final.any()


def test_another_process_loads_it(cache):
    code = (
        "import json, fstbeam\n"
        "from fstbeam.contract.vocab import Vocab\n"
        f"v = Vocab.from_dict({{i: p.encode() for i, p in enumerate({PIECES!r})}}, eos_ids=[{len(PIECES)}])\n"
        f"cc = fstbeam.compile_constraints(words={WORDS!r}, tokenizer=v)\n"
        "print(json.dumps(sorted(cc.stats['seconds'])))\n"
    )
    env = dict(os.environ, FSTBEAM_CACHE=str(cache))
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout)
            for _ in range(2)]
    assert "word list" in runs[0] and "word list" not in runs[1]


def test_extend_checks_against_the_kept_arcs(cache):
    """A compile with nothing to check keeps only the DFA's arcs; extend() flattens them into the
    same language as the artifact's character FST (the independent oracle) and checks with it."""
    from fstbeam.compiler.compiler import _HARD_OF, compiler_for
    from fstbeam.compiler.pipeline import hard_dfa_from_bytes
    from fstbeam.errors import UnsatisfiableConstraintError

    cc = fstbeam.compile_constraints(words=WORDS, tokenizer=_vocab())
    comp = compiler_for(cc.vocab)
    assert isinstance(_HARD_OF[cc], tuple)  # the arcs, not the flat table
    with pytest.raises(UnsatisfiableConstraintError):
        fstbeam.with_request(cc, phrases=["dog"])
    fstbeam.with_request(cc, phrases=["cats"])
    kept, oracle = comp.hard_dfa(cc), hard_dfa_from_bytes(cc.char_fst)
    rng = np.random.default_rng(0)
    alphabet = list("thecas .,!'0T")
    texts = ["the cat", "cats.", "The cat's", "cat 12", "dog", ""]
    texts += ["".join(rng.choice(alphabet, size=rng.integers(1, 9))) for _ in range(400)]
    for t in texts:
        assert kept.accepts(t.encode()) == oracle.accepts(t.encode()), t


def test_the_kept_automaton_goes_with_its_compiled_object(cache):
    """The hard DFA kept for extend() lives as long as the compiled objects that share it, not in
    the process-wide cache: a process that compiles schema after schema keeps none of the ones
    it has let go (each held tens of MB there, under every later compile's peak)."""
    import gc

    from fstbeam.compiler.compiler import _HARD_OF

    cc = fstbeam.compile_constraints(words=WORDS, tokenizer=_vocab())
    derived = fstbeam.with_request(cc, phrases=["cats"])
    assert _HARD_OF[derived] is _HARD_OF[cc]  # shared, not rebuilt
    before = len(_HARD_OF)
    del cc, derived
    gc.collect()
    assert len(_HARD_OF) == before - 2


def test_the_disk_cache_key_covers_every_module_that_builds_the_tables(monkeypatch):
    """A change to any module of the hard pipeline makes a new key (a stale entry would be read as
    this code's tables): every module of compiler/hard/ and hard/lift/ but the CEFR reader (its words are hashed)
    is fingerprinted."""
    import importlib
    from pathlib import Path

    seen: list[str] = []
    monkeypatch.setattr(H, "source_fingerprint", lambda *mods: seen.extend(m.__name__ for m in mods) or "x")
    H.hard_key(_vocab(), None, "g", {})
    folder = Path(H.__file__).parent
    names = {"fstbeam.compiler.hard." + ".".join(p.relative_to(folder).with_suffix("").parts)
             for p in folder.rglob("*.py") if p.stem not in ("__init__", "cefr")}
    for name in names:
        importlib.import_module(name)
    assert names <= set(seen), sorted(names - set(seen))
