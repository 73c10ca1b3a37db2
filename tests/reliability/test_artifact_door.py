"""Artifacts (issue 23, item 3): re-sealed manifests that lie about shapes, the tokenizer width or
a constraint's label are ArtifactCorruptError, before anything big is built."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "compiler"))
import fstbeam  # noqa: E402
from fstbeam.errors import ArtifactCorruptError  # noqa: E402

from artifact_mutations import build_original, rezip, small_vocab, unzip  # noqa: E402


@pytest.fixture(scope="module")
def orig():
    return unzip(build_original())


def _edit(orig, fn) -> bytes:
    m = json.loads(orig["manifest.json"])
    fn(m)
    members = dict(orig)
    members["manifest.json"] = json.dumps(m).encode()
    return rezip(members)  # re-sealed: every checksum recomputed, as an attacker would


def _save(tmp_path, data: bytes, name="x.fstbeam"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("shape", [[2**32, 2**32], [2**40, 2**40], [2**62, 4], [3, -1], [1.5, 2]])
def test_shape_product_overflow(orig, tmp_path, shape):
    def edit(m):
        name = next(n for n in m["members"] if n.endswith("default_next.npy"))
        m["members"][name]["shape"] = shape

    p = _save(tmp_path, _edit(orig, edit))
    with pytest.raises(ArtifactCorruptError):
        fstbeam.load_constraints(p, tokenizer=small_vocab())


def test_inspect_of_a_shape_overflow_exits_1_with_a_message(orig, tmp_path):
    def edit(m):
        name = next(n for n in m["members"] if n.endswith("default_next.npy"))
        m["members"][name]["shape"] = [2**32, 2**32]

    p = _save(tmp_path, _edit(orig, edit))
    r = subprocess.run([sys.executable, "-c", "import sys; from fstbeam.cli.compile_constraints import main; "
                        "sys.exit(main(sys.argv[1:]))", "inspect", str(p)], capture_output=True, text=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "default_next" in r.stderr


def test_huge_width_fails_before_the_vocabulary_is_built(tmp_path, monkeypatch):
    """Width 2**26 over the default tokenizer: refused before a 67M-entry table (3.9 GB, a 514 MiB
    cache file) is built."""
    monkeypatch.setenv("FSTBEAM_CACHE", os.environ.get("FSTBEAM_CACHE", os.path.expanduser("~/.cache/fstbeam")))
    cc = fstbeam.compile_constraints(phrases=["the cat"])
    cc.save(tmp_path / "a.fstbeam")
    members = unzip((tmp_path / "a.fstbeam").read_bytes())

    def edit(m):
        m["tokenizer"]["width"] = 2**26
        for light in m["light"]:
            light["width"] = 2**26

    p = _save(tmp_path, _edit(members, edit), "wide.fstbeam")
    from fstbeam.contract import vocab as vocab_mod

    built = []
    real = vocab_mod.Vocab.from_tokenizer_json
    monkeypatch.setattr(vocab_mod.Vocab, "from_tokenizer_json",
                        classmethod(lambda cls, *a, **k: built.append(k.get("width")) or real.__func__(cls, *a, **k)))
    t = time.perf_counter()
    with pytest.raises(ArtifactCorruptError, match="width"):
        fstbeam.load_constraints(p)
    assert 2**26 not in built
    assert time.perf_counter() - t < 30  # generous: the point is that nothing of that size is built


def _relabel(orig, role: str, new: str):
    def edit(m):
        i = next(i for i, a in enumerate(m["light"]) if a["role"] == role)
        old = m["light"][i]["text"]
        m["light"][i]["text"], m["light"][i]["literal"] = new, {"hex": new.encode().hex()}

        def fix(o):
            if isinstance(o, dict):
                return {k: fix(v) for k, v in o.items()}
            if isinstance(o, list):
                return [fix(v) for v in o]
            return new if o == old else o

        m["spec"] = fix(m["spec"])

    return _edit(orig, edit)


@pytest.mark.parametrize("role, new", [("phrase", "ca"), ("phrase", "b ab"), ("phrase", "a"), ("avoid", "a a"),
                                       ("avoid", "c b b"), ("prefix", "b"), ("prefix", "ab")])
def test_relabelled_light_automaton(orig, tmp_path, role, new):
    p = _save(tmp_path, _relabel(orig, role, new))
    with pytest.raises(ArtifactCorruptError, match="labelled"):
        fstbeam.load_constraints(p, tokenizer=small_vocab())


def test_unedited_artifact_loads(orig, tmp_path):
    cc = fstbeam.load_constraints(_save(tmp_path, rezip(orig)), tokenizer=small_vocab())
    assert [a.text for a in cc.phrases] == ["ab"]


def test_the_cat_relabelled_the_dog_on_the_default_tokenizer(tmp_path):
    cc = fstbeam.compile_constraints(phrases=["the cat", ["big house", "small house"]], avoid=["red car"], prefix="Once")
    cc.save(tmp_path / "a.fstbeam")
    members = unzip((tmp_path / "a.fstbeam").read_bytes())
    assert fstbeam.load_constraints(_save(tmp_path, rezip(members), "ok.fstbeam")).phrases[0].text == "the cat"
    for role, new in (("phrase", "the dog"), ("avoid", "red cars"), ("prefix", "Once upon")):
        with pytest.raises(ArtifactCorruptError, match="labelled"):
            fstbeam.load_constraints(_save(tmp_path, _relabel(members, role, new), f"{role}.fstbeam"))

    def anyof(m):
        a = next(a for a in m["light"] if a.get("items"))
        a["items"] = a["items"].replace("small house", "small mouse")
        a["text"] = a["text"].replace("small house", "small mouse")

    with pytest.raises(ArtifactCorruptError, match="labelled"):
        fstbeam.load_constraints(_save(tmp_path, _edit(members, anyof), "anyof.fstbeam"))


def test_nul_in_artifact_path():
    from fstbeam.errors import ArtifactError

    with pytest.raises(ArtifactError, match="NUL"):
        fstbeam.load_constraints("a\x00b.fstbeam", tokenizer=small_vocab())
