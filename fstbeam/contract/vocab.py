"""Tokenizer vocabulary model: every token id -> its exact bytes.

Handles three families of Hugging Face tokenizers:
- SentencePiece-style with byte fallback (Gemma, Llama 2): ``▁`` is a space, ``<0xNN>`` is one byte;
- byte-level BPE (GPT-2, Llama 3, Qwen): token strings are the GPT-2 byte-to-unicode map;
- plain vocabularies: token strings are UTF-8 text as written.
Special tokens are excluded (``None``) except EOS, which decoding treats separately, and so are
*control* tokens: added tokens that the tokenizer does not mark special but whose whole text is a
control name such as ``<start_of_image>`` or ``[multimodal]`` (see :func:`control_token_ids`);
they mark images or turns for the model and are never output text. HTML tags among them
(Gemma 3's ``<h1>``, ``</td>``) are text: the model writes markup with them, and the tokenizer
spells ``"<h1>"`` in any text with its tag token. The mask
width is the model's output size, which may exceed the tokenizer's; ids past the tokenizer's
end are ``None`` as well.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import TokenizerError

_BYTE_FALLBACK = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
#: The whole text of a control token: ``<name>``, ``</name>`` or ``[name]`` without spaces.
CONTROL_NAME = re.compile(r"<[^<>\s]+>|\[[^\[\]\s]+\]")
#: ... except an HTML tag, ``<name>`` or ``</name>`` with an HTML element's name: text.
HTML_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)>")
HTML_ELEMENTS = frozenset("""
a abbr address area article aside audio b base bdi bdo blockquote body br button canvas caption cite
code col colgroup data datalist dd del details dfn dialog div dl dt em embed fieldset figcaption
figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins kbd label
legend li link main map mark menu meta meter nav noscript object ol optgroup option output p param
picture pre progress q rp rt ruby s samp script search section select slot small source span strong
style sub summary sup table tbody td template textarea tfoot th thead time title tr track u ul var
video wbr""".split())
SPIECE_SPACE = "\u2581"


def _gpt2_unicode_to_byte() -> dict[str, int]:
    """Inverse of GPT-2's ``bytes_to_unicode``: printable bytes map to themselves, the rest to 256+."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars = list(printable)
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}


@dataclass(frozen=True, eq=False)
class Vocab:
    """Immutable token-id -> bytes table.

    ``token_bytes[i]`` is the exact byte string token ``i`` contributes to the output, or ``None``
    for ids that may never be emitted as text (special tokens, EOS, ids past the tokenizer).
    """

    token_bytes: tuple[bytes | None, ...]
    eos_ids: tuple[int, ...]
    special_ids: frozenset[int] = frozenset()
    kind: str = "plain"
    name: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for e in self.eos_ids:
            if not 0 <= e < len(self.token_bytes):
                raise TokenizerError(f"EOS id {e} is outside the vocabulary of width {len(self.token_bytes)}")
            if self.token_bytes[e] is not None:
                raise TokenizerError(f"EOS id {e} must not also be a text token")

    # ---- sizes -------------------------------------------------------------------------------
    @property
    def width(self) -> int:
        """Mask width: the number of logits the model produces."""
        return len(self.token_bytes)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of every token's bytes, the special and EOS ids, and the width."""
        h = hashlib.sha256()
        h.update(f"fstbeam-vocab-v1|{self.width}|{sorted(self.eos_ids)}|{sorted(self.special_ids)}|".encode())
        none = b"\xff\xff\xff\xff"  # one update of the joined parts: 3x faster than one per token
        h.update(b"".join(none if tb is None else len(tb).to_bytes(4, "little") + tb for tb in self.token_bytes))
        return h.hexdigest()

    @cached_property
    def text_ids(self) -> np.ndarray:
        """Sorted ids of tokens that spell text."""
        return np.array([i for i, b in enumerate(self.token_bytes) if b], dtype=np.int64)

    def describe(self) -> str:
        return f"{self.name or self.kind} ({self.width} ids, {len(self.text_ids)} text tokens, EOS {list(self.eos_ids)})"

    # ---- constructors ------------------------------------------------------------------------
    @classmethod
    def from_dict(
        cls,
        tokens: Mapping[int, bytes | str] | Sequence[bytes | str | None],
        *,
        eos_ids: Iterable[int] = (),
        width: int | None = None,
        name: str = "dict",
    ) -> "Vocab":
        """Build from ``{id: bytes}`` or a list (tests and custom vocabularies). EOS ids get no bytes."""
        items = tokens.items() if isinstance(tokens, Mapping) else enumerate(tokens)
        pairs = {int(i): (b.encode("utf-8") if isinstance(b, str) else b) for i, b in items}
        eos = tuple(int(e) for e in eos_ids)
        size = max([*pairs.keys(), *eos, -1]) + 1
        width = size if width is None else width
        if width < size:
            raise TokenizerError(f"width {width} is smaller than the largest token id + 1 ({size})")
        table: list[bytes | None] = [None] * width
        for i, b in pairs.items():
            if i in eos:
                continue
            if b is not None and len(b) == 0:
                b = None
            table[i] = b
        return cls(tuple(table), eos, frozenset(eos), "dict", name)

    @classmethod
    def from_tokenizer_json(
        cls, path: str | os.PathLike[str], *, width: int | None = None, eos_ids: Iterable[int] | None = None
    ) -> "Vocab":
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        from ..files.textfile import read_utf8

        text = read_utf8(path, TokenizerError, what="tokenizer file", expect="pass a tokenizer folder or tokenizer.json")
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise TokenizerError(f"{path} is not a valid tokenizer.json: {exc}") from None
        if not isinstance(data, dict):
            raise TokenizerError(f"{path} is not a Hugging Face tokenizer.json (it holds a {type(data).__name__}, not an "
                                 "object): pass the tokenizer.json written by tokenizers / transformers")
        eos = None if eos_ids is None else tuple(eos_ids)
        try:
            if eos is None:
                eos = _eos_from_config(path.parent, data)
            return _from_tokenizer_data(data, width=width, eos_ids=eos, name=str(path.parent.name or path))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            if isinstance(exc, TokenizerError):
                raise
            raise TokenizerError(f"{path} is not a well-formed tokenizer.json ({type(exc).__name__}: {exc}): "
                                 "pass the tokenizer.json written by tokenizers / transformers") from None

    @classmethod
    def from_hf_tokenizer(cls, tokenizer: Any, *, width: int | None = None, eos_ids: Iterable[int] | None = None) -> "Vocab":
        backend = getattr(tokenizer, "backend_tokenizer", None) or getattr(tokenizer, "_tokenizer", None)
        if backend is None:
            raise TokenizerError(
                f"{type(tokenizer).__name__} has no fast (tokenizers) backend; load it with use_fast=True"
            )
        data = json.loads(backend.to_str())
        eos = tuple(eos_ids) if eos_ids is not None else ()
        if not eos:
            eid = getattr(tokenizer, "eos_token_id", None)
            eos = (eid,) if eid is not None else ()
        name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        return _from_tokenizer_data(data, width=width, eos_ids=eos, name=os.path.basename(str(name)))


def _eos_from_config(folder: Path, data: dict[str, Any]) -> tuple[int, ...]:
    cfg_path = folder / "tokenizer_config.json"
    eos_tok = None
    if cfg_path.exists():
        try:
            cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TokenizerError(f"{cfg_path} is not valid JSON ({exc}): repair or remove it") from None
        eos_tok = cfg.get("eos_token")
        if isinstance(eos_tok, dict):
            eos_tok = eos_tok.get("content")
    for a in data.get("added_tokens", []):
        if a["content"] == eos_tok:
            return (a["id"],)
    return ()


def _from_tokenizer_data(data: dict[str, Any], *, width: int | None, eos_ids: tuple[int, ...], name: str) -> Vocab:
    if not isinstance(data, dict) or not isinstance(data.get("model") or {}, dict):
        raise TokenizerError(f"tokenizer '{name}' is not a Hugging Face tokenizer.json (it holds a "
                             f"{type(data).__name__}, not an object with a 'model'): pass the tokenizer.json "
                             "written by tokenizers / transformers")
    model = data.get("model") or {}
    vocab = model.get("vocab")
    if not isinstance(vocab, (dict, list)):
        raise TokenizerError(f"tokenizer '{name}' has no model vocabulary")
    pairs = vocab if isinstance(vocab, list) else list(vocab.items())
    if pairs and isinstance(pairs[0], list):  # Unigram: [[piece, score], ...] by id
        id_to_piece = {i: p[0] for i, p in enumerate(pairs)}
    else:
        id_to_piece = {int(i): p for p, i in pairs}
    added = {a["id"]: a for a in data.get("added_tokens", [])}
    for i, a in added.items():
        id_to_piece.setdefault(i, a["content"])

    decoder = json.dumps(data.get("decoder") or {})
    pre = json.dumps(data.get("pre_tokenizer") or {})
    if '"ByteLevel"' in decoder or '"ByteLevel"' in pre:
        kind = "byte-level"
    elif SPIECE_SPACE in decoder or "Metaspace" in decoder or "Metaspace" in pre or "ByteFallback" in decoder:
        kind = "sentencepiece"
    else:
        kind = "plain"
    byte_fallback = bool(model.get("byte_fallback")) or "ByteFallback" in decoder
    u2b = _gpt2_unicode_to_byte() if kind == "byte-level" else {}

    size = max(id_to_piece) + 1 if id_to_piece else 0
    width = size if width is None else width
    if width < size:
        raise TokenizerError(f"width {width} is smaller than tokenizer '{name}' ({size} ids)")
    special = {i for i, a in added.items() if a.get("special")} | control_token_ids(added.values())
    eos = tuple(e for e in eos_ids if e is not None)
    special |= set(eos)
    table: list[bytes | None] = [None] * width
    for i, piece in id_to_piece.items():
        if i in special or i >= width:
            continue
        if i in added:  # added tokens are raw text, not in the model's piece alphabet
            b = piece.encode("utf-8")
        elif kind == "byte-level":
            try:
                b = bytes(u2b[c] for c in piece)
            except KeyError:
                b = piece.encode("utf-8")
        elif kind == "sentencepiece":
            m = _BYTE_FALLBACK.match(piece) if byte_fallback else None
            b = bytes([int(m.group(1), 16)]) if m else piece.replace(SPIECE_SPACE, " ").encode("utf-8")
        else:
            b = piece.encode("utf-8")
        table[i] = b or None
    return Vocab(tuple(table), eos, frozenset(special), kind, name)


def control_token_ids(added_tokens: Iterable[Mapping[str, Any]]) -> set[int]:
    """Ids of added tokens (tokenizer.json ``added_tokens``) that are control tokens even when not
    marked special: their whole content is a control name (``<start_of_image>``, ``[multimodal]``,
    ``<tool_call>``) that is not an HTML tag. Gemma 3 leaves its image tokens unmarked, and a model
    writing them as text is never what a reader wants; the same text stays reachable through
    ordinary tokens. Its HTML tags (``<h1>``, ``</td>``, 70 of them) are text: the tokenizer spells
    every ``<h1>`` with one, so a valid JSON string holding HTML would otherwise be out of reach."""
    return {int(a["id"]) for a in added_tokens if _control_name(str(a.get("content", "")))}


def _control_name(content: str) -> bool:
    tag = HTML_TAG.fullmatch(content)
    return CONTROL_NAME.fullmatch(content) is not None and not (tag and tag.group(1).lower() in HTML_ELEMENTS)


def _from_file_cached(path: Path, width: int | None, eos_ids: Iterable[int] | None, name: str | None = None) -> Vocab:
    """Parsing a 33 MB tokenizer.json takes ~1 s: keep each file's Vocab in memory
    (in the process-wide byte-budget cache, `fstbeam.contract.cache`)."""
    f = path / "tokenizer.json" if path.is_dir() else path
    st = f.stat() if f.exists() else None
    key = (str(f.resolve()), st and st.st_mtime_ns, st and st.st_size, width, None if eos_ids is None else tuple(eos_ids), name)
    from .cache import shared_cache

    vocab: Vocab = shared_cache().get(("vocab-file", key), lambda: _from_disk_cache(path, key, width, eos_ids, name))
    return vocab


def _from_disk_cache(path: Path, key: tuple[Any, ...], width: int | None, eos_ids: Iterable[int] | None,
                     name: str | None) -> Vocab:
    """The parsed vocabulary as arrays on disk (blob + offsets), keyed by the file's identity."""
    from .disk_cache import cached_arrays

    def build() -> dict[str, np.ndarray]:
        v = Vocab.from_tokenizer_json(path, width=width, eos_ids=eos_ids)
        lens = np.array([-1 if b is None else len(b) for b in v.token_bytes], dtype=np.int64)
        blob = np.frombuffer(b"".join(b for b in v.token_bytes if b), dtype=np.uint8)
        return {"lens": lens, "blob": blob, "eos": np.array(v.eos_ids, np.int64),
                "special": np.array(sorted(v.special_ids), np.int64), "kind": np.array(v.kind)}

    # "control-v3": HTML tags became text again (control-v2: control tokens became non-text);
    # vocabularies cached before are stale
    a = cached_arrays("vocab", hashlib.sha256(repr(("control-v3", key)).encode()).hexdigest(), build)
    blob, lens = a["blob"].tobytes(), a["lens"]
    ends = np.cumsum(np.maximum(lens, 0))
    starts = (ends - np.maximum(lens, 0)).tolist()
    table = tuple(None if n < 0 else blob[s:s + n] for s, n in zip(starts, lens.tolist()))
    return Vocab(table, tuple(a["eos"].tolist()), frozenset(a["special"].tolist()), str(a["kind"]), name or path.name)


def load_vocab(tokenizer: Any, *, width: int | None = None, eos_ids: Iterable[int] | None = None) -> Vocab:
    """A ``Vocab`` from ``"default"``, a path (folder or tokenizer.json), a HF tokenizer, or a Vocab."""
    if isinstance(tokenizer, Vocab):
        return tokenizer
    from ..files.status import status

    with status("reading the tokenizer's vocabulary"):
        return _load_vocab(tokenizer, width, eos_ids)


def _load_vocab(tokenizer: Any, width: int | None, eos_ids: Iterable[int] | None) -> Vocab:
    if tokenizer is None or (isinstance(tokenizer, str) and tokenizer == "default"):
        from ..files.default_model import default_tokenizer_dir, repair

        try:
            return _from_file_cached(default_tokenizer_dir(), width, eos_ids, "gemma3-270m (default)")
        except TokenizerError as exc:  # the converted copy in the cache is damaged: convert it again
            return _from_file_cached(repair("tokenizer", str(exc)), width, eos_ids, "gemma3-270m (default)")
    if isinstance(tokenizer, (str, os.PathLike)):
        p = Path(tokenizer)
        if not p.exists():
            raise TokenizerError(f"tokenizer path {p} does not exist: pass a folder with tokenizer.json, the file itself, or 'default'")
        return _from_file_cached(p, width, eos_ids)
    return Vocab.from_hf_tokenizer(tokenizer, width=width, eos_ids=eos_ids)
