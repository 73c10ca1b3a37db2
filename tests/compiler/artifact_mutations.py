"""Seeded mutations of an artifact, for the fuzz test (test_artifact_fuzz.py) and its worker.

Every mutation returns the bytes of a new artifact file. Most re-seal the result (member checksums,
sizes and the manifest checksum recomputed), as a deliberate attacker would, so the loader's
structural and range checks are what must catch them, not only the checksums.
"""
from __future__ import annotations

import hashlib
import io
import json
import random
import zipfile

import numpy as np

PIECES = ["a", "b", "c", " ", "ab", " a", " b", "ca", ".", "b.", "ab "]


def small_vocab():
    from fstbeam.contract.vocab import Vocab

    return Vocab.from_dict({i: p.encode() for i, p in enumerate(PIECES)}, eos_ids=[len(PIECES)], name="fuzz-vocab")


def build_original() -> bytes:
    """An artifact with every member kind: hard tables, both OpenFst automata, char_state, and
    light automata in all three roles."""
    import tempfile
    from pathlib import Path

    import fstbeam

    cc = fstbeam.compile_constraints(words=["ab", "ca", "b"], phrases=["ab"], avoid=["b b"], prefix="a",
                                     tokenizer=small_vocab(), case_variants=False)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.fstbeam"
        cc.save(p)
        return p.read_bytes()


def unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def rezip(members: dict[str, bytes], *, reseal: bool = True, compress: dict | None = None) -> bytes:
    members = dict(members)
    if reseal:
        m = json.loads(members["manifest.json"])
        if isinstance(m, dict) and isinstance(m.get("members"), dict):
            for name, info in m["members"].items():
                if name in members and isinstance(info, dict):
                    info["sha256"] = hashlib.sha256(members[name]).hexdigest()
                    info["bytes"] = len(members[name])
            members["manifest.json"] = json.dumps(m, indent=1).encode()
        members["manifest.sha256"] = (hashlib.sha256(members["manifest.json"]).hexdigest() + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for n, b in members.items():
            zf.writestr(n, b, compress_type=(compress or {}).get(n, zipfile.ZIP_STORED))
    return buf.getvalue()


_VALUES = [None, -1, 0, 1, 2, 7, 255, 256, 2**31 - 1, 2**31, 2**40, -2**40, "x", "", [], {}, [1, 2], True, 1.5]


def _walk(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, path + (i,))


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    if value is _DELETE:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


_DELETE = object()


def mutate_manifest(orig: dict[str, bytes], rng: random.Random) -> bytes:
    m = json.loads(orig["manifest.json"])
    paths = [p for p in _walk(m) if p]
    p = rng.choice(paths)
    choice = rng.random()
    if choice < 0.15 and isinstance(p[-1], str):
        _set(m, p, _DELETE)
    elif choice < 0.25 and p[-1] == "role":
        _set(m, p, rng.choice(["phrase", "avoid", "prefix"]))
    elif choice < 0.3 and p[-1] == "class":
        _set(m, p, rng.choice(["CharDFA", "__class__", "compile_phrase", "LightAutomaton"]))
    else:
        _set(m, p, rng.choice(_VALUES))
    members = dict(orig)
    members["manifest.json"] = json.dumps(m).encode()
    return rezip(members, reseal=rng.random() < 0.8)


def mutate_member_bytes(orig: dict[str, bytes], rng: random.Random) -> bytes:
    """Flip a few bytes of one member (header or body), re-sealed."""
    name = rng.choice([n for n in orig if n not in ("manifest.json", "manifest.sha256")])
    data = bytearray(orig[name])
    for _ in range(rng.choice([1, 1, 2, 3, 8])):
        i = rng.randrange(len(data)) if rng.random() < 0.5 else rng.randrange(min(len(data), 128))
        data[i] = rng.randrange(256)
    members = dict(orig)
    members[name] = bytes(data)
    return rezip(members, reseal=rng.random() < 0.9)


def mutate_array_values(orig: dict[str, bytes], rng: random.Random) -> bytes:
    """Set one element of one array to a hostile value, keeping a valid .npy (re-sealed)."""
    name = rng.choice([n for n in orig if n.endswith(".npy")])
    arr = np.load(io.BytesIO(orig[name]), allow_pickle=False).copy()
    if arr.size:
        flat = arr.reshape(-1)
        i = rng.randrange(flat.size)
        if arr.dtype == bool:
            flat[i] = not flat[i]
        else:
            info = np.iinfo(arr.dtype)
            v = rng.choice([-1, 0, 1, info.max, info.min, int(flat[i]) + 1, int(flat[i]) - 1, 256, 12, 11])
            flat[i] = min(max(v, info.min), info.max)
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    members = dict(orig)
    members[name] = buf.getvalue()
    return rezip(members)


def mutate_array_shape(orig: dict[str, bytes], rng: random.Random) -> bytes:
    """Replace one array by a longer/shorter/other-dtype one, manifest shape updated to match."""
    name = rng.choice([n for n in orig if n.endswith(".npy")])
    arr = np.load(io.BytesIO(orig[name]), allow_pickle=False)
    kind = rng.choice(["grow", "shrink", "dtype", "2d"])
    if kind == "grow":
        arr = np.concatenate([arr.reshape(-1), arr.reshape(-1)[:1]]) if arr.size else np.zeros(1, arr.dtype)
    elif kind == "shrink":
        arr = arr.reshape(-1)[:-1]
    elif kind == "dtype":
        arr = arr.astype(rng.choice([np.int64, np.int8, np.float32, np.uint8]))
    else:
        arr = arr.reshape(1, -1)
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    members = dict(orig)
    members[name] = buf.getvalue()
    m = json.loads(members["manifest.json"])
    if rng.random() < 0.8:
        m["members"][name].update(shape=list(arr.shape), dtype=str(arr.dtype))
    members["manifest.json"] = json.dumps(m).encode()
    return rezip(members)


def mutate_fst_counts(orig: dict[str, bytes], rng: random.Random) -> bytes:
    """Overwrite an OpenFst header or per-state count with a hostile integer (re-sealed)."""
    import struct

    name = rng.choice(["char.fst", "token.fst"])
    data = bytearray(orig[name])
    at = rng.choice([38, 42, 50, 58, 66, 70, 74 + 16 * rng.randrange(4)])  # start, states, arcs, a state
    fmt = rng.choice(["<q", "<i"])
    value = rng.choice([-1, 2**31 - 1, 2**40, 10**6, 3, 0])
    if at + struct.calcsize(fmt) <= len(data):
        try:
            struct.pack_into(fmt, data, at, value)
        except struct.error:
            pass
    members = dict(orig)
    members[name] = bytes(data)
    return rezip(members)


def mutate_zip(orig_bytes: bytes, orig: dict[str, bytes], rng: random.Random) -> bytes:
    kind = rng.choice(["truncate", "flip", "duplicate", "deflate", "extra", "missing", "bomb", "empty", "garbage"])
    if kind == "truncate":
        return orig_bytes[: rng.randrange(len(orig_bytes))]
    if kind == "flip":
        data = bytearray(orig_bytes)
        for _ in range(rng.choice([1, 4, 16])):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if kind == "duplicate":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for n, b in orig.items():
                    zf.writestr(n, b)
                n = rng.choice(list(orig))
                zf.writestr(n, orig[n][::-1])
        return buf.getvalue()
    if kind == "deflate":
        return rezip(orig, compress={rng.choice(list(orig)): zipfile.ZIP_DEFLATED})
    if kind == "extra":
        return rezip({**orig, rng.choice(["evil.npy", "hard/extra.npy", "../x"]): b"\x00" * 64})
    if kind == "missing":
        members = dict(orig)
        del members[rng.choice(list(members))]
        return rezip(members, reseal=False) if "manifest.json" not in members else rezip(members)
    if kind == "bomb":  # a deflated member that expands to 64 MiB
        members = dict(orig)
        members["char_state.npy"] = b"\x00" * (64 << 20)
        return rezip(members, reseal=rng.random() < 0.5, compress={"char_state.npy": zipfile.ZIP_DEFLATED})
    if kind == "empty":
        return b""
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000)))


def variants(seed: int, n: int) -> list[tuple[str, bytes]]:
    """``n`` (label, artifact bytes) pairs, spread over every kind of mutation."""
    rng = random.Random(seed)
    orig_bytes = build_original()
    orig = unzip(orig_bytes)
    kinds = [
        ("manifest", lambda: mutate_manifest(orig, rng)),
        ("member-bytes", lambda: mutate_member_bytes(orig, rng)),
        ("array-values", lambda: mutate_array_values(orig, rng)),
        ("array-shape", lambda: mutate_array_shape(orig, rng)),
        ("fst-counts", lambda: mutate_fst_counts(orig, rng)),
        ("zip", lambda: mutate_zip(orig_bytes, orig, rng)),
    ]
    out = [("original", orig_bytes)]
    for i in range(n - 1):
        label, make = kinds[i % len(kinds)]
        out.append((label, make()))
    return out
