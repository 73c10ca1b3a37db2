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
    sizes = 12 + 16 * counts
    offsets = np.zeros(num_states, np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    body = np.zeros(int(sizes.sum()), np.uint8)
    fw = np.where(np.asarray(final, bool), 0.0, np.inf).astype("<f4").view(np.uint8).reshape(-1, 4)
    body[offsets[:, None] + np.arange(4)] = fw
    body[offsets[:, None] + 4 + np.arange(8)] = counts.astype("<i8").view(np.uint8).reshape(-1, 8)
    arcs = np.zeros(len(arc_state), _ARC)
    arcs["ilabel"] = arc_label
    arcs["olabel"] = arc_label
    arcs["next"] = arc_next
    first_arc = np.zeros(num_states, np.int64)
    np.cumsum(counts[:-1], out=first_arc[1:])
    j = np.arange(len(arc_state)) - first_arc[arc_state]
    pos = offsets[arc_state] + 12 + 16 * j
    body[pos[:, None] + np.arange(16)] = arcs.view(np.uint8).reshape(-1, 16)
    return header + body.tobytes()
