"""One versioned artifact file: a zip (stored, not compressed) holding

- ``manifest.json``: format version, package version, tokenizer fingerprint, spec and its hash,
  every member's shape, dtype and sha256; ``manifest.sha256``: the manifest's own checksum
  (format version 2 on);
- ``hard/*.npy``: the hard automaton's tables (docs/tables.md), ``light/<i>/*.npy`` per-request ones;
- ``token.fst`` / ``char.fst``: the OpenFst token and character automata (readable by OpenFst tools;
  ``token.fst`` only up to `TOKEN_FST_MAX_ARCS` arcs).

No pickle anywhere. An artifact is untrusted input: loading validates the file, the zip, the
manifest (schema and checksum), every member's size, checksum, dtype and shape, the OpenFst
members and every table's index ranges (``artifact_validate``, ``manifest_schema``) before any of it
is used, and raises a specific error for each problem (docs/trust.md). Saving writes a temporary file and
renames it, so a failure leaves nothing behind.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import __version__
from ..errors import ArtifactCorruptError, ArtifactError, ArtifactFormatError, TokenizerMismatchError
from .artifact_labels import check_label
from .artifact_validate import (
    MAX_MANIFEST_BYTES,
    check_against_vocab,
    check_char_fst,
    check_hard,
    check_light,
    check_member_sizes,
    check_vector_fst,
    corrupt,
    expected_members,
    member_dtype,
    member_ndim,
    npy_array,
    open_archive,
    read_member,
    read_member_buffer,
)
from .hard import HardTables
from .layout import LIGHT_ROLES
from .light import LightAutomaton
from .manifest_schema import check_manifest
from .vocab import Vocab, load_vocab

# 2: manifest.sha256 covers the manifest; 3: light automata store their fallback states (1 and 2 are
# still read: their automata have none); 4: ``'`` and ``-`` are word bytes (fst/text.py), so light
# automata of older formats follow another boundary rule and are refused (word lists are read);
# 5: hard tables may share interiors (``state_block_offset``/``state_block_exit``), so a reader
# of versions 1-4 refuses them by their version instead of by their unknown members;
# 6: an exit block may override tokens of its link's block (`near_blocks`), which a reader of
# version 5 would call corrupt.
FORMAT_VERSION = 6
READS = (1, 2, 3, 4, 5, 6)
LIGHT_RULE_SINCE = 4
MAGIC = "fstbeam-constraints"

log = logging.getLogger(__name__)
#: ``token.fst`` is written up to this many arcs (16 bytes each in OpenFst's vector format: 128 MB,
#: a few times that while it is built; a CEFR C2 word list's has 2.6M) and this many times the
#: tables' own token arcs (a word list's is about 1x; shared interiors copied out are 20-100x).
TOKEN_FST_MAX_ARCS = 8_000_000
TOKEN_FST_MAX_RATIO = 4
TOKEN_FST_SMALL = 1 << 20  # this many arcs are written whatever the ratio



Member = np.ndarray | bytes  # an array is written as .npy, bytes as they are


def _write_member(fp: Any, value: Member) -> None:
    """``value`` into ``fp`` in pieces (numpy writes an array 16 MiB at a time to a stream): the
    tables are never copied whole (a large JSON Schema's are 400 MB)."""
    if isinstance(value, np.ndarray):
        np.lib.format.write_array(fp, np.ascontiguousarray(value), allow_pickle=False)
    else:
        fp.write(value)


class _Digest:
    """A write-only stream that keeps a member's sha256 and size."""

    def __init__(self) -> None:
        self.sha, self.size = hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.size += len(data)
        return len(data)


_LIGHT_SKIP = LightAutomaton.DERIVED_FIELDS


def _light_members(prefix: str, a: LightAutomaton) -> tuple[dict[str, Any], dict[str, Member]]:
    """Fields of a light automaton: arrays as .npy members, bytes as hex, plain values in the
    manifest. Derived and debugging-only fields (distances, the character DFA) are not stored."""
    meta: dict[str, Any] = {"class": type(a).__name__}
    members: dict[str, Member] = {}
    for f in dataclasses.fields(a):
        v = getattr(a, f.name)
        if f.name in _LIGHT_SKIP:
            continue
        if isinstance(v, np.ndarray):
            members[f"{prefix}/{f.name}.npy"] = v
        elif isinstance(v, bytes):
            meta[f.name] = {"hex": v.hex()}
        elif v is None or isinstance(v, (str, int, float, bool)):
            meta[f.name] = v
        else:
            raise ArtifactError(f"cannot store field {f.name} of {type(a).__name__} ({type(v).__name__})")
    return meta, members


def _token_fst(cc: Any, manifest: dict[str, Any]) -> bytes | None:
    """The ``token.fst`` member, or None where its OpenFst form would pass `TOKEN_FST_MAX_ARCS`
    or `TOKEN_FST_MAX_RATIO` times the tables' token arcs (the manifest's ``token_fst`` says
    which, with the count; the tables hold the same language, and ``cc.hard.token_fst()`` still
    builds it). A flat automaton has no relative next states, so each copy of a shared interior
    is written out in full: a one-field JSON Schema's 0.28M token arcs are 6M arcs there, a large
    schema's 9M over a billion."""
    if cc.token_fst is None and cc.hard is not None:  # (one read from an artifact is kept as it was)
        arcs, stored = cc.hard.token_fst_arcs(), len(cc.hard.block_key)
        written = arcs <= min(TOKEN_FST_MAX_ARCS, max(TOKEN_FST_MAX_RATIO * stored, TOKEN_FST_SMALL))
        manifest["token_fst"] = {"arcs": arcs, "written": written}
        if not written:
            log.info("token.fst (the OpenFst form of the token automaton) is not written into the artifact: "
                     "%s arcs against %s in the tables (shared string interiors are copied out in a flat "
                     "automaton; limits %s arcs and %sx); the tables hold the same language",
                     f"{arcs:,}", f"{stored:,}", f"{TOKEN_FST_MAX_ARCS:,}", TOKEN_FST_MAX_RATIO)
            return None
    data: bytes | None = cc.token_fst_bytes()
    return data


def save_artifact(cc: Any, path: str | os.PathLike[str]) -> None:
    """Write ``cc`` (a `CompiledConstraints`) to ``path``: a new file, or one that replaces a
    regular file (never a device node, FIFO or socket: the rename would replace the node)."""
    from ..validate import check_output_path

    path = Path(check_output_path(path, "artifact path", error=ArtifactError))
    members: dict[str, Member] = {}
    manifest: dict[str, Any] = {
        "magic": MAGIC,
        "format_version": FORMAT_VERSION,
        "package_version": __version__,
        "tokenizer": {
            "fingerprint": cc.vocab.fingerprint,
            "name": cc.vocab.name,
            "kind": cc.vocab.kind,
            "width": cc.vocab.width,
            "eos_ids": list(cc.vocab.eos_ids),
        },
        "spec": cc.spec,
        "spec_hash": cc.spec_hash,
        "stats": cc.stats,
        "hard": None,
        "light": [],
    }
    if cc.hard is not None:
        manifest["hard"] = {"start": cc.hard.start, "width": cc.hard.width}
        for name, arr in cc.hard.arrays().items():
            members[f"hard/{name}.npy"] = arr
    prefix = [cc.prefix] if cc.prefix is not None else []
    for role, items in zip(LIGHT_ROLES, (cc.phrases, cc.avoid, prefix)):
        for a in items:
            i = len(manifest["light"])
            meta, mem = _light_members(f"light/{i}", a)
            meta["role"] = role
            manifest["light"].append(meta)
            members.update(mem)
    token_fst = _token_fst(cc, manifest)
    if token_fst is not None:
        members["token.fst"] = token_fst
    if cc.char_fst is not None:
        members["char.fst"] = cc.char_fst
    if cc.char_state is not None:
        members["char_state.npy"] = cc.char_state
    manifest["members"] = {}
    for name, value in members.items():  # first pass: checksums and sizes, for the manifest written first
        digest = _Digest()
        _write_member(digest, value)
        manifest["members"][name] = {"sha256": digest.sha.hexdigest(), "bytes": digest.size}
        if isinstance(value, np.ndarray):
            manifest["members"][name].update(shape=list(value.shape), dtype=str(value.dtype))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ArtifactError(f"cannot write {path}: {exc.strerror}; choose a writable output path") from exc
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
            text = json.dumps(manifest, indent=1, default=str).encode("utf-8")
            zf.writestr("manifest.json", text)
            zf.writestr("manifest.sha256", hashlib.sha256(text).hexdigest() + "\n")
            for name, value in members.items():
                info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
                info.external_attr, info.file_size = 0o600 << 16, manifest["members"][name]["bytes"]
                with zf.open(info, "w") as out:
                    _write_member(out, value)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; an artifact is an ordinary file
        os.replace(tmp, path)
    except OSError as exc:
        raise ArtifactError(f"cannot write {path}: {exc}; choose a writable output path") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The checked manifest of the artifact at ``path`` (members are not read)."""
    fh, zf = open_archive(path)
    with fh, zf:
        return _manifest(zf, path)


def _manifest(zf: zipfile.ZipFile, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read (bounded), parse, checksum and schema-check ``manifest.json``; cross-check the zip's
    member list against it."""
    names = set(zf.namelist())
    if "manifest.json" not in names:
        raise ArtifactCorruptError(f"{path} has no manifest.json: it is not an fstbeam artifact; recompile it")
    size = zf.getinfo("manifest.json").file_size
    if size > MAX_MANIFEST_BYTES:
        raise corrupt(path, f"manifest.json is {size:,} bytes")
    raw = read_member(zf, "manifest.json", size, path)
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise corrupt(path, f"manifest.json is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(manifest, dict) or manifest.get("magic") != MAGIC:
        raise ArtifactCorruptError(f"{path} is not an fstbeam constraints artifact (no '{MAGIC}' magic in its manifest)")
    fv = manifest.get("format_version")
    if type(fv) is not int or fv not in READS:
        raise ArtifactFormatError(
            f"{path} has artifact format version {fv}; this fstbeam ({__version__}) reads versions "
            f"{', '.join(map(str, READS))}: recompile it with compile-constraints"
        )
    if fv >= 2:  # version 2 on: the manifest's own checksum is stored beside it
        if "manifest.sha256" not in names:
            raise corrupt(path, "manifest.sha256 is missing")
        want = read_member(zf, "manifest.sha256", min(zf.getinfo("manifest.sha256").file_size, 128), path)
        if hashlib.sha256(raw).hexdigest().encode() != want.strip():
            raise corrupt(path, "manifest.json fails its checksum (manifest.sha256): it was edited or damaged")
    manifest = check_manifest(manifest, path, magic=MAGIC)
    if fv < LIGHT_RULE_SINCE and manifest["light"]:
        raise ArtifactFormatError(
            f"{path} has artifact format version {fv}: its phrase, avoid or prefix automata follow the word-boundary "
            f"rule before version {LIGHT_RULE_SINCE} (where \"'\" and \"-\" ended a word): recompile it with compile-constraints")
    listed = set(manifest["members"])
    meta_names = {"manifest.json"} | ({"manifest.sha256"} if fv >= 2 else set())
    if names != listed | meta_names:
        odd = sorted((names - listed - meta_names) | (listed - names))
        raise corrupt(path, f"the zip's members and the manifest's member table differ ({', '.join(odd[:5])})")
    missing = expected_members(manifest) - listed
    extra = {n for n in listed - expected_members(manifest) if n.startswith(("hard/", "light/"))}
    if missing or extra:
        raise corrupt(path, f"members {sorted(missing | extra)[:5]} do not match the manifest's automata")
    for name, info in manifest["members"].items():
        if name.endswith(".npy") and (info["dtype"] != member_dtype(name) or len(info["shape"]) != member_ndim(name)):
            raise corrupt(path, f"member {name} is {info['dtype']} with {len(info['shape'])} dimensions, expected "
                                f"{member_dtype(name)} with {member_ndim(name)}")
    check_member_sizes(manifest["members"], path)
    return manifest


def read_artifact(path: str | os.PathLike[str], tokenizer: Any = None) -> dict[str, Any]:
    """The fields of a `CompiledConstraints` stored at ``path`` (see `compiled.load_constraints`).
    With ``tokenizer`` (HF tokenizer, path, ``"default"`` or Vocab) its fingerprint must match
    the one the artifact was compiled for.

    The artifact is untrusted (docs/trust.md): everything is validated (artifact_validate)
    before it is used; anything wrong raises ArtifactCorruptError."""
    fh, zf = open_archive(path)
    with fh, zf:
        manifest = _manifest(zf, path)
        members = manifest["members"]

        blobs: dict[str, bytearray] = {}
        for name, info in members.items():  # verify everything, also members we would not read
            data = read_member_buffer(zf, name, info["bytes"], path)
            if hashlib.sha256(data).hexdigest() != info["sha256"]:
                raise ArtifactCorruptError(f"{path}: member {name} fails its checksum (edited or damaged); recompile it")
            blobs[name] = data
        member = blobs.__getitem__

        def array(name: str) -> np.ndarray:
            info = members[name]
            return npy_array(member(name), name, info["shape"], info["dtype"], path)

        tok = manifest["tokenizer"]
        width = tok["width"]
        vocab = _vocab_for(tokenizer, tok, path)
        hard = None
        if manifest["hard"] is not None:
            arrays = {n: array(f"hard/{n}.npy") for n in HardTables.ARRAYS + HardTables.OPTIONAL
                      if f"hard/{n}.npy" in members}
            hard = HardTables(start=manifest["hard"]["start"], width=manifest["hard"]["width"], **arrays)
            check_hard(hard, width, tok["eos_ids"], path)
            check_against_vocab(hard, vocab, path)
        phrases, avoid, prefix = [], [], None
        for i, meta in enumerate(manifest["light"]):
            a = _load_light(meta, i, array, members)
            check_light(a, width, path, f"light/{i}")
            check_label(a, vocab, path, f"light automaton {i} ({meta['role']})")
            if meta["role"] == "phrase":
                phrases.append(a)
            elif meta["role"] == "avoid":
                avoid.append(a)
            else:
                prefix = a
        char_state = array("char_state.npy") if "char_state.npy" in members else None
        char_fst = token_fst = None
        if "char.fst" in members:
            char_fst = check_char_fst(bytes(member("char.fst")), path, hard_states=len(hard.final) if hard else 0,
                                      char_state=char_state)
        if "token.fst" in members:
            token_fst, _ = check_vector_fst(bytes(member("token.fst")), "token.fst", path, max_label=width, epsilon=True)
        return dict(
            vocab=vocab, hard=hard, phrases=tuple(phrases), avoid=tuple(avoid), prefix=prefix,
            spec=manifest["spec"], spec_hash=manifest["spec_hash"], stats=manifest.get("stats", {}),
            token_fst=token_fst, char_fst=char_fst, char_state=char_state,
        )


def _load_light(meta: dict[str, Any], i: int, array: Callable[[str], np.ndarray], members: Any) -> LightAutomaton:
    if meta.get("class") != LightAutomaton.__name__:
        raise ArtifactCorruptError(f"light automaton {i} has unknown class {meta.get('class')!r}; recompile it")
    cls = LightAutomaton
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in _LIGHT_SKIP:
            continue
        v = meta.get(f.name, ...)
        if v is ... and isinstance(f.default, (int, str)):
            continue  # a plain field added later (max_progress, items): older artifacts lack it
        if v is ... and f.name == "fallback" and f"light/{i}/fallback.npy" not in members:
            continue  # format 1 and 2: no fallback states (expected_members checks the version)
        if v is ...:
            kwargs[f.name] = array(f"light/{i}/{f.name}.npy")
        elif isinstance(v, dict) and "hex" in v:
            kwargs[f.name] = bytes.fromhex(v["hex"])
        else:
            kwargs[f.name] = v
    try:
        return cls(**kwargs)
    except (TypeError, ValueError, IndexError) as exc:  # inconsistent tables: never trust them
        raise ArtifactCorruptError(f"light automaton {i} is inconsistent ({exc}); recompile it") from None


#: How far an artifact's id width may exceed its tokenizer's own size: models pad their output
#: layer (a few hundred ids, rarely more); a larger width is an edit, refused before it is built.
MAX_WIDTH_PADDING = 1 << 16


def _own_size(tokenizer: Any) -> int:
    """The tokenizer's number of ids: a Hugging Face tokenizer's ``len`` (reading its whole table
    here would read it twice, seconds each), else its cached vocabulary's width."""
    if not isinstance(tokenizer, (str, os.PathLike, Vocab)) and tokenizer is not None:
        try:
            return int(len(tokenizer))
        except TypeError:  # not sized: read it
            pass
    return load_vocab(tokenizer).width


def _vocab_for(tokenizer: Any, tok: dict[str, Any], path: str | os.PathLike[str]) -> Vocab:
    if tokenizer is None:
        if tok.get("name", "").endswith("(default)"):
            tokenizer = "default"
        else:
            raise ArtifactError(
                f"{path} was compiled for tokenizer {tok.get('name')!r}: pass tokenizer= to load it"
            )
    own = _own_size(tokenizer)  # the tokenizer's own size, before a table of `width` ids is built
    width = tok["width"]
    if width > own + MAX_WIDTH_PADDING:
        raise corrupt(path, f"the manifest's tokenizer width {width:,} does not fit the tokenizer's {own:,} tokens "
                            f"(at most {MAX_WIDTH_PADDING:,} padding ids are accepted)")
    vocab = load_vocab(tokenizer, width=width, eos_ids=tok["eos_ids"])
    if vocab.fingerprint != tok["fingerprint"]:
        raise TokenizerMismatchError(
            f"{path} was compiled for tokenizer {tok.get('name')!r} (fingerprint {tok['fingerprint'][:12]}), "
            f"not for {vocab.describe()} (fingerprint {vocab.fingerprint[:12]}): recompile it for this tokenizer"
        )
    return vocab
