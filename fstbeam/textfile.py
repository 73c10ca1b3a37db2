"""Reading linguists' and users' text files: one UTF-8 decoder with one error message."""
from __future__ import annotations

import os
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


def read_utf8(path: str | os.PathLike, error: type[Exception], *, what: str, expect: str) -> str:
    """Text of the file at ``path``. A missing file, a directory or bad UTF-8 raises ``error``
    naming ``what`` (e.g. "word list"), the path and ``expect`` (what to give instead)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist: {expect}") from None
    except IsADirectoryError:
        raise error(f"{what} {path} is a directory: {expect}") from None
    except OSError as exc:
        raise error(f"{what} {path} cannot be read ({exc.strerror or exc}): {expect}") from None
    return decode_utf8(raw, f"{what} {path}", error)
