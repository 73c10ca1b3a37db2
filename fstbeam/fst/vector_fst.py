"""Write an acceptor straight into OpenFst's binary VectorFst format with numpy.

Adding millions of arcs through pynini's Python API costs seconds; the binary layout is simple
(header, then per state: final weight, arc count, arcs), so large automata are written in one
vectorized pass and can still be read by ``pynini.Fst.read`` and the OpenFst command-line tools.
Tropical weights: 0.0 is "one" (final / free arc), +inf is "zero" (not final).
"""
from __future__ import annotations

import struct

import numpy as np

_MAGIC = 2125659606
_VECTOR_VERSION = 2
_PROPS_EXPANDED_MUTABLE = 0x3  # only kExpanded | kMutable asserted; the rest left unknown
_ARC = np.dtype([("ilabel", "<i4"), ("olabel", "<i4"), ("weight", "<f4"), ("next", "<i4")])


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<i", len(b)) + b


def vector_fst_bytes(
    num_states: int, start: int, final: np.ndarray, arc_state: np.ndarray, arc_label: np.ndarray, arc_next: np.ndarray
) -> bytes:
    """Serialize an unweighted acceptor. Arcs must be sorted by ``arc_state``; label 0 is epsilon."""
    arc_state = np.asarray(arc_state, np.int64)
    counts = np.bincount(arc_state, minlength=num_states).astype(np.int64)
    header = (
        struct.pack("<i", _MAGIC) + _string("vector") + _string("standard")
        + struct.pack("<iiQqqq", _VECTOR_VERSION, 0, _PROPS_EXPANDED_MUTABLE, start, num_states, len(arc_state))
    )
    # Every field is 4 or 8 bytes and every record a multiple of 4: scatter 32-bit words.
    words = 3 + 4 * counts  # per state: final weight, arc count (2 words), 4 words per arc
    offsets = np.zeros(num_states, np.int64)
    np.cumsum(words[:-1], out=offsets[1:])
    body = np.zeros(int(words.sum()), "<i4")
    body[offsets] = np.where(np.asarray(final, bool), 0.0, np.inf).astype("<f4").view("<i4")
    body[offsets + 1] = counts.astype("<i8").view("<i4")[0::2]
    body[offsets + 2] = counts.astype("<i8").view("<i4")[1::2]
    first_arc = np.cumsum(counts) - counts
    pos = offsets[arc_state] + 3 + 4 * (np.arange(len(arc_state)) - first_arc[arc_state])
    body[pos] = arc_label
    body[pos + 1] = arc_label
    body[pos + 3] = arc_next  # weight word (pos + 2) stays 0.0: a free arc
    return header + body.tobytes()
