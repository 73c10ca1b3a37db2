"""Write an acceptor straight into OpenFst's binary VectorFst format with numpy.

Adding millions of arcs through pynini's Python API costs seconds; the binary layout is simple
(header, then per state: final weight, arc count, arcs), so large automata are written in one
vectorized pass and can still be read by ``pynini.Fst.read`` and the OpenFst command-line tools.
Tropical weights: 0.0 is "one" (final / free arc), +inf is "zero" (not final).
"""
from __future__ import annotations

import os
import struct
import tempfile
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pynini

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
    counts = np.bincount(np.asarray(arc_state, np.int64), minlength=num_states)
    return vector_fst_bytes_by_count(num_states, start, final, counts, [(arc_label, arc_next)])


def vector_fst_bytes_by_count(num_states: int, start: int, final: np.ndarray, counts: np.ndarray, parts) -> bytes:
    """`vector_fst_bytes` with the arcs given as ``counts`` (arcs per state, in state order) and
    ``parts``, a list of (labels, next states) whose concatenation is every arc in state order
    (a label may be a scalar): large automata skip building a per-arc state array."""
    counts = np.asarray(counts, np.int64)
    n_arcs = int(counts.sum())
    header = (
        struct.pack("<i", _MAGIC) + _string("vector") + _string("standard")
        + struct.pack("<iiQqqq", _VECTOR_VERSION, 0, _PROPS_EXPANDED_MUTABLE, start, num_states, n_arcs)
    )
    # Every field is 4 or 8 bytes and every record a multiple of 4: 32-bit words. Per state: a
    # 3-word head (final weight, arc count as int64), then its arcs, 4 words each. Heads and arcs
    # are filled as dense [S, 3] / [A, 4] arrays and merged with one boolean mask, which writes
    # the body in order (scattering each field through an index array was 4x slower at 15M arcs);
    # a slice of states at a time, joined once: whole, the arrays, the mask, the body and its
    # bytes were five copies of a large automaton (a JSON Schema's 6M arcs: 90 MB each)
    given = sum(len(nx) for _, nx in parts)
    if given != n_arcs:
        raise ValueError(f"vector_fst_bytes: {given} arcs given, the counts say {n_arcs}")
    final = np.asarray(final, bool)
    arc_ptr = np.zeros(num_states + 1, np.int64)
    np.cumsum(counts, out=arc_ptr[1:])
    arcs = _ArcReader(parts)
    pieces = [header]
    s0 = 0
    while s0 < num_states:  # slices of about `_SLICE_ARCS` arcs (and at least one state)
        s1 = max(s0 + 1, int(np.searchsorted(arc_ptr, arc_ptr[s0] + _SLICE_ARCS, side="right")) - 1)
        s1 = min(s1, num_states)
        pieces.append(_body(final[s0:s1], counts[s0:s1], *arcs.take(int(arc_ptr[s1] - arc_ptr[s0]))))
        s0 = s1
    return b"".join(pieces)


_SLICE_ARCS = 1 << 20


class _ArcReader:
    """The arcs of ``parts`` (labels, next states) read on in order, ``n`` at a time."""

    def __init__(self, parts) -> None:
        self.parts, self.k, self.at = list(parts), 0, 0

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        labels, nexts = [], []
        while n:
            label, nxt = self.parts[self.k]
            m = min(n, len(nxt) - self.at)
            lb = np.asarray(label)
            labels.append(np.broadcast_to(lb, m) if lb.ndim == 0 else lb[self.at:self.at + m])
            nexts.append(np.asarray(nxt[self.at:self.at + m]))
            n -= m
            self.at += m
            if self.at == len(nxt):
                self.k, self.at = self.k + 1, 0
        if len(labels) == 1:
            return labels[0], nexts[0]
        return (np.concatenate(labels) if labels else np.zeros(0, np.int64),
                np.concatenate(nexts) if nexts else np.zeros(0, np.int64))


def _body(final: np.ndarray, counts: np.ndarray, label: np.ndarray, nxt: np.ndarray) -> bytes:
    """The state records of a slice of states (their arcs given in order)."""
    heads = np.empty((len(final), 3), "<i4")
    heads[:, 0] = np.where(final, 0.0, np.inf).astype("<f4").view("<i4")
    heads[:, 1:] = counts.astype("<i8").view("<i4").reshape(len(final), 2)
    arcs = np.zeros((len(nxt), 4), "<i4")  # the weight word (2) stays 0.0: a free arc
    arcs[:, 0] = label
    arcs[:, 1] = label
    arcs[:, 3] = nxt
    words = 3 + 4 * counts
    is_head = np.zeros(int(words.sum()), bool)
    head_at = np.cumsum(words) - words
    for k in range(3):
        is_head[head_at + k] = True
    body = np.empty(len(is_head), "<i4")
    body[is_head] = heads.ravel()
    body[~is_head] = arcs.ravel()
    return body.tobytes()


#: automata of at least this many states are written through a temporary file (`openfst_bytes`)
FILE_WRITE_STATES = 50_000


def openfst_bytes(fst: pynini.Fst | list[pynini.Fst]) -> bytes:
    """The OpenFst binary form of ``fst`` (the bytes ``fst.write`` puts in a file). A large one
    is written to a temporary file and read back: ``write_to_string`` holds the automaton, a
    string buffer grown by doubling and its copy at once (260 MB over o21192's document, 775 MB
    over o38403's `oneOf` determinization). Given as ``[fst]``, the automaton is taken out of
    the list and let go once written (where the caller holds no other reference)."""
    box = fst if isinstance(fst, list) else [fst]
    f: pynini.Fst | None = box.pop()
    assert f is not None
    if f.num_states() < FILE_WRITE_STATES:  # (a small one: a temporary directory costs more than its buffer)
        return f.write_to_string()
    try:
        with tempfile.TemporaryDirectory(prefix="fstbeam-") as tmp:
            path = os.path.join(tmp, "fst.bin")
            f.write(path)
            if isinstance(fst, list):
                f = None
            with open(path, "rb") as fh:
                return fh.read()
    except OSError:  # (pynini's FstIOError is one: no temporary file here)
        if f is None:  # written, but not read back: nothing left to write again
            raise
        return f.write_to_string()
