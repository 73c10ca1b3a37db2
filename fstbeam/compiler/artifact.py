"""One versioned artifact file: a zip (stored, not compressed) holding

- ``manifest.json``: format version, package version, tokenizer fingerprint, spec and its hash,
  every member's shape, dtype and sha256;
- ``hard/*.npy``: the hard automaton's tables (docs/tables.md), ``light/<i>/*.npy`` per-request ones;
- ``token.fst`` / ``char.fst``: the OpenFst token and character automata (readable by OpenFst tools).

No pickle anywhere: arrays are loaded with ``allow_pickle=False``. Loading checks the format
version, every checksum and, when a tokenizer is given, its fingerprint, and raises a specific
error for each. Saving writes a temporary file and renames it, so a failure leaves nothing behind.
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import ArtifactCorruptError, ArtifactError, ArtifactFormatError, TokenizerMismatchError
from ..fst.labels import token_to_label
from ..fst.vector_fst import vector_fst_bytes
from .compiled import CompiledConstraints
from .tables import HardTables
from .token_fsa import TokenFSA
from .vocab import Vocab, load_vocab

FORMAT_VERSION = 1
MAGIC = "fstbeam-constraints"


def token_fst_bytes(fsa: TokenFSA) -> bytes:
    """The factored token automaton as an OpenFst acceptor: state q --eps--> block state, and
    block state --(token id + 1)--> next state. Its language is exactly the token language."""
    S, NB = fsa.num_states, fsa.num_blocks
    sb_state = np.repeat(np.arange(S), np.diff(fsa.state_block_ptr))
    blk_entries = np.repeat(np.arange(NB), np.diff(fsa.block_ptr))
    arc_state = np.concatenate([sb_state, S + blk_entries])
    arc_label = np.concatenate([np.zeros(len(sb_state), np.int64), token_to_label(fsa.block_tokens.astype(np.int64))])
    arc_next = np.concatenate([S + fsa.state_block_id.astype(np.int64), fsa.block_next.astype(np.int64)])
    final = np.concatenate([fsa.final, np.zeros(NB, bool)])
    return vector_fst_bytes(S + NB, 0, final, arc_state, arc_label, arc_next)


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


_LIGHT_SKIP = ("char_dfa", "char_state")


def _light_members(prefix: str, a) -> tuple[dict, dict[str, bytes]]:
    """Fields of a light automaton: arrays as .npy members, bytes as hex, plain values in the
    manifest. Debugging-only fields with a default (the character DFA) are not stored."""
    meta, members = {"class": type(a).__name__}, {}
    for f in dataclasses.fields(a):
        v = getattr(a, f.name)
        if f.name in _LIGHT_SKIP:
            continue
        if isinstance(v, np.ndarray):
            members[f"{prefix}/{f.name}.npy"] = _npy(v)
        elif isinstance(v, bytes):
            meta[f.name] = {"hex": v.hex()}
        elif v is None or isinstance(v, (str, int, float, bool)):
            meta[f.name] = v
        else:
            raise ArtifactError(f"cannot store field {f.name} of {type(a).__name__} ({type(v).__name__})")
    return meta, members


def save_artifact(cc: CompiledConstraints, path) -> None:
    path = Path(path)
    members: dict[str, bytes] = {}
    manifest: dict = {
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
            members[f"hard/{name}.npy"] = _npy(arr)
    for role, items in (("phrase", cc.phrases), ("avoid", cc.avoid), ("prefix", [cc.prefix] if cc.prefix is not None else [])):
        for a in items:
            i = len(manifest["light"])
            meta, mem = _light_members(f"light/{i}", a)
            meta["role"] = role
            manifest["light"].append(meta)
            members.update(mem)
    if cc.token_fst is not None:
        members["token.fst"] = cc.token_fst
    if cc.char_fst is not None:
        members["char.fst"] = cc.char_fst
    if cc.char_state is not None:
        members["char_state.npy"] = _npy(cc.char_state)
    manifest["members"] = {
        name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)} for name, data in members.items()
    }
    for name, data in members.items():
        if name.endswith(".npy"):
            arr = np.load(io.BytesIO(data), allow_pickle=False)
            manifest["members"][name].update(shape=list(arr.shape), dtype=str(arr.dtype))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ArtifactError(f"cannot write {path}: {exc.strerror}; choose a writable output path") from exc
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr("manifest.json", json.dumps(manifest, indent=1, default=str))
            for name, data in members.items():
                zf.writestr(name, data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; an artifact is an ordinary file
        os.replace(tmp, path)
    except OSError as exc:
        raise ArtifactError(f"cannot write {path}: {exc}; choose a writable output path") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def read_manifest(path) -> dict:
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:
            return _manifest(zf, path)
    except FileNotFoundError:
        raise ArtifactError(f"no artifact at {path}") from None
    except zipfile.BadZipFile as exc:
        raise ArtifactCorruptError(f"{path} is not an fstbeam artifact or is truncated ({exc}); recompile it") from None


def _manifest(zf: zipfile.ZipFile, path) -> dict:
    try:
        manifest = json.loads(zf.read("manifest.json"))
    except (KeyError, ValueError) as exc:
        raise ArtifactCorruptError(f"{path} has no readable manifest ({exc}); recompile it") from None
    if manifest.get("magic") != MAGIC:
        raise ArtifactCorruptError(f"{path} is not an fstbeam constraints artifact")
    fv = manifest.get("format_version")
    if fv != FORMAT_VERSION:
        raise ArtifactFormatError(
            f"{path} has artifact format version {fv}; this fstbeam ({__version__}) reads version "
            f"{FORMAT_VERSION}: recompile it with compile-constraints"
        )
    return manifest


def load_constraints(path, tokenizer=None) -> CompiledConstraints:
    """Load an artifact. With ``tokenizer`` (HF tokenizer, path, ``"default"`` or Vocab) its
    fingerprint must match the one the artifact was compiled for."""
    path = Path(path)
    try:
        zf = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise ArtifactError(f"no artifact at {path}: compile one with `compile-constraints compile -o {path}`") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise ArtifactCorruptError(f"{path} is not an fstbeam artifact or is truncated ({exc}); recompile it") from None
    with zf:
        manifest = _manifest(zf, path)
        names = set(zf.namelist())

        def member(name: str) -> bytes:
            info = manifest["members"].get(name)
            if info is None or name not in names:
                raise ArtifactCorruptError(f"{path} is missing member {name}; recompile it")
            try:
                data = zf.read(name)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise ArtifactCorruptError(f"{path}: member {name} cannot be read ({exc}); recompile it") from None
            if hashlib.sha256(data).hexdigest() != info["sha256"]:
                raise ArtifactCorruptError(f"{path}: member {name} fails its checksum (edited or damaged); recompile it")
            return data

        def array(name: str) -> np.ndarray:
            try:
                return np.load(io.BytesIO(member(name)), allow_pickle=False)
            except ValueError as exc:
                raise ArtifactCorruptError(f"{path}: member {name} is not a plain array ({exc})") from None

        for name in manifest["members"]:  # verify everything, also members we would not read
            member(name)
        tok = manifest["tokenizer"]
        vocab = _vocab_for(tokenizer, tok, path)
        hard = None
        if manifest["hard"] is not None:
            arrays = {n: array(f"hard/{n}.npy") for n in HardTables.ARRAYS}
            hard = HardTables(start=manifest["hard"]["start"], width=manifest["hard"]["width"], **arrays)
        phrases, avoid, prefix = [], [], None
        for i, meta in enumerate(manifest["light"]):
            a = _load_light(meta, i, array)
            if meta["role"] == "phrase":
                phrases.append(a)
            elif meta["role"] == "avoid":
                avoid.append(a)
            else:
                prefix = a
        return CompiledConstraints(
            vocab=vocab, hard=hard, phrases=tuple(phrases), avoid=tuple(avoid), prefix=prefix,
            spec=manifest["spec"], spec_hash=manifest["spec_hash"], stats=manifest.get("stats", {}),
            token_fst=member("token.fst") if "token.fst" in manifest["members"] else None,
            char_fst=member("char.fst") if "char.fst" in manifest["members"] else None,
            char_state=array("char_state.npy") if "char_state.npy" in manifest["members"] else None,
        )


def _load_light(meta: dict, i: int, array):
    from . import light

    cls = getattr(light, meta["class"])
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in _LIGHT_SKIP:
            continue
        v = meta.get(f.name, ...)
        if v is ... and isinstance(f.default, (int, str)):
            continue  # a plain field added later (max_progress, items): older artifacts lack it
        if v is ...:
            kwargs[f.name] = array(f"light/{i}/{f.name}.npy")
        elif isinstance(v, dict) and "hex" in v:
            kwargs[f.name] = bytes.fromhex(v["hex"])
        else:
            kwargs[f.name] = v
    return cls(**kwargs)


def _vocab_for(tokenizer, tok: dict, path) -> Vocab:
    if tokenizer is None:
        if tok.get("name", "").endswith("(default)"):
            tokenizer = "default"
        else:
            raise ArtifactError(
                f"{path} was compiled for tokenizer {tok.get('name')!r}: pass tokenizer= to load it"
            )
    vocab = load_vocab(tokenizer, width=tok["width"], eos_ids=tok["eos_ids"])
    if vocab.fingerprint != tok["fingerprint"]:
        raise TokenizerMismatchError(
            f"{path} was compiled for tokenizer {tok.get('name')!r} (fingerprint {tok['fingerprint'][:12]}), "
            f"not for {vocab.describe()} (fingerprint {vocab.fingerprint[:12]}): recompile it for this tokenizer"
        )
    return vocab
