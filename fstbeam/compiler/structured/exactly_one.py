"""The texts that exactly one of several byte DFAs accepts (JSON Schema's ``oneOf``), in one
determinization.

Each DFA's final states get an arc on a marker label of its own (``MARKER + i``) to a new final
state, instead of being final. The union of the marked DFAs, determinized, reaches after a text
the tuple of the DFAs' states; the markers leaving that state say which DFAs accept the text.
A state is final in the result iff exactly one marker leaves it; the markers are then dropped
(counted with numpy over OpenFst's binary form, `char_dfa`'s reader).

The pairwise way (the union minus the union of every pair's product) determinized the pairs'
products, their union, and later the union beside that difference: o63308's GeoJSON ``oneOf`` of
9 was 87,000 states of overlaps and a 244,000-state document before minimization.
"""
from __future__ import annotations

import numpy as np
import pynini

from ...fst.vector_fst import openfst_bytes
from ..char_dfa import state_records, vector_header

# Marker labels: above every label of the inputs (bytes 1..255, and the member marks from 256 up
# of `containers`, which a branch still holds inside its objects).
MARKER = 1 << 30


def exactly_one(dfas: list[pynini.Fst], max_states: int | None = None) -> pynini.Fst:
    """An epsilon-free deterministic acceptor (not minimized, arcs sorted by label) of the texts
    that exactly one of ``dfas`` (deterministic byte acceptors) accepts. ``max_states``: past it
    the markers are not counted (the result then has more states: the caller's check)."""
    marked = []
    for i, d in enumerate(dfas):
        if d.start() < 0:  # (an empty language: no start state, which a union would lose all to)
            continue
        m = d.copy()
        zero = pynini.Weight.zero(m.weight_type())  # type: ignore[attr-defined]
        end = m.add_state()
        for s in range(end):
            if m.final(s) != zero:
                m.set_final(s, zero)
                one = pynini.Weight.one(m.weight_type())  # type: ignore[attr-defined]
                m.add_arc(s, pynini.Arc(MARKER + i, MARKER + i, one, end))  # type: ignore[attr-defined]
        m.set_final(end)
        marked.append(m)
    if not marked:
        return pynini.Fst()
    both = pynini.union(*marked).rmepsilon()
    del marked
    det = pynini.determinize(both)  # (OpenFst's ``nstate`` prunes the whole result: no sooner, and slower)
    del both
    if max_states is not None and det.num_states() > max_states:
        return det
    return _count_markers(det, len(dfas))


def _count_markers(det: pynini.Fst, n_markers: int) -> pynini.Fst:
    """``det`` (changed in place) with a state final iff exactly one marker arc leaves it, the
    markers dropped (the last arcs of each state once sorted by label), trimmed. Its final
    states are those right after a marker: left unreachable, so trimmed."""
    det.arcsort("ilabel")
    marks = _markers_per_state(det, n_markers)
    if marks is None:  # (not a plain VectorFst: one Python step per arc)
        marks = np.array([sum(a.ilabel >= MARKER for a in det.arcs(s)) for s in det.states()], np.int64)
    one = pynini.Weight.one(det.weight_type())  # type: ignore[attr-defined]
    for s in np.flatnonzero(marks).tolist():
        det.delete_arcs(s, int(marks[s]))
    for s in np.flatnonzero(marks == 1).tolist():
        det.set_final(s, one)
    return det.connect()  # type: ignore[no-any-return]


def _markers_per_state(det: pynini.Fst, n_markers: int) -> np.ndarray | None:
    """Marker arcs leaving each state, read from OpenFst's binary form with numpy (an arc is 4
    words: ilabel, olabel, weight, next state; ``det``'s arcs sorted by label; a large one's
    bytes through a temporary file: `openfst_bytes`)."""
    data = openfst_bytes(det)
    fields = vector_header(data)
    if fields is None or (len(data) - fields[2]) % 4:
        return None
    _, n, at = fields
    words = np.frombuffer(data, "<i4", offset=at)
    records = state_records(words, n)
    if records is None:
        return None
    head, count = records
    # arcs are sorted by label and the markers' are the largest: count each state's last arcs
    # while they are markers (the k-th from the end at word head + 3 + 4 * (count - k)), a
    # column per k, not a test of every word of the body
    marks = np.zeros(n, np.int64)
    states = np.arange(n)
    for k in range(1, n_markers + 1):
        states = states[count[states] >= k]
        label = words[head[states] + 3 + 4 * (count[states] - k)]
        states = states[(label >= MARKER) & (label < MARKER + n_markers)]
        if not len(states):
            break
        marks[states] += 1
    return marks
