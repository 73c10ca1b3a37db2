"""Per-tokenizer index for compiling light automata (phrases, avoid phrases, prefixes) per request.

Built once per vocabulary (cached in memory by the vocabulary's fingerprint), then answers the
queries a light compile needs in microseconds:

- ``ids_equal(s)``: tokens whose bytes are exactly ``s`` (several ids may share bytes: Gemma has
  printable ASCII twice and two single-space tokens);
- ``ids_starting_with(s)`` / ``ids_ending_with(s)``: range queries on the tokens sorted by their
  bytes / by their reversed bytes, optionally only where ``s`` is followed / preceded by a
  non-word byte inside the token;
- ``ids_containing(s)``: every occurrence of ``s`` inside a token (overlapping ones included), from
  a sorted trigram index over one joined blob, optionally only occurrences with non-word bytes (or
  the token's edge) on either side.

Word bytes are those of `fstbeam.fst.text` (the one boundary rule). ``token_class`` puts every token in one of
4 classes by whether its first and last byte are non-word (``2*first_nonword + last_nonword``),
and tokens with no bytes (special, EOS, padding) in class 4.

``lowercased()`` is a twin index over the ASCII-lowercased bytes, built lazily on the first
case-insensitive phrase. Case folding is ASCII only (``A-Z`` -> ``a-z``): ``É`` and ``é`` stay
distinct, as do ``ß`` and ``SS``.
"""
from __future__ import annotations

import bisect
import gc
import threading
from functools import cached_property
from typing import Sequence

import numpy as np

from ...contract.bitmask import pack_bool_mask
from ...contract.cache import ByteCache, shared_cache
from ...contract.layout import N_CLASSES, NO_TEXT_CLASS
from ...contract.vocab import Vocab
from ...fst.text import IS_WORD_BYTE

__all__ = ["TokenIndex", "IS_WORD_BYTE", "NONWORD_RUNS", "N_CLASSES", "NO_TEXT_CLASS"]

def _runs(flags: np.ndarray) -> tuple[tuple[int, int], ...]:
    """Maximal runs ``(lo, hi)`` (inclusive) of byte values where ``flags`` is true."""
    out, lo = [], None
    for b in range(257):
        on = b < 256 and bool(flags[b])
        if on and lo is None:
            lo = b
        elif not on and lo is not None:
            out.append((lo, b - 1))
            lo = None
    return tuple(out)


#: Non-word bytes as inclusive value ranges: 0x00-0x26, 0x28-0x2C, 0x2E-0x2F, 0x3A-0x40, 0x5B-0x60, 0x7B-0x7F.
NONWORD_RUNS = _runs(~IS_WORD_BYTE)

# Range queries for strings up to this long are remembered (at most _MEMO_ENTRIES of them): the
# one- and two-byte ends of a phrase ("y", "my") recur across phrases, and their results span
# thousands of keys, split by the non-word byte that follows (8 bisects each).
_MEMO_LEN = 3
_MEMO_ENTRIES = 65_536
_SETTLE_GC_WIDTH = 32_768  # real tokenizers: collect garbage once after the build (see __init__)
_EMPTY = np.zeros(0, dtype=np.int32)
#: Bytes of each token kept in `TokenIndex.fixed_keys` (longer queries take the bisect path).
FIXED_KEY = 32


def _ramp_of(sizes: np.ndarray) -> np.ndarray:
    """[0..s0-1, 0..s1-1, ...] for the given sizes."""
    return np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


class TokenIndex:
    """Read-only query index over one vocabulary's token bytes. Build with :meth:`for_vocab`."""

    def __init__(
        self,
        token_bytes: Sequence[bytes | None],
        *,
        fingerprint: str = "",
        folded: bool = False,
        token_class: np.ndarray | None = None,
        class_masks: np.ndarray | None = None,
    ) -> None:
        self.token_bytes: tuple[bytes | None, ...] = tuple(token_bytes)
        self.width = len(self.token_bytes)
        self.fingerprint = fingerprint
        #: True for the ASCII-lowercased twin (``lowercased()``).
        self.folded = folded
        self._twin: TokenIndex | None = self if folded else None
        self._twin_lock = threading.Lock()

        tb = self.token_bytes
        lengths = np.fromiter((len(b) if b else 0 for b in tb), dtype=np.int32, count=self.width)
        #: int32 [V]: byte length of every token, 0 for ids with no text.
        self.lengths = _readonly(lengths)
        self.max_len = int(lengths.max()) if self.width else 0

        # One blob: for every id, a NUL separator then its bytes; starts[i] = offset of token i's
        # first byte. NUL is a non-word byte, so token edges look like boundaries to the filters.
        blob = b"".join(b"\x00" + (b or b"") for b in tb) + b"\x00\x00"
        self._blob_arr = _readonly(np.frombuffer(blob, dtype=np.uint8))
        starts = np.cumsum(lengths.astype(np.int64) + 1) - lengths  # separator precedes each token
        self._starts = _readonly(starts)
        counts = np.bincount(self._blob_arr, minlength=256)
        counts[0] -= self.width + 2  # separators and the 2 padding bytes are not token bytes
        #: bool [256]: byte value occurs in some token.
        self.bytes_present = _readonly(counts > 0)

        if token_class is None:
            first = np.where(lengths > 0, self._blob_arr[np.minimum(starts, len(blob) - 1)], 0)
            last = np.where(lengths > 0, self._blob_arr[starts + np.maximum(lengths, 1) - 1], 0)
            cls = (2 * (~IS_WORD_BYTE[first]) + (~IS_WORD_BYTE[last])).astype(np.int8)
            cls[lengths == 0] = NO_TEXT_CLASS
            token_class = cls
        #: int8 [V]: 2*first_nonword + last_nonword, 4 for ids with no text.
        self.token_class = _readonly(np.asarray(token_class, dtype=np.int8))
        if class_masks is None:
            class_masks = pack_bool_mask(self.token_class[None, :] == np.arange(N_CLASSES, dtype=np.int8)[:, None])
        #: int32 [4, W]: bit-packed membership of each class.
        self.class_masks = _readonly(np.asarray(class_masks, dtype=np.int32))
        #: int64 [4]: number of tokens in each class.
        self.class_counts = _readonly(np.bincount(self.token_class, minlength=N_CLASSES + 1)[:N_CLASSES].astype(np.int64))
        #: bool [4] / int64 ids: the classes that have tokens (every light compile reads them).
        self.class_nonempty = _readonly(self.class_counts > 0)
        self.nonempty_classes = _readonly(np.flatnonzero(self.class_nonempty))

        # Text tokens sorted by bytes and by reversed bytes, for bisect range queries. Python bytes
        # compare exactly (NULs included, unlike numpy's "S" dtype). Tuples, not lists: a tuple of
        # bytes is untracked by the cyclic GC at its first collection (forced below), so later
        # collections never walk 2 x 262k pointers (~25 ms each time).
        text_ids = np.flatnonzero(lengths > 0).astype(np.int32)
        fwd = [tb[i] for i in text_ids.tolist()]
        order = np.fromiter(sorted(range(len(fwd)), key=fwd.__getitem__), dtype=np.int64, count=len(fwd))
        self._keys = tuple([fwd[k] for k in order.tolist()])
        self._key_ids = _readonly(text_ids[order])
        rev = [b[::-1] for b in fwd]
        rorder = np.fromiter(sorted(range(len(rev)), key=rev.__getitem__), dtype=np.int64, count=len(rev))
        self._rkeys = tuple([rev[k] for k in rorder.tolist()])
        self._rkey_ids = _readonly(text_ids[rorder])
        n = len(self._keys)
        self._first = dict(zip(reversed(self._keys), range(n - 1, -1, -1)))  # bytes -> first sorted slot
        self._ff = b"\xff" * (self.max_len + 1)
        self._memo: dict = {}  # (forward keys?, s, non-word next) -> ids, for short s (_range_query)

        # Trigram index: every blob offset sorted by the three bytes starting there.
        a = self._blob_arr.astype(np.uint32)
        codes = (a[:-2] << 16) | (a[1:-1] << 8) | a[2:]
        gram_pos = np.argsort(codes).astype(np.int32 if len(codes) < 2**31 else np.int64)
        self._gram_pos = _readonly(gram_pos)
        self._gram_codes = _readonly(codes[gram_pos])
        del fwd, rev, order, rorder, text_ids
        if self.width >= _SETTLE_GC_WIDTH:
            # One full collection now, at build time: it untracks the two key tuples and settles
            # the hundreds of thousands of objects the build allocated, which would otherwise
            # trigger a full collection (~10 ms) inside the first per-request compile.
            gc.collect()

    # ---- construction ------------------------------------------------------------------------
    @classmethod
    def for_vocab(cls, vocab: Vocab, *, lowercased: bool = False, cache: ByteCache | None = None) -> "TokenIndex":
        """The index of ``vocab``, built once per vocabulary fingerprint and kept in ``cache``
        (default: the process-wide byte-budget cache, `fstbeam.contract.cache`).

        ``lowercased=True`` also builds the case-insensitive twin now (a server that expects
        case-insensitive phrases should, so the first such request does not pay ~1 s for it).
        """
        key = vocab.fingerprint

        def build() -> TokenIndex:
            from ...files.status import status

            with status("indexing the tokenizer's vocabulary for phrases (once per process)"):
                index = cls(vocab.token_bytes, fingerprint=key)
                index.padded  # noqa: B018 - build eagerly so per-request compiles never pay for it
                index.fixed_keys  # noqa: B018
                index._warm_up()
            return index

        hit = (cache if cache is not None else shared_cache()).get(("index", key), build)
        if lowercased:
            hit.lowercased()
        return hit

    def _warm_up(self) -> None:
        """Run every query path once: numpy's first ``np.unique`` in a process costs ~10 ms of
        one-time setup, which belongs to the index build, not to the first request."""
        for probe in (b"a", b"the", b"e-mail"):
            self.ids_substrings_of(probe)
            self.ids_starting_with(probe, followed_by_nonword=True)
            self.ids_ending_with(probe, preceded_by_nonword=True)
            self.ids_containing(probe, nonword_before=True, nonword_after=True)

    @classmethod
    def clear_cache(cls, cache: ByteCache | None = None) -> None:
        """Forget every cached index (benchmarks time cold builds with it)."""
        (cache if cache is not None else shared_cache()).discard(lambda key: key[0] == "index")

    def lowercased(self) -> "TokenIndex":
        """Twin index over ASCII-lowercased token bytes (built on first use; same classes)."""
        if self._twin is None:
            with self._twin_lock:
                if self._twin is None:
                    self._twin = TokenIndex(
                        [b.lower() if b else b for b in self.token_bytes],
                        fingerprint=self.fingerprint + ":ascii-lower",
                        folded=True,
                        token_class=self.token_class,
                        class_masks=self.class_masks,
                    )
        return self._twin

    @cached_property
    def padded(self) -> np.ndarray:
        """uint8 [V, max_len]: every token's bytes, left-aligned, zero-padded (see ``lengths``)."""
        v, L = self.width, max(self.max_len, 1)
        out = np.zeros((v, L), dtype=np.uint8)
        lengths = self.lengths.astype(np.int64)
        rows = np.repeat(np.arange(v, dtype=np.int64), lengths)
        src = np.arange(len(rows), dtype=np.int64) + np.repeat(self._starts - np.cumsum(lengths) + lengths, lengths)
        cols = src - np.repeat(self._starts, lengths)
        out[rows, cols] = self._blob_arr[src]
        return _readonly(out)

    @cached_property
    def fixed_keys(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(keys, ids, lengths) by bytes, then the same by reversed bytes: every text token's
        first ``FIXED_KEY`` bytes as a numpy ``S`` string, sorted, so the range queries of many
        phrases run as one ``np.searchsorted`` (`candidates`). numpy pads ``S`` strings with NUL,
        so ``b"a"`` sorts with ``b"a\\x00"``; the queries tell them apart by length."""
        out = []
        for keys, ids in ((self._keys, self._key_ids), (self._rkeys, self._rkey_ids)):
            # Already in order: cutting and NUL-padding keep the order of sorted bytes.
            fixed = np.array([k[:FIXED_KEY] for k in keys], dtype=f"S{FIXED_KEY}")
            out += [_readonly(fixed), _readonly(ids.astype(np.int64)), _readonly(self.lengths[ids].astype(np.int64))]
        return tuple(out)  # type: ignore[return-value]

    # ---- queries -----------------------------------------------------------------------------
    def ids_equal(self, s: bytes) -> np.ndarray:
        """Sorted int32 ids of tokens whose bytes are exactly ``s``."""
        lo = self._first.get(s)
        if lo is None:
            return _EMPTY
        hi = bisect.bisect_right(self._keys, s, lo)
        return np.sort(self._key_ids[lo:hi])

    def ids_substrings_of(self, s: bytes) -> np.ndarray:
        """Sorted unique int32 ids of tokens whose bytes occur somewhere inside ``s``."""
        first, keys = self._first, self._keys
        m, nk = len(s), len(self._keys)
        seen: set[bytes] = set()
        slots: list[int] = []  # sorted slots of the tokens found (Python ints: no numpy per substring)
        for i in range(m):
            for k in range(i + 1, min(m, i + self.max_len) + 1):
                sub = s[i:k]
                lo = first.get(sub)
                if lo is not None:
                    if sub not in seen:
                        seen.add(sub)
                        slots.append(lo)
                        lo += 1
                        while lo < nk and keys[lo] == sub:  # ids that share the bytes (rare)
                            slots.append(lo)
                            lo += 1
                else:  # stop growing once no token starts with sub (linear in len(s), not in max_len)
                    j = bisect.bisect_left(keys, sub)
                    if j >= nk or not keys[j].startswith(sub):
                        break
        # Distinct substrings have disjoint slots, so the ids are distinct: a sort, no unique.
        return np.sort(self._key_ids[slots]) if slots else _EMPTY

    def ids_starting_with(self, s: bytes, *, followed_by_nonword: bool = False) -> np.ndarray:
        """Sorted int32 ids of tokens that start with ``s`` (if ``followed_by_nonword``: with a
        non-word byte right after ``s``, so a token equal to ``s`` is not included)."""
        return np.sort(self._range_query(self._keys, self._key_ids, s, followed_by_nonword))

    def ids_ending_with(self, s: bytes, *, preceded_by_nonword: bool = False) -> np.ndarray:
        """Sorted int32 ids of tokens that end with ``s`` (if ``preceded_by_nonword``: with a
        non-word byte right before ``s``, so a token equal to ``s`` is not included)."""
        return np.sort(self._range_query(self._rkeys, self._rkey_ids, s[::-1], preceded_by_nonword))

    def ranges_starting_with(self, s: bytes, followed_by_nonword: bool) -> np.ndarray:
        """`ids_starting_with`, unsorted (a caller that unions many queries sorts once)."""
        return self._range_query(self._keys, self._key_ids, s, followed_by_nonword)

    def ranges_ending_with(self, s: bytes, preceded_by_nonword: bool) -> np.ndarray:
        """`ids_ending_with`, unsorted."""
        return self._range_query(self._rkeys, self._rkey_ids, s[::-1], preceded_by_nonword)

    def _range_query(self, keys: tuple[bytes, ...], ids: np.ndarray, s: bytes, nonword_next: bool) -> np.ndarray:
        memo = len(s) <= _MEMO_LEN  # short strings recur in every phrase ("y", "my") and span many keys
        if memo:
            hit = self._memo.get((keys is self._keys, s, nonword_next))
            if hit is not None:
                return hit
        lo0 = bisect.bisect_left(keys, s)
        if lo0 == len(keys) or not keys[lo0].startswith(s):
            return _EMPTY  # no key starts with s (most queries of a long phrase): one bisect
        hi0 = bisect.bisect_left(keys, s + self._ff, lo0)
        if not nonword_next:
            return ids[lo0:hi0]
        if memo:
            out = _readonly(self._nonword_ranges(keys, ids, s, lo0, hi0))
            if len(self._memo) < _MEMO_ENTRIES:
                self._memo[keys is self._keys, s, nonword_next] = out
            return out
        return self._nonword_ranges(keys, ids, s, lo0, hi0)

    @staticmethod
    def _nonword_ranges(keys, ids, s: bytes, lo0: int, hi0: int) -> np.ndarray:
        """The ids among ``keys[lo0:hi0]`` (all start with ``s``) with a non-word byte after ``s``."""
        parts = []
        for a, b in NONWORD_RUNS:  # searched within the keys that start with s only
            lo = bisect.bisect_left(keys, s + bytes((a,)), lo0, hi0)
            hi = bisect.bisect_left(keys, s + bytes((b + 1,)), lo, hi0)
            if hi > lo:
                parts.append(ids[lo:hi])
        return np.concatenate(parts) if len(parts) > 1 else (parts[0] if parts else _EMPTY)

    def occurrences(self, s: bytes) -> tuple[np.ndarray, np.ndarray]:
        """Every occurrence of ``s`` inside a token, overlapping ones included: ``(token_ids,
        offsets)`` int64 arrays, ``offsets`` counted from the token's first byte."""
        pos = self._occurrence_positions(s)
        tok = self._token_at(pos)
        return tok, (pos - self._starts[tok]).astype(np.int64)

    def _token_at(self, pos: np.ndarray) -> np.ndarray:
        return (np.searchsorted(self._starts, pos, side="right") - 1).astype(np.int64)

    def _occurrence_positions(self, s: bytes) -> np.ndarray:
        """Blob offsets where ``s`` starts, each occurrence inside one token."""
        m = len(s)
        if m == 0:
            raise ValueError("occurrences of the empty string are not defined")
        blob = self._blob_arr
        if m <= 3:  # all offsets whose next m bytes are s form one range of trigram codes
            code = int.from_bytes(s + bytes(3 - m), "big")
            span = 1 << (8 * (3 - m))
            lo, hi = np.searchsorted(self._gram_codes, np.array([code, code + span], dtype=np.uint32))
            pos = self._gram_pos[lo:hi]
        else:  # rarest trigram of s, then verify the whole window
            sa = np.frombuffer(s, dtype=np.uint8).astype(np.uint32)
            grams = (sa[:-2] << 16) | (sa[1:-1] << 8) | sa[2:]
            both = np.searchsorted(self._gram_codes, np.concatenate([grams, grams + 1]))  # left of g and of g + 1
            los, his = both[: len(grams)], both[len(grams):]
            k = int(np.argmin(his - los))
            cand = self._gram_pos[los[k] : his[k]] - k
            cand = cand[(cand >= 0) & (cand + m <= len(blob))]
            window = blob[cand[:, None] + np.arange(m)]
            pos = cand[(window == np.frombuffer(s, dtype=np.uint8)).all(axis=1)]
        if 0 in s:  # a NUL can match a separator or the padding: keep occurrences inside one token
            tok = self._token_at(pos)
            t = np.maximum(tok, 0)
            pos = pos[(tok >= 0) & (pos >= self._starts[t]) & (pos + m <= self._starts[t] + self.lengths[t])]
        return pos

    def ids_containing(self, s: bytes, *, nonword_before: bool = False, nonword_after: bool = False) -> np.ndarray:
        """Sorted unique int32 ids of tokens that contain ``s``. With ``nonword_before`` /
        ``nonword_after`` only occurrences whose neighbouring byte on that side is a non-word byte
        *or the token's edge* count (the caller decides what lies beyond the edge)."""
        pos = self._occurrence_positions(s)
        if nonword_before:
            pos = pos[~IS_WORD_BYTE[self._blob_arr[pos - 1]]]  # the separator before a token is non-word
        if nonword_after:
            pos = pos[~IS_WORD_BYTE[self._blob_arr[pos + len(s)]]]  # ... and so is the one after it
        return np.unique(self._token_at(pos)).astype(np.int32)

    def containing_many(self, lits: list[bytes], nonword_before: list[bool], nonword_after: list[bool]) -> tuple[np.ndarray, np.ndarray]:
        """`ids_containing` of many strings (4 bytes or more, no NUL) in one pass: (string index,
        token id) int64 pairs, repeats possible. Each string's rarest trigram gives the
        candidate offsets, as one string does; the windows are then checked all at once."""
        if not lits:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        m = np.array([len(s) for s in lits], np.int64)
        L = int(m.max())
        flat = np.frombuffer(b"".join(lits), np.uint8).astype(np.uint32)
        first = np.cumsum(m) - m
        g_owner = np.repeat(np.arange(len(lits)), m - 2)
        g_at = np.repeat(first, m - 2) + _ramp_of(m - 2)  # each trigram's first byte in ``flat``
        grams = (flat[g_at] << 16) | (flat[g_at + 1] << 8) | flat[g_at + 2]
        lo = np.searchsorted(self._gram_codes, grams)
        count = np.searchsorted(self._gram_codes, grams + 1) - lo
        local = g_at - first[g_owner]  # < max_len < 64
        best = np.minimum.reduceat(count * 64 + local, np.cumsum(m - 2) - (m - 2))  # rarest, first on ties
        k, lo_k = best % 64, lo[np.cumsum(m - 2) - (m - 2) + best % 64]
        n = best // 64
        owner = np.repeat(np.arange(len(lits)), n)
        pos = self._gram_pos[np.repeat(lo_k, n) + _ramp_of(n)] - np.repeat(k, n)
        ok = (pos >= 0) & (pos + m[owner] <= len(self._blob_arr))
        owner, pos = owner[ok], pos[ok]
        padded = np.zeros((len(lits), L), np.uint8)
        padded[np.repeat(np.arange(len(lits)), m), _ramp_of(m)] = flat
        window = self._blob_arr[np.minimum(pos[:, None] + np.arange(L), len(self._blob_arr) - 1)]
        ok = ((window == padded[owner]) | (np.arange(L) >= m[owner][:, None])).all(axis=1)
        before, after = np.array(nonword_before, bool)[owner], np.array(nonword_after, bool)[owner]
        ok &= ~before | ~IS_WORD_BYTE[self._blob_arr[pos - 1]]  # the separator before a token is non-word
        ok &= ~after | ~IS_WORD_BYTE[self._blob_arr[np.minimum(pos + m[owner], len(self._blob_arr) - 1)]]
        owner, pos = owner[ok], pos[ok]
        return owner.astype(np.int64), self._token_at(pos)

    def __repr__(self) -> str:
        kind = "lowercased " if self.folded else ""
        return f"TokenIndex({kind}{self.width} ids, {len(self._keys)} text tokens, fp={self.fingerprint[:12]})"
