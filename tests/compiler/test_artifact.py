"""Artifact round trip, the OpenFst automaton inside, and one specific error per load failure."""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pynini
import pytest

import fstbeam
from fstbeam.contract.artifact import FORMAT_VERSION
from fstbeam.contract.compiled import load_constraints
from fstbeam.contract.vocab import Vocab
from fstbeam.errors import ArtifactCorruptError, ArtifactError, ArtifactFormatError, TokenizerMismatchError

DATA = Path(__file__).parent.parent / "data"
PIECES = ["a", "b", "c", " ", "ab", " a", " b", "ca", ".", "b.", "ab "]


def small_vocab() -> Vocab:
    return Vocab.from_dict({i: p.encode() for i, p in enumerate(PIECES)}, eos_ids=[len(PIECES)], name="test-vocab")


def compile_small():
    return fstbeam.compile_constraints(words=["ab", "ca", "b"], tokenizer=small_vocab(), case_variants=False)


def test_round_trip_keeps_every_array_and_behaviour(tmp_path):
    cc = compile_small()
    path = tmp_path / "c.fstbeam"
    cc.save(path)
    back = load_constraints(path, tokenizer=small_vocab())
    for name, arr in cc.hard.arrays().items():
        assert np.array_equal(arr, back.hard.arrays()[name]), name
    for seq in itertools.product(range(len(PIECES)), repeat=3):
        a, b = cc.matcher(), back.matcher()
        for t in seq:
            ok_a = t in set(a.allowed_token_ids().tolist())
            ok_b = t in set(b.allowed_token_ids().tolist())
            assert ok_a == ok_b
            if not ok_a:
                break
            a.advance(t), b.advance(t)
        assert a.is_final() == b.is_final()


def test_openfst_token_automaton_has_the_same_language(tmp_path):
    cc = compile_small()
    fst_path = tmp_path / "token.fst"
    fst_path.write_bytes(cc.token_fst_bytes())
    fst = pynini.Fst.read(str(fst_path))
    assert fst.verify()
    for seq in itertools.product(range(len(PIECES)), repeat=3):
        m = cc.matcher()
        ok = True
        for t in seq:
            if t not in set(m.allowed_token_ids().tolist()):
                ok = False
                break
            m.advance(t)
        accepted_tables = ok and m.is_final()
        labels = pynini.Fst()
        s = labels.add_state()
        labels.set_start(s)
        for t in seq:
            n = labels.add_state()
            labels.add_arc(s, pynini.Arc(t + 1, t + 1, 0, n))
            s = n
        labels.set_final(s)
        accepted_fst = pynini.compose(labels, fst).num_states() > 0 and pynini.connect(pynini.compose(labels, fst)).num_states() > 0
        assert accepted_tables == accepted_fst, seq


def test_token_fst_from_the_tables_is_the_one_the_lift_wrote():
    """A compile no longer writes the OpenFst token automaton (0.2 s at C2); the tables write it
    when an artifact is saved. It is byte for byte the one written from the lift's TokenFSA."""
    from fstbeam.compiler.hard.lift.token_fsa import lift, token_fst_bytes
    from fstbeam.compiler.hard.tables import build_tables
    from fstbeam.compiler.hard.token_trie import token_trie
    from fstbeam.fst.wordlist.language import word_list_dfa

    vocab = small_vocab()
    for words, kw in ((["ab", "ca", "b"], dict(case_variants=False)), (["b", "cab", "a"], {})):
        fsa = lift(word_list_dfa(words, **kw), token_trie(vocab), vocab.width)
        assert build_tables(fsa, vocab).token_fst() == token_fst_bytes(fsa)
    cc = compile_small()
    assert cc.token_fst is None and cc.token_fst_bytes() == cc.hard.token_fst()

def test_wrong_tokenizer_is_refused(tmp_path):
    path = tmp_path / "c.fstbeam"
    compile_small().save(path)
    other = Vocab.from_dict({i: p.encode() for i, p in enumerate(PIECES[:-1] + ["zz"])}, eos_ids=[len(PIECES)])
    with pytest.raises(TokenizerMismatchError, match="recompile it for this tokenizer"):
        load_constraints(path, tokenizer=other)


def _rewrite(src: Path, dst: Path, edit):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            zout.writestr(item, edit(item.filename, zin.read(item.filename)))


def test_format_version_mismatch(tmp_path):
    path = tmp_path / "c.fstbeam"
    compile_small().save(path)

    def bump(name, data):
        if name != "manifest.json":
            return data
        m = json.loads(data)
        m["format_version"] = FORMAT_VERSION + 1
        return json.dumps(m).encode()

    _rewrite(path, tmp_path / "v.fstbeam", bump)
    with pytest.raises(ArtifactFormatError, match="format version"):
        load_constraints(tmp_path / "v.fstbeam", tokenizer=small_vocab())


def test_light_automata_of_an_older_boundary_rule_are_refused(tmp_path):
    """Format 4 made ' and - word bytes: a phrase automaton of format 3 would follow the old rule
    while the runtime classes tokens by the new one, so it is refused with the fix (word lists
    are still read, test_frozen_v1_artifact_still_loads)."""
    path = tmp_path / "p.fstbeam"
    fstbeam.compile_constraints(phrases=["ca"], tokenizer=small_vocab()).save(path)

    def to_v3(name, data):
        if name == "manifest.json":
            m = json.loads(data)
            m["format_version"] = 3
            return json.dumps(m).encode()
        if name == "manifest.sha256":
            return b""  # replaced below
        return data

    old = tmp_path / "v3.fstbeam"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(old, "w") as zout:
        manifest = to_v3("manifest.json", zin.read("manifest.json"))
        for item in zin.infolist():
            data = manifest if item.filename == "manifest.json" else zin.read(item.filename)
            if item.filename == "manifest.sha256":
                data = hashlib.sha256(manifest).hexdigest().encode()
            zout.writestr(item, data)
    with pytest.raises(ArtifactFormatError, match=r"format version 3: its phrase.*recompile it with compile-constraints"):
        load_constraints(old, tokenizer=small_vocab())
    load_constraints(path, tokenizer=small_vocab())  # the same file at format 4 loads


def test_edited_member_fails_checksum(tmp_path):
    path = tmp_path / "c.fstbeam"
    compile_small().save(path)

    def flip(name, data):
        if name == "hard/block_next.npy":
            return data[:-1] + bytes([data[-1] ^ 1])
        return data

    _rewrite(path, tmp_path / "e.fstbeam", flip)
    with pytest.raises(ArtifactCorruptError, match="checksum"):
        load_constraints(tmp_path / "e.fstbeam", tokenizer=small_vocab())


def test_truncated_and_missing_files(tmp_path):
    path = tmp_path / "c.fstbeam"
    compile_small().save(path)
    data = path.read_bytes()
    (tmp_path / "t.fstbeam").write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactCorruptError):
        load_constraints(tmp_path / "t.fstbeam", tokenizer=small_vocab())
    with pytest.raises(ArtifactError, match="no artifact"):
        load_constraints(tmp_path / "missing.fstbeam", tokenizer=small_vocab())
    (tmp_path / "junk.fstbeam").write_bytes(b"hello")
    with pytest.raises(ArtifactCorruptError):
        load_constraints(tmp_path / "junk.fstbeam", tokenizer=small_vocab())


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_output_leaves_nothing(tmp_path):  # pragma: no cover - CI runs as root
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    with pytest.raises(ArtifactError, match="cannot write"):
        compile_small().save(d / "c.fstbeam")
    assert list(d.iterdir()) == []


def test_output_path_that_is_a_directory_leaves_nothing(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    with pytest.raises(ArtifactError, match="cannot write"):
        compile_small().save(target)
    assert list(target.iterdir()) == []
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_frozen_v1_artifact_still_loads():
    """A file written by format version 1 (committed): later versions must keep reading it."""
    frozen = DATA / "frozen_v1.fstbeam"
    cc = load_constraints(frozen, tokenizer=small_vocab())
    fresh = compile_small()
    for seq in itertools.product(range(len(PIECES)), repeat=3):  # same language, table by table
        a, b = cc.matcher(), fresh.matcher()
        for t in seq:
            assert np.array_equal(a.allowed_token_ids(), b.allowed_token_ids())
            if t not in set(a.allowed_token_ids().tolist()):
                break
            a.advance(t), b.advance(t)
        assert a.is_final() == b.is_final()


def test_round_trip_with_phrases_avoid_and_prefix(tmp_path):
    cc = fstbeam.compile_constraints(
        words=["ab", "ca", "b"], phrases=["ca"], avoid=["b b"], prefix="a", tokenizer=small_vocab(), case_variants=False
    )
    path = tmp_path / "p.fstbeam"
    cc.save(path)
    back = load_constraints(path, tokenizer=small_vocab())
    assert [a.text for a in back.phrases] == ["ca"] and back.prefix.text == "a"
    for x, y in zip(cc.light, back.light):
        assert x.literal == y.literal and x.kind == y.kind
    for seq in itertools.product(range(len(PIECES)), repeat=4):
        a, b = cc.matcher(), back.matcher()
        for t in seq:
            assert np.array_equal(a.allowed_token_ids(), b.allowed_token_ids())
            if t not in set(a.allowed_token_ids().tolist()):
                break
            a.advance(t), b.advance(t)
        assert a.is_final() == b.is_final() and a.phrases_met() == b.phrases_met()


def test_light_distances_are_recomputed_on_load_and_bad_tables_refused(tmp_path):
    """The distance field is derived, not stored: loading recomputes it, and a light table whose
    transitions leave its states (checksums made consistent) is refused, not trusted."""
    import hashlib
    import io

    import numpy as np

    cc = fstbeam.compile_constraints(phrases=["ab"], avoid=["ca"], tokenizer=small_vocab())
    path = tmp_path / "l.fstbeam"
    cc.save(path)
    with zipfile.ZipFile(path) as zf:
        assert not [n for n in zf.namelist() if n.endswith("/dist.npy")]
    back = load_constraints(path, tokenizer=small_vocab())
    for a, b in zip(cc.light, back.light):
        assert np.array_equal(a.dist, b.dist)

    sealed = {}

    def corrupt(name, data):
        if name == "light/0/exc_next.npy":
            arr = np.load(io.BytesIO(data)).copy()
            arr[0] = 10**6
            buf = io.BytesIO()
            np.save(buf, arr)
            return buf.getvalue()
        if name == "manifest.json":
            m = json.loads(data)
            with zipfile.ZipFile(path) as zf:
                arr = np.load(io.BytesIO(zf.read("light/0/exc_next.npy"))).copy()
            arr[0] = 10**6
            buf = io.BytesIO()
            np.save(buf, arr)
            new = buf.getvalue()
            m["members"]["light/0/exc_next.npy"].update(sha256=hashlib.sha256(new).hexdigest(), bytes=len(new))
            sealed["manifest"] = json.dumps(m).encode()
            return sealed["manifest"]
        if name == "manifest.sha256":  # re-seal: the check under test is the table's, not the seal's
            return (hashlib.sha256(sealed["manifest"]).hexdigest() + "\n").encode()
        return data

    _rewrite(path, tmp_path / "bad.fstbeam", corrupt)
    with pytest.raises(ArtifactCorruptError, match="inconsistent"):
        load_constraints(tmp_path / "bad.fstbeam", tokenizer=small_vocab())
