"""Reading linguists' and users' text files: one UTF-8 decoder with one error message."""
from __future__ import annotations

import os


def decode_utf8(raw: bytes, path: str | os.PathLike, error: type[Exception]) -> str:
    """``raw`` as text, or ``error`` naming the file, the bad byte, its offset and line."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(
            f"{path} is not UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start} "
            f"(line {line}); re-save the file as UTF-8"
        ) from None
