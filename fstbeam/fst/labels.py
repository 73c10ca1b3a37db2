"""The one place that owns label conventions.

OpenFst reserves label 0 for epsilon, so
- character automata use byte labels 1..255 (byte value == label; byte 0x00 cannot be spelled);
- token automata use label ``token_id + 1``.
Nobody else hard-codes these offsets.
"""
from __future__ import annotations

EPSILON = 0
MIN_BYTE_LABEL = 1
MAX_BYTE_LABEL = 255
TOKEN_LABEL_OFFSET = 1


def byte_to_label(b: int) -> int:
    if not 1 <= b <= 255:
        raise ValueError(f"byte {b:#04x} has no label: OpenFst reserves 0 for epsilon")
    return b


def token_to_label(token_id: int) -> int:
    return token_id + TOKEN_LABEL_OFFSET


def label_to_token(label: int) -> int:
    if label < TOKEN_LABEL_OFFSET:
        raise ValueError(f"label {label} is epsilon, not a token")
    return label - TOKEN_LABEL_OFFSET
