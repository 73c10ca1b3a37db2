"""Reading linguists' and users' text files: one UTF-8 decoder with one error message."""
from __future__ import annotations

import os
import stat
from pathlib import Path


def decode_utf8(raw: bytes, path: str | os.PathLike, error: type[Exception]) -> str:
    """``raw`` as text, or ``error`` naming the file, the bad byte, its offset and line.
    A leading UTF-8 byte-order mark (Windows editors write one) is dropped, not read as text."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(
            f"{path} is not UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start} "
            f"(line {line}); re-save the file as UTF-8"
        ) from None


#: Largest text file read (a million-word list is ~10 MB; Gemma's tokenizer.json 33 MB).
MAX_TEXT_BYTES = 1 << 30


def read_bytes(path: str | os.PathLike, error: type[Exception], *, what: str, expect: str,
               limit: int = MAX_TEXT_BYTES) -> bytes:
    """Bytes of the file at ``path``: a regular file or a pipe (``<(...)``), never a device or
    socket (``/dev/zero`` would be read until memory runs out), at most ``limit`` bytes. Every
    failure raises ``error`` naming ``what``, the path and ``expect``."""
    path = Path(path)
    if "\x00" in str(path):  # os.stat would raise a bare ValueError
        raise error(f"{what} {str(path)!r:.80} contains a NUL byte, which no file name can hold: {expect}")
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{what} {path} is a directory: {expect}")
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise error(f"{what} {path} is a device or socket, not a file: {expect}")
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist: {expect}") from None
    except IsADirectoryError:
        raise error(f"{what} {path} is a directory: {expect}") from None
    except OSError as exc:
        raise error(f"{what} {path} cannot be read ({exc.strerror or exc}): {expect}") from None
    if len(raw) > limit:
        raise error(f"{what} {path} is larger than {limit:,} bytes: {expect}")
    return raw


def read_utf8(path: str | os.PathLike, error: type[Exception], *, what: str, expect: str) -> str:
    """Text of the file at ``path``. A missing file, a directory, a device, an oversized file or
    bad UTF-8 raises ``error`` naming ``what`` (e.g. "word list"), the path and ``expect``."""
    raw = read_bytes(path, error, what=what, expect=expect)
    return decode_utf8(raw, f"{what} {Path(path)}", error)
