"""Validation of an untrusted artifact before any native code or kernel touches it.

Order of checks (docs/trust.md):

1. :func:`open_archive`: a regular file only (opened with ``O_NONBLOCK`` and checked with
   ``fstat``, so a FIFO cannot block and ``/dev/zero`` cannot be read), no larger than
   :data:`MAX_ARTIFACT_BYTES`; a zip whose members are all *stored* (no decompression, so no zip
   bomb), each listed once, each no larger than the file itself.
2. :func:`read_member`: at most the member's declared size is read, in bounded chunks.
3. The manifest (``manifest_schema``), its checksum, the member table against the archive, each
   ``.npy`` header's dtype and shape against the manifest (the size they imply bounds the read).
4. :func:`check_vector_fst`: our own bounded reader of OpenFst's VectorFst binary format (header,
   counts, per-state arcs, label and state ranges, determinism) before pywrapfst parses it.
5. :func:`check_hard` / :func:`check_light`: every table's shape, dtype and index range against
   the others, so neither the numpy lookups, the kernels (no bounds checks) nor the search can
   read outside an array.

Anything wrong raises :class:`~fstbeam.errors.ArtifactCorruptError`.
"""
from __future__ import annotations

import io
import os
import stat
import struct
import zipfile
from typing import TYPE_CHECKING, Any, BinaryIO, TypeAlias

import numpy as np

from ..errors import ArtifactCorruptError, ArtifactError
from .table_checks import check_against_vocab as check_against_vocab  # re-exported: step 5 (docstring)
from .table_checks import check_hard as check_hard
from .table_checks import check_light as check_light
from .table_checks import corrupt as corrupt

if TYPE_CHECKING:
    pass

PathArg: TypeAlias = "str | os.PathLike[str]"  # where the artifact is (for messages)

#: Largest artifact file accepted (a CEFR C2 word list compiles to well under 1 GiB).
MAX_ARTIFACT_BYTES = int(os.environ.get("FSTBEAM_MAX_ARTIFACT_BYTES", 8 << 30))
MAX_MANIFEST_BYTES = 16 << 20
MAX_MEMBERS = 10_000  # zip members of one artifact
_NPY_HEADER_MAX = 1 << 16  # a .npy header (magic, version, dict) is at most this long


# ---- 1. the file and the zip ---------------------------------------------------------------------
def open_archive(path: PathArg) -> tuple[BinaryIO, zipfile.ZipFile]:
    """Open ``path`` as an artifact: a regular file, a sane stored zip. Returns (file, zip)."""
    if path is None or not isinstance(path, (str, os.PathLike)):
        raise ArtifactError(f"an artifact path must be a str or Path, not {type(path).__name__}: "
                            "pass the file written by compile-constraints compile -o FILE")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ArtifactError(f"no artifact at {path}: compile one with `compile-constraints compile -o {path}`") from None
    except IsADirectoryError:
        raise ArtifactError(f"{path} is a directory, not an artifact file: pass the .fstbeam file") from None
    except OSError as exc:
        raise ArtifactError(f"cannot open artifact {path} ({exc.strerror or exc})") from None
    except ValueError:  # "embedded null byte"
        raise ArtifactError(f"artifact path {str(path)!r:.80} contains a NUL byte: give the .fstbeam file's path") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ArtifactError(f"{path} is a directory, not an artifact file: pass the .fstbeam file")
        if not stat.S_ISREG(st.st_mode):
            raise ArtifactCorruptError(f"{path} is not a regular file (a device, FIFO or socket): "
                                       "artifacts are read from regular files only")
        if st.st_size > MAX_ARTIFACT_BYTES:
            raise ArtifactCorruptError(f"{path} is {st.st_size:,} bytes, over the {MAX_ARTIFACT_BYTES:,}-byte limit "
                                       "(FSTBEAM_MAX_ARTIFACT_BYTES)")
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    try:
        zf = zipfile.ZipFile(fh)
        _check_zip(zf, st.st_size, path)
    except ArtifactError:
        fh.close()
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError,
            UnicodeDecodeError, struct.error, OverflowError, IndexError, KeyError, TypeError) as exc:
        fh.close()
        raise corrupt(path, f"not a readable artifact zip ({type(exc).__name__}: {exc})") from None
    return fh, zf


def _check_zip(zf: zipfile.ZipFile, size: int, path: PathArg) -> None:
    seen: set[str] = set()
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise corrupt(path, f"the zip lists {len(infos)} members")
    for info in infos:
        if info.filename in seen:
            raise corrupt(path, f"member {info.filename!r} is listed twice")
        seen.add(info.filename)
        if info.compress_type != zipfile.ZIP_STORED:
            raise corrupt(path, f"member {info.filename!r} is compressed; artifacts store members uncompressed")
        if info.file_size != info.compress_size or info.file_size > size or info.header_offset > size:
            raise corrupt(path, f"member {info.filename!r} declares {info.file_size:,} bytes in a "
                                f"{size:,}-byte file")
        if info.flag_bits & 0x1:
            raise corrupt(path, f"member {info.filename!r} is encrypted")


# ---- 2. bounded member reads ---------------------------------------------------------------------
def read_member(zf: zipfile.ZipFile, name: str, limit: int, path: PathArg) -> bytes:
    """The member's bytes, reading at most ``limit`` bytes (its size from the manifest)."""
    return bytes(read_member_buffer(zf, name, limit, path))


def read_member_buffer(zf: zipfile.ZipFile, name: str, limit: int, path: PathArg) -> bytearray:
    """`read_member` into one buffer of ``limit`` bytes, read in place (no list of pieces joined,
    no copy): a `npy_array` of it is a view, so an artifact's tables take their size once."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise corrupt(path, f"member {name} is missing") from None
    if info.file_size != limit:
        raise corrupt(path, f"member {name} holds {info.file_size:,} bytes, the manifest says {limit:,}")
    data = bytearray(limit)
    view, got = memoryview(data), 0
    try:
        with zf.open(info) as fh:
            while got < limit:
                n = fh.readinto(view[got:got + (1 << 24)])  # type: ignore[attr-defined]  # (a ZipExtFile: io.BufferedIOBase)
                if not n:
                    break
                got += n
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, struct.error) as exc:
        raise corrupt(path, f"member {name} cannot be read ({type(exc).__name__}: {exc})") from None
    if got != limit:
        raise corrupt(path, f"member {name} is truncated ({got:,} of {limit:,} bytes)")
    return data


# ---- 3. arrays -----------------------------------------------------------------------------------
def npy_array(data: bytes | bytearray, name: str, shape: list[int], dtype: str, path: PathArg) -> np.ndarray:
    """Parse a ``.npy`` member whose header must declare exactly ``shape`` and ``dtype``: a
    read-only view of ``data`` where it is already the declared dtype, in C order."""
    want = np.dtype(dtype)
    nbytes = shape_bytes(shape, want.itemsize, name, path)
    if not nbytes <= len(data) <= nbytes + _NPY_HEADER_MAX:
        raise corrupt(path, f"member {name} has {len(data):,} bytes, not what shape {shape} of {dtype} implies")
    fh = io.BytesIO(memoryview(data)[:_NPY_HEADER_MAX + 16])  # the header alone (not a copy of the body)
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            hshape, fortran, hdtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            hshape, fortran, hdtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise ValueError(f"npy version {version}")
    except Exception as exc:  # noqa: BLE001 - numpy's header parser raises many kinds on hostile bytes
        raise corrupt(path, f"member {name} is not a plain .npy array ({type(exc).__name__})") from None
    if list(hshape) != list(shape) or hdtype != want:
        raise corrupt(path, f"member {name} holds {hdtype} {list(hshape)}, the manifest says {dtype} {shape}")
    body = memoryview(data)[fh.tell():]
    if len(body) != nbytes:
        raise corrupt(path, f"member {name} has {len(body):,} data bytes, shape {shape} of {dtype} needs {nbytes:,}")
    arr = np.frombuffer(body, dtype=hdtype).reshape(hshape, order="F" if fortran else "C")
    arr = np.ascontiguousarray(arr.astype(want, copy=False))
    arr.flags.writeable = False  # (as from bytes: tables are never written after loading)
    return arr


def shape_bytes(shape: Any, itemsize: int, name: str, path: Any) -> int:
    """Bytes an array of ``shape`` holds, in exact integers (``np.prod`` wraps around at 2**63:
    a re-sealed shape [2**32, 2**32] came out as 0 bytes). Each dimension must be a non-negative
    int; the caller compares the result with the member's size before anything is allocated."""
    if not isinstance(shape, (list, tuple)) or not all(type(d) is int and d >= 0 for d in shape):
        raise corrupt(path, f"member {name} has shape {shape!r:.80}; dimensions must be non-negative integers")
    n = itemsize
    for d in shape:
        n *= d
    return n


def check_member_sizes(members: dict[str, Any], path: Any) -> None:
    """Every ``.npy`` member's declared shape and dtype against its declared byte size: the array
    must fit in the member (plus its header), before any member is read or reshaped."""
    for name, info in members.items():
        if not name.endswith(".npy"):
            continue
        nbytes = shape_bytes(info["shape"], np.dtype(info["dtype"]).itemsize, name, path)
        if not nbytes <= info["bytes"] <= nbytes + _NPY_HEADER_MAX:
            raise corrupt(path, f"member {name} declares shape {info['shape']} of {info['dtype']} ({nbytes:,} bytes) "
                                f"in {info['bytes']:,} bytes")


#: The dtype of every array member (what ``build_tables`` and ``light._lift`` produce).
HARD_DTYPES = {
    "final": "bool", "dist_to_final": "int32", "state_block_key": "int64", "state_block_id": "int32",
    "state_block_ptr": "int64", "block_key": "int64", "block_next": "int32", "block_ptr": "int64",
    "state_block_dense": "bool", "dense_masks": "int32", "state_dense_row": "int32", "state_sparse_ptr": "int64",
    "state_sparse_tokens": "int32", "token_first_byte": "int16", "eos_ids": "int32",
    "state_block_offset": "int64", "state_block_exit": "int32",  # optional (HardTables.OPTIONAL)
}
#: Hard members stored only by automata with shared interiors: both or neither.
HARD_OPTIONAL = ("state_block_offset", "state_block_exit")
LIGHT_DTYPES = {
    "final": "bool", "progress": "int32", "default_next": "int32", "exc_key": "int64", "exc_next": "int32",
    "adv_ptr": "int64", "adv_tokens": "int32", "token_class": "int8", "fallback": "int32",
}
ROOT_DTYPES = {"char_state": "int32"}


def expected_members(manifest: dict[str, Any]) -> set[str]:
    """Every member an artifact with this manifest must have (no more, no fewer)."""
    names = set()
    if manifest["hard"] is not None:
        names = {f"hard/{n}.npy" for n in HARD_DTYPES if n not in HARD_OPTIONAL}
        if any(f"hard/{n}.npy" in manifest.get("members", {}) for n in HARD_OPTIONAL):
            names |= {f"hard/{n}.npy" for n in HARD_OPTIONAL}
    since = {"fallback": 3}  # light members added in a later format
    light = [n for n in LIGHT_DTYPES if manifest.get("format_version", 0) >= since.get(n, 0)]
    for i in range(len(manifest["light"])):
        names |= {f"light/{i}/{n}.npy" for n in light}
    return names


#: Arrays with two dimensions; every other array member is one-dimensional.
TWO_D = ("dense_masks", "default_next")


def member_ndim(name: str) -> int:
    return 2 if name.rsplit("/", 1)[-1].removesuffix(".npy") in TWO_D else 1


def member_dtype(name: str) -> str | None:
    stem = name.rsplit("/", 1)[-1].removesuffix(".npy")
    table = HARD_DTYPES if name.startswith("hard/") else LIGHT_DTYPES if name.startswith("light/") else ROOT_DTYPES
    return table.get(stem) if name.endswith(".npy") else None


# ---- 4. OpenFst VectorFst members ----------------------------------------------------------------
_FST_MAGIC = 2125659606
_ARC = np.dtype([("ilabel", "<i4"), ("olabel", "<i4"), ("weight", "<f4"), ("next", "<i4")])
_SAFE_PROPS = struct.pack("<Q", 0x3)  # kExpanded | kMutable: every other property recomputed by OpenFst


def _fst_string(data: bytes, at: int, name: str, path: PathArg) -> tuple[str, int]:
    (n,) = struct.unpack_from("<i", data, at)
    if not 0 <= n <= 64:
        raise corrupt(path, f"{name} has a header string of length {n}")
    return data[at + 4: at + 4 + n].decode("ascii", "replace"), at + 4 + n


def check_vector_fst(data: bytes, name: str, path: PathArg, *, max_label: int,
                     epsilon: bool) -> tuple[bytes, dict[str, Any]]:
    """Validate an unweighted acceptor in OpenFst's VectorFst format without OpenFst.

    Returns the bytes with the header's property bits reset to "unknown" (OpenFst trusts them) and
    the automaton as arrays: ``start``, ``final`` [S], ``arc_state``/``label``/``next`` [A]."""
    try:
        if struct.unpack_from("<i", data, 0)[0] != _FST_MAGIC:
            raise corrupt(path, f"{name} is not an OpenFst file (bad magic number)")
        fst_type, at = _fst_string(data, 4, name, path)
        arc_type, at = _fst_string(data, at, name, path)
        version, flags, _props, start, n_states, n_arcs = struct.unpack_from("<iiQqqq", data, at)
        props_at = at + 8
        at += 40
    except struct.error:
        raise corrupt(path, f"{name} is shorter than an OpenFst header") from None
    if (fst_type, arc_type, version) != ("vector", "standard", 2) or flags != 0:
        raise corrupt(path, f"{name} is {fst_type!r}/{arc_type!r} version {version} flags {flags}; "
                            "expected a plain 'vector'/'standard' version 2 automaton without symbol tables")
    body = len(data) - at
    if not 0 <= n_states <= body // 12 or not (-1 <= start < n_states) or n_arcs < 0 or n_arcs > body // 16:
        raise corrupt(path, f"{name} declares {n_states} states, {n_arcs} arcs, start {start} in {len(data):,} bytes")
    final = np.zeros(n_states, bool)
    first = np.zeros(n_states + 1, np.int64)
    arcs_at = np.zeros(n_states, np.int64)
    pos = at
    for s in range(n_states):
        if pos + 12 > len(data):
            raise corrupt(path, f"{name} ends inside state {s}")
        w, k = struct.unpack_from("<fq", data, pos)
        if not 0 <= k <= (len(data) - pos - 12) // 16:
            raise corrupt(path, f"{name}: state {s} declares {k} arcs past the end of the file")
        if w != 0.0 and w != float("inf"):
            raise corrupt(path, f"{name}: state {s} has final weight {w}; artifacts hold unweighted automata")
        final[s] = w == 0.0
        arcs_at[s] = pos + 12
        first[s + 1] = first[s] + k
        pos += 12 + 16 * k
    if pos != len(data):
        raise corrupt(path, f"{name} has {len(data) - pos} bytes after its last state")
    if n_arcs not in (0, int(first[-1])):
        raise corrupt(path, f"{name} declares {n_arcs} arcs and holds {int(first[-1])}")
    arc_state = np.repeat(np.arange(n_states, dtype=np.int64), np.diff(first))
    off = arcs_at[arc_state] + 16 * (np.arange(len(arc_state)) - first[arc_state])  # byte offset of each arc
    raw = np.frombuffer(data, np.uint8)
    arcs = raw[off[:, None] + np.arange(16)].copy().view(_ARC).reshape(-1)
    lo = 0 if epsilon else 1
    bad = ((arcs["ilabel"] != arcs["olabel"]) | (arcs["ilabel"] < lo) | (arcs["ilabel"] > max_label)
           | (arcs["next"] < 0) | (arcs["next"] >= n_states) | (arcs["weight"] != 0.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise corrupt(path, f"{name}: arc {i} of state {int(arc_state[i])} has labels {int(arcs['ilabel'][i])}:"
                            f"{int(arcs['olabel'][i])}, weight {float(arcs['weight'][i])}, target {int(arcs['next'][i])} "
                            f"(labels {lo}..{max_label}, targets < {n_states}, weight 0 expected)")
    fixed = data[:props_at] + _SAFE_PROPS + data[props_at + 8:]
    return fixed, {"start": int(start), "final": final, "arc_state": arc_state,
                   "label": arcs["ilabel"].astype(np.int64), "next": arcs["next"].astype(np.int64)}


def check_char_fst(data: bytes, path: PathArg, *, hard_states: int, char_state: np.ndarray | None) -> bytes:
    """``char.fst``: a deterministic, epsilon-free byte acceptor; ``char_state`` indexes it."""
    fixed, f = check_vector_fst(data, "char.fst", path, max_label=255, epsilon=False)
    n = len(f["final"])
    if n == 0 or f["start"] < 0:
        raise corrupt(path, "char.fst has no start state")
    key = f["arc_state"] * 256 + f["label"]
    if len(np.unique(key)) != len(key):
        raise corrupt(path, "char.fst is not deterministic (two arcs leave a state on the same byte)")
    if char_state is not None:
        if char_state.shape != (hard_states,) or (len(char_state) and (char_state.min() < 0 or char_state.max() >= n)):
            raise corrupt(path, f"char_state.npy must map each of the {hard_states} token states to one of "
                                f"the {n} states of char.fst")
    return fixed


# ---- 5. table cross-checks: contract/table_checks.py (check_hard, check_light, check_against_vocab)
