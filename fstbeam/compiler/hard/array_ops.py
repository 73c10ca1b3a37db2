"""Array helpers of the lift and the tables: CSR pointers, packed sorts, concatenated ranges."""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

import numpy as np

try:  # glibc keeps freed heap pages of mid-sized arrays resident; `trim_heap` hands them back
    _MALLOC_TRIM = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
except (OSError, AttributeError):  # not glibc: nothing to do
    _MALLOC_TRIM = None


TRIM_ABOVE = 1 << 20  # `Parts.take` trims the heap after a search that collected more entries
TAKE_TRIM = 32 << 20  # `Parts.take` trims the heap each time it has copied (and freed) this many bytes of pieces


def trim_heap() -> None:
    """Give freed heap memory back to the system (glibc's ``malloc_trim``; elsewhere nothing):
    between the lift's phases, the pieces of a finished search (a few MB each) would otherwise
    stay resident under the next phase's arrays (about 300 MB on a 23 M-arc lift)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``, by one sort: numpy 2.3+ finds plain distinct values by hashing,
    some 50x slower on the lift's millions of distinct int64 keys (4.5 s against 0.08 s)."""
    s = np.sort(values, axis=None)
    if not len(s):
        return s
    keep = np.empty(len(s), bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


# Words sorted by timsort where most already stand in order (a lift's pairs come state by state:
# 4x faster than quicksort there); its buffer of half the words only below this many.
RUN_SORT_WORDS = 1 << 23


def sort_words(words: np.ndarray) -> None:
    """``words`` sorted in place: timsort (``kind="stable"``, linear on sorted runs) where fewer
    than a quarter of the neighbours are out of order, else numpy's default (on random words
    1.3x faster than timsort, and no buffer)."""
    if 1 < len(words) <= RUN_SORT_WORDS and 4 * np.count_nonzero(words[1:] < words[:-1]) < len(words):
        words.sort(kind="stable")
    else:
        words.sort()


def csr(keys: np.ndarray, n: int, chunk: int = 1 << 22) -> np.ndarray:
    """CSR pointers of ``keys`` in ``0..n-1``; counted a chunk at a time where the keys are
    many (`np.bincount` copies int32 keys to int64: a whole column of a lift's arcs)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    if len(keys) <= chunk:
        np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
        return ptr
    for i in range(0, len(keys), chunk):
        ptr[1:] += np.bincount(keys[i:i + chunk], minlength=n)
    np.cumsum(ptr, out=ptr)
    return ptr


def order_by(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """``np.lexsort((minor, major))`` for non-negative ints; one argsort of a packed key when
    both fit in 63 bits (a third of lexsort's time on millions of arcs), none when the pairs
    are already in order."""
    if not len(major):
        return np.zeros(0, np.int64)
    shift = int(minor.max()).bit_length()
    if shift + int(major.max()).bit_length() > 63:
        return np.lexsort((minor, major))
    key = (major.astype(np.int64) << shift) | minor
    if not (key[1:] < key[:-1]).any():
        return np.arange(len(key))
    return np.argsort(key, kind="stable")


def grouped(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(``values`` ordered by ``keys``, ties by value; CSR pointers over keys ``0..n-1``), for
    non-negative ints. One unstable sort of packed (key, value) words where they fit in 63 bits:
    5x faster than a stable argsort plus a gather at ten million entries."""
    return grouped_taken([keys, values], n, small=False)


def grouped_taken(box: list[np.ndarray], n: int, *, small: bool = True,
                  chunk: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """`grouped` of ``box = [keys, values]``, taken out of the list; ``small``: the values as
    int32 where they fit (`narrow`). The packed words are filled from the end while the columns
    are cut behind (`_cut`, where no one else holds them): a large lift's 34 million pairs
    held both columns and the words at once (16 bytes a pair, sp_137's peak), now 8 at most."""
    keys, values = box
    box.clear()
    ptr = csr(keys, n)
    if not len(keys):
        return np.zeros(0, np.int32 if small else np.int64), ptr
    shift = int(values.max()).bit_length()
    if shift + int(n).bit_length() > 63:
        out = values[np.lexsort((values, keys))].astype(np.int64)
        return (narrow(out) if small else out), ptr
    cols = [keys, values]
    del keys, values
    packed = _packed_taken(cols, (shift,), chunk)  # (sorted and unpacked in place: one word per entry)
    sort_words(packed)
    packed &= (1 << shift) - 1
    if small and shift <= 31:  # (every value fits int32: halved in place, not narrowed into a copy)
        box = [packed]
        del packed
        return _low_halves(box), ptr
    return packed, ptr


def sorted_triples(a: np.ndarray, b: np.ndarray, c: np.ndarray,
                   in_place: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, c)`` reordered by ``(a, b)`` (non-negative ints, pairs distinct); one sort of a
    packed word when all three fit in 63 bits, else a lexsort. The packed word is built and
    sorted in place and unpacked to int32 (a lift's tens of millions of token arcs: one int64
    word and three int32 columns, not four int64 copies); ``in_place``: into ``a, b, c``
    themselves (arrays the caller owns and no one else sees), returned."""
    if not len(a):
        return a, b, c
    sa, sb, sc = (int(x.max()).bit_length() for x in (a, b, c))
    if sa + sb + sc > 63:
        o = np.lexsort((b, a))
        return a[o], b[o], c[o]
    packed = a.astype(np.int64)
    packed <<= sb
    packed |= b
    packed <<= sc
    packed |= c
    sort_words(packed)
    if in_place:
        return (_unpack(packed, sb + sc, sa, a), _unpack(packed, sc, sb, b), _unpack(packed, 0, sc, c))
    return (_unpack(packed, sb + sc, sa), _unpack(packed, sc, sb), _unpack(packed, 0, sc))


def sorted_triples_csr(cols: list[np.ndarray], n: int, chunk: int = 1 << 22,
                       b_width: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(CSR pointers of ``a`` over ``0..n-1``, ``b``, ``c``) of the triples ``cols = [a, b, c]``
    sorted by ``(a, b)`` (as `sorted_triples`): the columns are taken out of the list (emptied).
    The packed words are filled from the end while the columns are cut behind (`_cut`), and
    ``b``, ``c`` unpacked from the end while the words are cut: a lift's tens of millions of
    arcs hold 12 bytes a triple at most, not the three columns and the word at once (20);
    ``a`` is never unpacked, only counted from the packed words. ``b_width`` (``b < b_width``):
    an ``a`` holding a quarter of all ``b`` values or more is ordered by scattering its triples
    over ``b`` (`_dense_sorted`) instead of sorting them."""
    if b_width and len(cols[0]) <= DENSE_SORT_TRIPLES:
        dense = _dense_sorted(cols, n, b_width)
        if dense is not None:
            return dense
    a, b, c = cols
    cols.clear()
    if not len(a):
        return csr(a, n), b, c
    sa, sb, sc = (int(x.max()).bit_length() for x in (a, b, c))
    if sa + sb + sc > 63:
        o = np.lexsort((b, a))
        return csr(a, n), b[o], c[o]
    m, b_type, c_type = len(a), b.dtype, c.dtype
    cols = [a, b, c]
    del a, b, c
    packed = _packed_taken(cols, (sb, sc), chunk)
    packed.sort()
    ptr = np.zeros(n + 1, np.int64)
    for i in range(0, m, chunk):
        ptr[1:] += np.bincount(packed[i:i + chunk] >> (sb + sc), minlength=n)
    np.cumsum(ptr, out=ptr)
    b_out, c_out = np.empty(m, b_type), np.empty(m, c_type)
    for lo in range((m - 1) // chunk * chunk, -1, -chunk):
        b_out[lo:lo + chunk] = (packed[lo:lo + chunk] >> sc) & ((1 << sb) - 1)
        c_out[lo:lo + chunk] = packed[lo:lo + chunk] & ((1 << sc) - 1)
        _cut(packed, lo)
    return ptr, b_out, c_out


# Triples at most for `_dense_sorted` (its columns are copied; a large lift's sort keeps to the
# packed words alone), and the share of all ``b`` values an ``a`` holds to be scattered.
DENSE_SORT_TRIPLES = 1 << 22
DENSE_SHARE = 4


def _dense_sorted(cols: list[np.ndarray], n: int, b_width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`sorted_triples_csr` where most triples belong to ``a`` values holding ``b_width /
    DENSE_SHARE`` distinct ``b`` or more (a string's state reads nearly every token: its ~250k
    arcs sorted took 11 ms of a 100 ms compile): those are scattered into a row per ``a`` and
    read back in ``b`` order, the rest sorted. None where it does not pay (the columns are left
    in ``cols``) or where a pair repeats."""
    a, b, c = cols
    count = np.bincount(a, minlength=n)
    dense = count * DENSE_SHARE >= b_width
    n_dense = int(count[dense].sum())
    if 2 * n_dense < len(a):
        return None
    rows = np.flatnonzero(dense)
    row_of = np.full(n, -1, np.int64)
    row_of[rows] = np.arange(len(rows))
    is_dense = dense[a]
    table = np.full((len(rows), b_width), -1, c.dtype)  # (c: non-negative, as every column here)
    table[row_of[a[is_dense]], b[is_dense]] = c[is_dense]
    at = np.flatnonzero(table.ravel() >= 0)
    if len(at) != n_dense:  # (a repeated pair: the sort keeps both)
        return None
    cols.clear()
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=ptr[1:])
    b_out, c_out = np.empty(len(a), b.dtype), np.empty(len(a), c.dtype)
    to = concat_ranges(ptr[rows], ptr[rows + 1])
    b_out[to] = at % b_width
    c_out[to] = table.ravel()[at]
    del table, at, to
    sparse = ~is_dense
    _, b_sparse, c_sparse = sorted_triples_csr([a[sparse], b[sparse], c[sparse]], n)
    kept = np.flatnonzero(~dense & (count > 0))
    to = concat_ranges(ptr[kept], ptr[kept + 1])
    b_out[to], c_out[to] = b_sparse, c_sparse
    return ptr, b_out, c_out


def _packed_taken(cols: list[np.ndarray], shifts: tuple[int, ...], chunk: int) -> np.ndarray:
    """``cols[0] << shifts[0] | cols[1] ...`` as int64 words, the columns taken out of the list
    (emptied): the words are filled from the end, its pages taken as they are filled, while each
    column is cut behind (`_cut`, where no one else holds it), so the columns and the words are
    never whole at once. (The columns are read through ``cols`` only: a name bound to one would
    hold it, and `_cut` would leave it whole.)"""
    m = len(cols[0])
    packed = np.empty(m, np.int64)
    for lo in range((m - 1) // chunk * chunk, -1, -chunk):
        word = cols[0][lo:lo + chunk].astype(np.int64)
        for i, shift in enumerate(shifts, 1):
            word <<= shift
            word |= cols[i][lo:lo + chunk]
        packed[lo:lo + chunk] = word
        del word
        for i in range(len(cols)):
            _cut(cols[i], lo)
    cols.clear()
    return packed


def _low_halves(box: list[np.ndarray], chunk: int = 1 << 22) -> np.ndarray:
    """The int64 words in ``box`` (taken out of it), whose values fit int32 (non-negative), as
    int32 in the front of their own buffer, its back half handed back: a copy beside them was 12
    bytes a word at once (the lift's grouped arcs before its reachability search, sp_137's and
    o61653's peak), this is 8."""
    words = box.pop()
    n = len(words)
    if sys.byteorder != "little" or words.base is not None or not words.flags.c_contiguous:
        return words.astype(np.int32)
    low = words.view(np.int32)
    for a in range(0, n, chunk):  # (word i's low half moves to slot i: ahead of what is still unread)
        b = min(a + chunk, n)
        low[a:b] = low[2 * a:2 * b:2]
    del low
    _cut(words, (n + 1) // 2)
    return words.view(np.int32)[:n]


def _cut(col: np.ndarray, size: int) -> None:
    """``col`` shortened in place to ``size`` entries, its tail handed back (a large array's
    `realloc` shrinks its mapping); left as it is where anything else refers to it (a view,
    another name: cutting would pull the memory from under them)."""
    if col.base is None and sys.getrefcount(col) <= 3:  # (the caller's name, the argument, getrefcount's)
        col.resize(size, refcheck=False)


def _unpack(packed: np.ndarray, shift: int, bits: int, out: np.ndarray | None = None,
            chunk: int = 1 << 20) -> np.ndarray:
    """The ``bits``-bit field at ``shift`` of each word (into ``out``, else a new column:
    int32 where it fits, else int64), a chunk at a time: no int64 temporary as long as the
    whole column."""
    if out is None:
        out = np.empty(len(packed), np.int32 if bits <= 31 else np.int64)
    for i in range(0, len(packed), chunk):
        out[i:i + chunk] = (packed[i:i + chunk] >> shift) & ((1 << bits) - 1)
    return out


def narrow(a: np.ndarray) -> np.ndarray:
    """``a`` (ints) as int32 where every value fits, else unchanged (never wraps around)."""
    if a.dtype == np.int32:
        return a
    if not len(a):
        return a.astype(np.int32)
    lo, hi = int(a.min()), int(a.max())
    return a.astype(np.int32) if -(2**31) <= lo and hi < 2**31 else a


def ascending_counts(a: np.ndarray, n: int) -> np.ndarray | None:
    """How many times each of 0..n-1 occurs in ``a`` (int32), where ``a`` ascends, so that
    ``np.repeat(np.arange(n), counts)`` spells it again; None where it does not ascend."""
    if len(a) and (int(a[0]) < 0 or int(a[-1]) >= n or (a[1:] < a[:-1]).any()):
        return None
    return np.bincount(a, minlength=n).astype(np.int32)


def run_starts(*cols: np.ndarray) -> np.ndarray:
    """bool per row of the columns ``cols`` (of one length): the row differs from the row before
    in one of them, or is the first row (where sorted rows begin a run of equal ones)."""
    new = np.zeros(len(cols[0]), bool)
    new[:1] = True
    for col in cols:
        new[1:] |= col[1:] != col[:-1]
    return new


def index_concat(parts: list[np.ndarray], bound: int) -> np.ndarray:
    """``np.concatenate(parts)`` of indices below ``bound``: int32 where the bound allows."""
    if bound < 2**31:
        return np.concatenate(parts, dtype=np.int32, casting="same_kind")
    return np.concatenate(parts).astype(np.int64)


class Parts(list):
    """Pieces of one index array collected in a loop, each kept as int32 where it fits (half
    the memory of int64 while a lift's search collects tens of millions of token ends);
    `take` concatenates them once and lets the pieces go."""

    def __init__(self, pieces: tuple[np.ndarray, ...] | list[np.ndarray] = ()):
        super().__init__(narrow(p) for p in pieces)

    def append(self, piece: np.ndarray) -> None:
        super().append(narrow(piece))

    def take(self) -> np.ndarray:
        """The pieces concatenated; each piece let go as soon as it is copied, and the heap
        trimmed every `TAKE_TRIM` bytes copied, so the pieces and the whole column are not held
        at once (a lift's tens of millions of token ends: a column's worth at its search's peak)."""
        if not self:
            return np.zeros(0, np.int32)
        pieces = list(self)
        self.clear()
        out = np.empty(sum(len(p) for p in pieces), np.result_type(*pieces))  # (pages touched as filled)
        pos = copied = 0
        for i in range(len(pieces)):
            p, pieces[i] = pieces[i], None
            out[pos:pos + len(p)] = p
            pos += len(p)
            copied += p.nbytes
            del p
            if copied > TAKE_TRIM:
                trim_heap()
                copied = 0
        if len(out) > TRIM_ABOVE:  # (a small lift's pieces are not worth a walk of the heap)
            trim_heap()
        return out


def step_slices(cost: np.ndarray, limit: int = 1 << 21) -> np.ndarray:
    """Cut points ``0 = c0 < c1 < ... = len(cost)`` of consecutive slices, each of total
    ``cost`` at most ``limit`` plus its first item's (cut where the running sum passes a
    multiple of ``limit``)."""
    if not len(cost) or int(cost.sum()) <= limit:
        return np.array([0, len(cost)], np.int64)
    cum = np.cumsum(cost)
    cuts = unique(np.searchsorted(cum, np.arange(limit, int(cum[-1]), limit), side="right"))
    return unique(np.concatenate([[0], cuts, [len(cost)]]))


def concat_ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(lo[i], hi[i])`` for every i, without a Python loop."""
    counts = hi - lo
    out = np.arange(int(counts.sum()), dtype=np.int64)
    out += np.repeat(lo - (np.cumsum(counts) - counts), counts)  # one repeat, added in place
    return out


def ranges(ptr: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of CSR rows ``ids`` in ``ptr``'s value arrays, concatenated."""
    return concat_ranges(ptr[ids], ptr[ids + 1])



RANK_SLICE = 1 << 20  # arcs per slice of `rank_bits` (its temporaries: a few int64 columns of a slice)


def rank_bits(num_states: int, src: np.ndarray, byte: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a bit per (state, byte) cell packed in uint64 words, the arcs before each word) of arcs
    sorted by (state, byte), distinct: `rank_step`'s tables. Built a slice of arcs at a time
    (whole, the key, word and bit columns were three int64 per arc: 140 MB on o21328)."""
    bits = np.zeros(num_states * 4, np.uint64)
    one = np.uint64(1)
    for a in range(0, len(src), RANK_SLICE):
        s, b = src[a:a + RANK_SLICE], byte[a:a + RANK_SLICE]
        word = s.astype(np.int64) << 2
        word |= b >> 6
        bit = np.left_shift(one, (b & 63).astype(np.uint64))
        first = np.flatnonzero(np.r_[True, word[1:] != word[:-1]])
        # (a word split between two slices: its runs OR-ed in turn; within a slice, each once)
        bits[word[first]] |= np.bitwise_or.reduceat(bit, first)
    count = np.bitwise_count(bits).astype(np.int64)
    before = np.cumsum(count)
    before -= count
    return bits, before


def rank_step(rank: tuple[np.ndarray, np.ndarray], dst: np.ndarray, state: np.ndarray, byte: np.ndarray) -> np.ndarray:
    """``dst`` of each (state, byte) arc found by rank (`token_fsa._Arcs.rank`: a bit per
    (state, byte) cell in uint64 words, arcs before each word), -1 where there is none. Built in
    place: a fifth fewer passes than plain expressions over a frontier's millions of pairs."""
    bits, before = rank
    one = np.uint64(1)
    key = state.astype(np.int64)  # (a frontier's states may come as int32)
    key <<= 8
    key |= byte
    word = key >> 6
    w = bits[word]
    key &= 63
    has = ((w >> key.view(np.uint64)) & one).astype(bool)
    w &= np.left_shift(one, key.view(np.uint64)) - one  # (the arcs below this one in its word)
    pos = before[word]
    pos += np.bitwise_count(w)
    pos[~has] = 0
    out = dst[pos]
    out[~has] = -1
    return out
