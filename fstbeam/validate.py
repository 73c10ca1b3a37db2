"""Checks of what users hand in, one function per kind of input, run before native code or a
model sees it. Each raises a `fstbeam.errors` error that names the input (and its position) and
says how to fix it. The limits are documented in docs/trust.md (a test reads both).
"""
from __future__ import annotations

import math
import os
import stat
from typing import Any

from .errors import DecodeError, Error, InputError, SpecError

__all__ = ["LIMITS", "check_text", "check_texts", "check_flag", "check_prompt", "check_prompt_ids", "check_prompts",
           "check_path", "check_output_path", "check_device", "check_model_path", "check_tokenizer_path",
           "check_prompt_format", "check_cefr", "CEFR_LEVELS", "PROMPT_FORMATS"]

#: CEFR levels, lowest first: the one list (``cefr=``, ``--cefr``, the ``cefr`` grammar).
CEFR_LEVELS = ("A1", "A2", "B1", "B2", "C1", "C2")
#: Prompt formats by name (`fstbeam.runtime.templates`); any other format is a ``{prompt}`` template.
PROMPT_FORMATS = ("raw", "chat", "auto", "qa")

#: Per-request limits (characters count Unicode code points). Above one, a request is refused in
#: milliseconds with an error that names the limit, never a MemoryError later.
LIMITS: dict[str, int] = {
    "phrase_chars": 1_000,  # one must-include phrase or AnyOf alternative
    "prefix_chars": 10_000,
    "avoid_chars": 10_000,  # one avoid phrase, and all avoid phrases of one request together
    "phrases_per_request": 200,  # must-include items
    "avoid_per_request": 1_000,
    "alternatives_per_item": 1_000,  # alternatives of one AnyOf
    "alternatives_chars": 16_000,  # all alternatives of one AnyOf together
    "word_chars": 200,  # one entry of a word list
}


def _kind(value: Any) -> str:
    return type(value).__name__


def check_text(value: Any, where: str, *, limit: str | None = None, error: type[Error] = SpecError,
               blank_ok: bool = False) -> str:
    """``value`` as text for the input ``where``: a non-empty ``str`` of valid Unicode (no lone
    surrogate, no NUL byte), at most ``LIMITS[limit]`` characters. Only spaces is empty too,
    unless ``blank_ok`` (a regex or a choice, where a space is what is said)."""
    if not isinstance(value, str):
        raise error(f"{where} must be text (str), not {_kind(value)} {value!r:.60}")
    if not (value if blank_ok else value.strip()):
        raise error(f"{where} is empty: give the text (or leave it out)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{where} is not valid Unicode text (a lone surrogate {value[exc.start]!r} at character "
                    f"{exc.start}): pass UTF-8 text") from None
    if "\x00" in value:
        raise error(f"{where} contains a NUL character at {value.index(chr(0))}, which no token can spell: remove it")
    if limit is not None and len(value) > LIMITS[limit]:
        raise error(f"{where} has {len(value):,} characters, over the limit of {LIMITS[limit]:,} ({limit}, "
                    "docs/trust.md): shorten it")
    return value


def check_texts(values: Any, where: str, *, limit: str | None = None, count: str | None = None,
                error: type[Error] = SpecError, blank_ok: bool = False) -> tuple[str, ...]:
    """A list of texts (each checked by :func:`check_text` as ``where[i]``); at most
    ``LIMITS[count]`` of them."""
    if isinstance(values, (str, bytes, bytearray, dict)) or not hasattr(values, "__iter__"):
        raise error(f"{where} must be a list of texts, not {_kind(values)} {values!r:.60}")
    out = tuple(check_text(v, f"{where}[{i}]", limit=limit, error=error, blank_ok=blank_ok) for i, v in enumerate(values))
    if count is not None and len(out) > LIMITS[count]:
        raise error(f"{where} has {len(out):,} entries, over the limit of {LIMITS[count]:,} ({count}, docs/trust.md)")
    return out


def check_flag(value: Any, where: str, *, error: type[Error] = SpecError) -> bool:
    """A yes/no option: ``True`` or ``False`` only (never 0, 1 or "false")."""
    if not isinstance(value, bool):
        raise error(f"{where} must be true or false, not {value!r:.60}")
    return value


# ---- prompts -------------------------------------------------------------------------------------
def check_prompt_ids(value: Any, where: str, *, vocab_size: int | None = None, error: type[Error] = DecodeError) -> list[int]:
    """Token ids of a prompt: a list (or tuple, or 1-D integer array) of ints in ``[0,
    vocab_size)``. A str, float (also 2.0), NaN, inf or bool item is refused, never truncated;
    ``bytes`` is refused as a whole (it is not a list of token ids)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise error(f"{where} is bytes: decode it to text (prompt.decode('utf-8')) or pass a list of token ids")
    if isinstance(value, (str, dict, set, frozenset)) or not hasattr(value, "__iter__"):
        raise error(f"{where} must be text or a list of token ids (ints), not {_kind(value)} {value!r:.60}")
    shape = getattr(value, "shape", None)
    if shape is not None and len(shape) != 1:
        raise error(f"{where} must be a flat list of token ids, not an array of shape {tuple(shape)}")
    out = []
    for i, t in enumerate(value):
        if isinstance(t, bool) or not hasattr(t, "__index__"):
            bad = "NaN" if isinstance(t, float) and math.isnan(t) else repr(t)[:40]
            raise error(f"{where}: item {i} is {_kind(t)} {bad}, not a token id: pass ints (int(x) if they are whole numbers)")
        t = int(t.__index__())
        if t < 0 or (vocab_size is not None and t >= vocab_size):
            rng = f"[0, {vocab_size})" if vocab_size is not None else "0 or more"
            raise error(f"{where}: token id {t} (item {i}) is outside the model's vocabulary ({rng}): encode the prompt with this "
                        "model's tokenizer")
        out.append(t)
    return out


def check_prompt(value: Any, where: str, *, vocab_size: int | None = None, error: type[Error] = DecodeError) -> str | list[int]:
    """One prompt: text (valid Unicode: no lone surrogate) or token ids (:func:`check_prompt_ids`).
    An empty prompt is left to the decoder (it flags that input alone)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise error(f"{where} is not valid Unicode text (a lone surrogate {value[exc.start]!r} at character "
                        f"{exc.start}): pass UTF-8 text") from None
        return value
    return check_prompt_ids(value, where, vocab_size=vocab_size, error=error)


def check_prompts(value: Any, where: str = "prompts", *, error: type[Error] = DecodeError) -> list[Any]:
    """The prompt list of one call: a str (one prompt) or an iterable of prompts (each checked
    later, per input). ``bytes``, a number or ``None`` is refused for the whole call."""
    if isinstance(value, str):
        return [value]
    if value is None or isinstance(value, (bytes, bytearray, memoryview, dict)) or not hasattr(value, "__iter__"):
        raise error(f"{where} must be a list of prompts (texts or token id lists), not {_kind(value)} {value!r:.60}")
    return list(value)


def check_prompt_format(value: Any, where: str = "prompt_format", *, error: type[Error] = DecodeError) -> str:
    """One of `PROMPT_FORMATS` or a template holding ``{prompt}``: the one check of a prompt format
    (the API, the commands' ``--format``, the server)."""
    if not isinstance(value, str):
        raise error(f"{where} must be one of {', '.join(PROMPT_FORMATS)} or a template with {{prompt}}, not {value!r:.60}")
    check_text(value, where, error=error)
    if value not in PROMPT_FORMATS and "{prompt}" not in value:
        raise error(f"{where} {value!r:.60} is none of {', '.join(PROMPT_FORMATS)} and holds no {{prompt}}: use one "
                    "of those, or a template with {prompt} where the prompt goes, e.g. 'Question: {prompt}\\nAnswer:'")
    return value


def check_cefr(value: Any, where: str = "cefr", *, error: type[Error] = SpecError) -> str:
    """A CEFR level (any case, surrounding spaces ignored), returned upper-case."""
    if not isinstance(value, str):
        raise error(f"{where} must be a CEFR level ({', '.join(CEFR_LEVELS)}), not {value!r:.60}")
    norm = check_text(value, where, error=error).strip().upper()
    if norm not in CEFR_LEVELS:
        raise error(f"{where}: unknown CEFR level {value!r:.20}: use one of {', '.join(CEFR_LEVELS)}")
    return norm


# ---- paths ---------------------------------------------------------------------------------------
def _fspath(value: Any, where: str, error: type[Error]) -> str:
    if isinstance(value, (bytes, bytearray)) or not isinstance(value, (str, os.PathLike)):
        raise error(f"{where} must be a file path (str or pathlib.Path), not {_kind(value)} {value!r:.60}")
    path = os.fspath(value)
    if not isinstance(path, str) or not path:
        raise error(f"{where} is an empty path: give a file name")
    if "\x00" in path:
        raise error(f"{where} {path!r:.80} contains a NUL byte, which no file name can hold: check the path")
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise error(f"{where} {path!r:.80} is not a valid file name (a lone surrogate): check the path") from None
    return path


def check_path(value: Any, where: str, *, allow_pipe: bool = False, error: type[Error] = InputError) -> str:
    """A file to read: it exists and is a regular file (or, with ``allow_pipe``, a pipe such as
    ``<(grep ...)``); never a directory, device or socket (``/dev/zero`` would be read forever)."""
    path = _fspath(value, where, error)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{where} {path} does not exist: check the path") from None
    except OSError as exc:
        raise error(f"{where} {path} cannot be read ({exc.strerror or exc}): check the path and its permissions") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{where} {path} is a directory: give a file")
    if not (stat.S_ISREG(st.st_mode) or (allow_pipe and stat.S_ISFIFO(st.st_mode))):
        raise error(f"{where} {path} is not a regular file (a device, FIFO or socket): give a regular file")
    return path


def check_output_path(value: Any, where: str, *, error: type[Error] = InputError) -> str:
    """A file to write (replaced by rename): absent, or a regular file. A FIFO, a device node
    (``/dev/full``), a socket or a directory is refused, also behind a symlink: writing would
    replace the node itself."""
    path = _fspath(value, where, error)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise error(f"{where} {path} cannot be used ({exc.strerror or exc}): choose another output path") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"cannot write {where} {path}: it is a directory; give a file name inside it")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"cannot write {where} {path}: it exists and is not a regular file (a device, FIFO or socket); "
                    "fstbeam only writes new files or replaces regular ones: choose another output path")
    return path


# ---- devices and models --------------------------------------------------------------------------
def check_device(value: Any, where: str = "device", *, error: type[Error] = InputError) -> Any:
    """A torch device that exists here: ``"auto"`` / ``None`` (CUDA if available, else CPU),
    ``"cpu"``, ``"cuda"``, ``"cuda:N"`` (N below the number of GPUs), ``"mps"``, or a
    ``torch.device``. Checked before any model is loaded."""
    import torch

    if value is None or value == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(value, (str, torch.device)):
        raise error(f"{where} must be 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device, not {_kind(value)} {value!r:.60}")
    try:
        dev = torch.device(value)
    except (RuntimeError, ValueError, TypeError):
        raise error(f"{where} {value!r:.60} is not a device: use 'auto', 'cpu', 'cuda' or 'cuda:N'") from None
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise error(f"{where} {value!r} asks for CUDA, and this machine has no usable CUDA GPU: use 'cpu' or 'auto'")
        if dev.index is not None and dev.index >= n:
            raise error(f"{where} {value!r}: this machine has {n} CUDA GPU{'s' if n > 1 else ''} (cuda:0"
                        f"{f'..cuda:{n - 1}' if n > 1 else ''}): pick one of them, or 'auto'")
        return dev
    if dev.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise error(f"{where} {value!r}: Apple MPS is not available here: use 'cpu' or 'auto'")
        return dev
    raise error(f"{where} {value!r}: fstbeam runs on 'cpu', 'cuda' or 'mps', not {dev.type!r}")


def check_model_path(value: Any, where: str = "model", *, error: type[Error] = InputError) -> str:
    """A model to load by name: a local folder with a ``config.json`` (a Hugging Face model
    folder), or the id of a model already in the local Hugging Face cache (nothing is
    downloaded). A missing path or a folder holding only a tokenizer is refused, naming it."""
    path = _fspath(value, where, error)
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "config.json")):
            has_tok = any(os.path.exists(os.path.join(path, f)) for f in ("tokenizer.json", "tokenizer_config.json"))
            what = "a tokenizer but no model" if has_tok else "no config.json"
            raise error(f"{where} {path} holds {what}: give a Hugging Face model folder (config.json and the "
                        "weights), or leave the model out for the default model")
        return path
    if os.path.exists(path):
        raise error(f"{where} {path} is a file: give the model's folder (with config.json), not a file in it")
    if _in_hf_cache(path):
        return path
    raise error(f"{where} {path}: no such folder, and no model of that name in the local Hugging Face cache "
                "(nothing is downloaded): give a model folder, or leave the model out for the default model")


def check_tokenizer_path(value: Any, where: str = "tokenizer", *, error: type[Error] | None = None) -> str:
    """A tokenizer to load by name: an existing folder or file, or an id in the local Hugging
    Face cache (nothing is downloaded)."""
    from .errors import TokenizerError

    error = error or TokenizerError
    path = _fspath(value, where, error)
    if os.path.exists(path) or _in_hf_cache(path, "tokenizer_config.json") or _in_hf_cache(path, "tokenizer.json"):
        return path
    raise error(f"{where} {path}: no such folder or file, and no tokenizer of that name in the local Hugging Face "
                "cache (nothing is downloaded): give the folder with tokenizer.json")


def _in_hf_cache(name: str, filename: str = "config.json") -> bool:
    """Whether ``name`` (an ``org/model`` id) has ``filename`` in the local Hugging Face cache."""
    if name.count("/") > 1 or name.startswith((".", "/", "~")):
        return False
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(name, filename)
    except Exception:  # noqa: BLE001 - an invalid repo id is simply not in the cache
        return False
    return isinstance(hit, str)
