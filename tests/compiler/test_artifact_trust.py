"""Specific hostile artifacts (issue: special files, manifest edits, sizes, OpenFst headers)."""
from __future__ import annotations

import json
import os
import struct
import threading
import zipfile

import numpy as np
import pytest

from fstbeam import load_constraints
from fstbeam.contract.artifact import read_manifest
from fstbeam.contract.artifact_validate import check_vector_fst
from fstbeam.errors import ArtifactCorruptError, ArtifactError

from artifact_mutations import build_original, rezip, small_vocab, unzip


@pytest.fixture(scope="module")
def original():
    return build_original()


def _write(tmp_path, data: bytes, name="a.fstbeam"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _edit_manifest(original, fn, reseal=True) -> bytes:
    members = unzip(original)
    m = json.loads(members["manifest.json"])
    fn(m)
    members["manifest.json"] = json.dumps(m).encode()
    return rezip(members, reseal=reseal)


def test_original_loads(original, tmp_path):
    cc = load_constraints(_write(tmp_path, original), tokenizer=small_vocab())
    assert [a.text for a in cc.phrases] == ["ab"] and [a.text for a in cc.avoid] == ["b b"] and cc.prefix.text == "a"


def test_symlink_to_dev_zero_is_refused_without_reading(tmp_path):
    link = tmp_path / "zero.fstbeam"
    os.symlink("/dev/zero", link)
    with pytest.raises(ArtifactCorruptError, match="not a regular file"):
        load_constraints(link, tokenizer=small_vocab())


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.fstbeam"
    os.mkfifo(fifo)
    result = {}

    def load():
        try:
            load_constraints(fifo, tokenizer=small_vocab())
        except ArtifactCorruptError as exc:
            result["error"] = str(exc)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "loading a FIFO blocked"
    assert "not a regular file" in result["error"]


def test_directory_and_none_are_project_errors(tmp_path):
    with pytest.raises(ArtifactError, match="directory"):
        load_constraints(tmp_path)
    with pytest.raises(ArtifactError, match="str or Path"):
        load_constraints(None)


def test_manifest_edit_without_checksum_is_caught(original, tmp_path):
    data = _edit_manifest(original, lambda m: m["spec"].update(avoid=[]), reseal=False)
    members = unzip(data)
    members["manifest.sha256"] = unzip(original)["manifest.sha256"]
    with pytest.raises(ArtifactCorruptError, match="fails its checksum"):
        load_constraints(_write(tmp_path, rezip(members, reseal=False)), tokenizer=small_vocab())


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.update(hard=None), "hard"),  # would silently drop the word list
    (lambda m: m.update(light=[]), "light"),  # would silently drop phrases
    (lambda m: m["light"][1].update(role="phrase"), "light"),  # an avoid phrase turned into a must-include
    (lambda m: m["hard"].update(start=-1), "hard.start"),
    (lambda m: m["hard"].update(start=10**6), "start state"),
    (lambda m: m["light"][0].update({"class": "__class__"}), "class"),
    (lambda m: m["tokenizer"].update(eos_ids=[10**9]), "eos_ids"),
])
def test_resealed_manifest_edits_are_refused(original, tmp_path, edit, match):
    with pytest.raises(ArtifactCorruptError, match=match):
        load_constraints(_write(tmp_path, _edit_manifest(original, edit)), tokenizer=small_vocab())


def test_compressed_member_is_refused_before_decompressing(original, tmp_path):
    """A 64 MiB member deflated to a few KiB: refused from the zip directory, nothing inflated."""
    members = unzip(original)
    members["char_state.npy"] = b"\x00" * (64 << 20)
    data = rezip(members, compress={"char_state.npy": zipfile.ZIP_DEFLATED})
    assert len(data) < 1 << 20
    with pytest.raises(ArtifactCorruptError, match="compressed"):
        load_constraints(_write(tmp_path, data), tokenizer=small_vocab())


def test_member_size_must_match_what_the_shape_implies(original, tmp_path):
    def grow(m):
        m["members"]["hard/final.npy"]["shape"] = [10**9]
    with pytest.raises(ArtifactCorruptError, match="shape"):
        load_constraints(_write(tmp_path, _edit_manifest(original, grow)), tokenizer=small_vocab())


def test_table_index_out_of_range_is_refused(original, tmp_path):
    members = unzip(original)
    import io

    nxt = np.load(io.BytesIO(members["hard/block_next.npy"]))
    nxt[0] = 10**6
    buf = io.BytesIO()
    np.save(buf, nxt)
    members["hard/block_next.npy"] = buf.getvalue()
    with pytest.raises(ArtifactCorruptError, match="block_next"):
        load_constraints(_write(tmp_path, rezip(members)), tokenizer=small_vocab())


def test_openfst_header_counts_are_bounded(original):
    """The edit that made OpenFst abort (std::length_error): a huge state count in char.fst."""
    fst = bytearray(unzip(original)["char.fst"])
    check_vector_fst(bytes(fst), "char.fst", "x", max_label=255, epsilon=False)  # the original is fine
    struct.pack_into("<q", fst, 50, 2**40)  # num_states
    with pytest.raises(ArtifactCorruptError, match="declares"):
        check_vector_fst(bytes(fst), "char.fst", "x", max_label=255, epsilon=False)


def test_flipped_manifest_bit_is_a_project_error(original, tmp_path):
    data = bytearray(original)
    at = data.index(b'"format_version"')
    data[at + 3] ^= 0x01
    with pytest.raises(ArtifactCorruptError):
        load_constraints(_write(tmp_path, bytes(data)), tokenizer=small_vocab())
    with pytest.raises(ArtifactCorruptError):
        read_manifest(_write(tmp_path, bytes(data)))


def test_a_member_array_is_a_read_only_view_of_the_member_buffer(tmp_path):
    """Loading takes an artifact's tables once: each array views the buffer its member was read
    into (a member read in pieces, joined and sliced had been three copies: jscsrc's 443 MB
    artifact loaded at 1.31 GB peak), and stays read-only, as arrays made from bytes were."""
    import io
    import zipfile

    from fstbeam.contract.artifact_validate import npy_array, read_member_buffer

    arr = np.arange(1000, dtype=np.int64) * 7
    raw = io.BytesIO()
    np.save(raw, arr, allow_pickle=False)
    path = tmp_path / "m.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("hard/x.npy", raw.getvalue())
    with zipfile.ZipFile(path) as zf:
        data = read_member_buffer(zf, "hard/x.npy", len(raw.getvalue()), path)
    got = npy_array(data, "hard/x.npy", [1000], "int64", path)
    assert np.array_equal(got, arr)
    assert np.shares_memory(got, np.frombuffer(data, np.uint8))
    assert not got.flags.writeable
    with zipfile.ZipFile(path) as zf, pytest.raises(Exception, match="holds"):
        read_member_buffer(zf, "hard/x.npy", len(raw.getvalue()) + 1, path)
