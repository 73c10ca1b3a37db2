"""A deterministic character automaton as flat numpy arrays (the form the lifter walks)."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pynini

from ..errors import SpecError
from ..fst.text import IS_WORD_BYTE


@dataclass(frozen=True, eq=False)
class CharDFA:
    next: np.ndarray  # int32 [S, 256]; -1 where there is no transition (byte 0 never has one)
    final: np.ndarray  # bool [S]
    start: int

    @property
    def num_states(self) -> int:
        return len(self.final)

    @cached_property
    def boundary_states(self) -> np.ndarray:
        """bool [S]: the start, and every state entered right after a non-word byte
        (`fstbeam.fst.text`) -- where a word-boundary phrase may begin."""
        out = np.zeros(self.num_states, bool)
        out[self.start] = True
        into = self.next[:, ~IS_WORD_BYTE]
        out[into[into >= 0]] = True
        return out

    @cached_property
    def leaves_on_nonword(self) -> np.ndarray:
        """bool [S]: the state has a transition on some non-word byte."""
        return (self.next[:, ~IS_WORD_BYTE] >= 0).any(axis=1)

    def run(self, data: bytes, state: int | None = None) -> int:
        """State after reading ``data`` (-1 if it dies)."""
        q = self.start if state is None else state
        for b in data:
            if q < 0:
                return -1
            q = int(self.next[q, b])
        return q

    def accepts(self, data: bytes) -> bool:
        q = self.run(data)
        return q >= 0 and bool(self.final[q])


def fst_to_dfa(fst: pynini.Fst) -> CharDFA:
    """Flatten a deterministic, epsilon-free acceptor over byte labels (1..255)."""
    if fst.start() == pynini.NO_STATE_ID or fst.num_states() == 0:
        return CharDFA(np.full((1, 256), -1, np.int32), np.zeros(1, bool), 0)
    n = fst.num_states()
    nxt = np.full((n, 256), -1, dtype=np.int32)
    final = np.zeros(n, dtype=bool)
    zero = pynini.Weight.zero(fst.weight_type())
    for s in fst.states():
        final[s] = fst.final(s) != zero
        for arc in fst.arcs(s):
            if not 1 <= arc.ilabel <= 255:
                raise SpecError(f"automaton has label {arc.ilabel} on state {s}: character automata use byte labels 1..255")
            if nxt[s, arc.ilabel] != -1:
                raise SpecError(f"automaton is not deterministic at state {s}, byte {arc.ilabel:#04x}: optimize it first")
            nxt[s, arc.ilabel] = arc.nextstate
    return CharDFA(nxt, final, fst.start())


def fst_bytes_to_dfa(data: bytes) -> CharDFA | None:
    """`fst_to_dfa` of an acceptor in OpenFst's binary VectorFst form (``fst.write_to_string()``),
    read with numpy instead of one Python step per arc (65 ms of a JSON Schema's compile); None
    where the bytes are not a plain tropical VectorFst (symbol tables, another type): use
    `fst_to_dfa` then. The same errors for labels outside 1..255 and non-determinism."""
    arcs = fst_bytes_to_arcs(data)
    if arcs is None:
        return None
    table = np.full((arcs.num_states, 256), -1, dtype=np.int32)
    table[arcs.src, arcs.byte] = arcs.dst
    return CharDFA(table, arcs.final, arcs.start)


@dataclass(frozen=True, eq=False)
class ByteArcs:
    """A character DFA as its arcs, sorted by (state, byte): the arcs of `CharDFA.next` (its
    ``np.nonzero`` order), without the [S, 256] table (115 MB at 112,000 states)."""

    num_states: int
    start: int
    final: np.ndarray  # bool [S]
    src: np.ndarray  # int64 [A]
    byte: np.ndarray  # int64 [A]
    dst: np.ndarray  # int64 [A]


def fst_bytes_to_arcs(data: bytes) -> ByteArcs | None:
    """The arcs of `fst_bytes_to_dfa` (the same None and errors), read without its table."""
    try:
        fields = vector_header(data)
    except (ValueError, struct.error):
        return None
    if fields is None:
        return None
    start, n, at = fields
    e = np.zeros(0, np.int64)
    if n == 0 or start < 0:
        return ByteArcs(1, 0, np.zeros(1, bool), e, e, e)
    words = np.frombuffer(data, "<i4", offset=at) if (len(data) - at) % 4 == 0 else None
    records = state_records(words, n) if words is not None else None
    if records is None:
        return None
    head, counts = records
    n_arcs = int(counts.sum())  # (the header's count is not always filled in)
    final = words[head].view("<f4") != np.float32(np.inf)
    src = np.repeat(np.arange(n), counts)
    # each arc's first word: its record's first arc, plus 4 words per arc before it in the record
    arc_at = np.arange(n_arcs, dtype=np.int64)
    arc_at *= 4
    arc_at += np.repeat(head + 3 - 4 * (np.cumsum(counts) - counts), counts)
    label = words[arc_at].astype(np.int64)
    arc_at += 3
    nxt = words[arc_at].astype(np.int64)
    del arc_at
    bad = np.flatnonzero((label < 1) | (label > 255))
    if len(bad):
        i = int(bad[0])
        raise SpecError(f"automaton has label {label[i]} on state {src[i]}: character automata use byte labels 1..255")
    key = src * 256 + label
    if len(key) > 1 and not (key[1:] > key[:-1]).all():  # (an optimized automaton's arcs come sorted)
        o = np.argsort(key, kind="stable")
        key, src, label, nxt = key[o], src[o], label[o], nxt[o]
        dup = np.flatnonzero(key[1:] == key[:-1])
        if len(dup):  # two arcs of one state on one byte
            i = int(dup[0])
            raise SpecError(f"automaton is not deterministic at state {src[i]}, byte {label[i]:#04x}: optimize it first")
    return ByteArcs(n, start, final, src, label, nxt)


_SCAN_WORDS = 1 << 22


def state_records(words: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(word offset, arc count) of each of the ``n`` state records of a VectorFst body (32-bit
    words), without a Python step per state; None where the words are not ``n`` records.

    A record is a head (final weight, then the arc count as an int64: 3 words) and 4 words per
    arc (ilabel, olabel, weight, next state), so where record q starts depends on every count
    before it. Every offset shaped like a head (the count's high word 0; not the start of an
    acceptor's arc, whose two labels are equal and nonzero) points at where the next record would
    start; the records are the chain of those pointers from offset 0, found by pointer doubling
    (log2 n gathers), and it must reach the end of the body in exactly ``n`` steps. A true head
    left out by the shape test (a weight whose bits equal its count) breaks the chain: None."""
    u = words.view("<u4")
    size = len(u)
    if size < 3:
        return None
    # (a few million words at a time: the tests' temporaries over the whole body were 4 bytes
    # a word, 270 MB beside a 270 MB body on o38403's oneOf)
    parts = []
    for i in range(0, size - 2, _SCAN_WORDS):
        j = min(size - 2, i + _SCAN_WORDS)
        lo, mid = u[i:j], u[i + 1:j + 1]
        parts.append(i + np.flatnonzero((u[i + 2:j + 2] == 0) & ((lo != mid) | (lo == 0))))
    at = np.concatenate(parts)
    if not len(at) or at[0] != 0:
        return None
    count = u[at + 1].astype(np.int64)
    to = at + 3 + 4 * count
    c = len(at)
    end, bad = c, c + 1  # two extra nodes that point at themselves: the body's end, a broken chain
    idx = np.searchsorted(at, to)
    hit = at[np.minimum(idx, c - 1)] == to
    jump = np.concatenate([np.where(to == size, end, np.where(hit, idx, bad)), [end, bad]])
    # after step k, ``chain`` is the first 2**k nodes from offset 0 in order and ``jump`` goes
    # 2**k nodes ahead, so the next 2**k are one gather away
    chain = np.zeros(1, np.int64)
    for _ in range(int(n).bit_length()):  # 2**steps > n
        if chain[-1] >= end:  # reached the end (or broke): it stays there
            break
        chain = np.concatenate([chain, jump[chain]])
        jump = jump[jump]
    stop = int(np.argmax(chain >= end))
    if stop != n or chain[stop] != end:
        return None
    return at[chain[:n]], count[chain[:n]]


def vector_header(data: bytes) -> tuple[int, int, int] | None:
    """(start, states, body offset) of a binary tropical VectorFst without symbol tables."""
    at = 0

    def string() -> str:
        nonlocal at
        (k,) = struct.unpack_from("<i", data, at)
        text = data[at + 4:at + 4 + k].decode()
        at += 4 + k
        return text

    (magic,) = struct.unpack_from("<i", data, 0)
    at = 4
    if magic != 2125659606 or string() != "vector" or string() != "standard":
        return None
    version, flags, _props, start, n, _arcs = struct.unpack_from("<iiQqqq", data, at)
    at += struct.calcsize("<iiQqqq")
    if version != 2 or flags & 3:  # symbol tables follow the header: not read here
        return None
    return start, n, at


def arcs_to_dfa(final: np.ndarray, src: np.ndarray, byte: np.ndarray, dst: np.ndarray, start: int) -> CharDFA:
    """A DFA given as arc arrays, flattened."""
    nxt = np.full((len(final), 256), -1, dtype=np.int32)
    nxt[src, byte] = dst
    return CharDFA(nxt, np.asarray(final, bool).copy(), int(start))


def text_to_dfa(text) -> CharDFA:
    """Flatten a `fstbeam.fst.wordlist.text_dfa.TextDFA` (arc arrays, start 0)."""
    return arcs_to_dfa(text.final, text.src, text.byte, text.dst, 0)
