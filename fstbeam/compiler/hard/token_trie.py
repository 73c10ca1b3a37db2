"""A byte trie over a vocabulary's tokens, in flat numpy arrays (built once per tokenizer).

Nodes are numbered depth by depth (root = 0), so the children of a node are one contiguous
range and ``parent`` is non-decreasing. Several token ids may spell the same bytes (Gemma has
printable ASCII twice and two single-space tokens); a node lists all of them.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from ...contract.cache import ByteCache, shared_cache
from ...contract.vocab import Vocab

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class TokenTrie:
    node_byte: np.ndarray  # uint8 [N]   byte on the arc into the node (0 for the root)
    child_lo: np.ndarray  # int64 [N]   children are nodes child_lo..child_hi-1
    child_hi: np.ndarray  # int64 [N]
    tok_ptr: np.ndarray  # int64 [N+1] CSR: token ids ending at the node
    tok_ids: np.ndarray  # int32 [T]
    depth1: np.ndarray  # int64 [256] node for each first byte, -1 if no token starts with it

    @property
    def num_nodes(self) -> int:
        return len(self.node_byte)


def token_trie(vocab: Vocab, cache: ByteCache | None = None) -> TokenTrie:
    """The trie for ``vocab`` (kept in ``cache``, default the process-wide one, and on disk,
    both by fingerprint)."""

    def build() -> TokenTrie:
        from dataclasses import asdict

        from ...contract.disk_cache import cached_arrays
        from ...files.status import status

        with status("building the tokenizer's byte trie (once, then cached)"):
            return TokenTrie(**cached_arrays("trie", vocab.fingerprint, lambda: asdict(_build(vocab))))

    return (cache if cache is not None else shared_cache()).get(("trie", vocab.fingerprint), build)


def _build(vocab: Vocab) -> TokenTrie:
    t0 = time.perf_counter()
    groups: dict[bytes, list[int]] = {}
    for i, b in enumerate(vocab.token_bytes):
        if b:
            groups.setdefault(b, []).append(i)
    uniq = sorted(groups)
    n = len(uniq)
    lens = np.fromiter((len(u) for u in uniq), dtype=np.int64, count=n)
    width = int(lens.max()) if n else 0
    mat = np.zeros((n, width), dtype=np.uint8)
    flat = np.frombuffer(b"".join(uniq), dtype=np.uint8)
    rows = np.repeat(np.arange(n), lens)
    starts = np.cumsum(lens) - lens
    cols = np.arange(len(flat)) - np.repeat(starts, lens)
    mat[rows, cols] = flat

    # lcp[i] = common prefix length of uniq[i-1] and uniq[i] (0 for i = 0).
    lcp = np.zeros(n, dtype=np.int64)
    if n > 1:
        both = np.minimum(lens[1:], lens[:-1])
        same = (mat[1:] == mat[:-1]) & (np.arange(width)[None, :] < both[:, None])
        lcp[1:] = np.where(same.all(axis=1), both, np.argmin(same, axis=1))

    # Node (i, d) exists for d <= len_i; it starts a new node where lcp[i] < d.
    node_id = np.full((n, width + 1), -1, dtype=np.int64)
    node_id[:, 0] = 0
    next_id = 1
    node_byte = [np.zeros(1, np.uint8)]
    parent = [np.full(1, -1, np.int64)]
    for d in range(1, width + 1):
        live = np.nonzero(lens >= d)[0]
        new = lcp[live] < d
        ids = np.cumsum(new) - 1 + next_id
        node_id[live, d] = ids
        first = live[new]
        node_byte.append(mat[first, d - 1])
        parent.append(node_id[first, d - 1])
        next_id += int(new.sum())
    node_byte_a = np.concatenate(node_byte)
    parent_a = np.concatenate(parent)
    ids_all = np.arange(next_id)
    child_lo = np.searchsorted(parent_a, ids_all, side="left")
    child_hi = np.searchsorted(parent_a, ids_all, side="right")

    term = node_id[np.arange(n), lens]  # node of each unique string
    counts = np.zeros(next_id, dtype=np.int64)
    order = np.argsort(term, kind="stable")
    tok_lists = [groups[uniq[i]] for i in order]
    np.add.at(counts, term, [len(groups[u]) for u in uniq])
    tok_ptr = np.zeros(next_id + 1, dtype=np.int64)
    np.cumsum(counts, out=tok_ptr[1:])
    tok_ids = np.fromiter((t for lst in tok_lists for t in lst), dtype=np.int32, count=int(tok_ptr[-1]))

    depth1 = np.full(256, -1, dtype=np.int64)
    kids = np.arange(child_lo[0], child_hi[0])
    depth1[node_byte_a[kids]] = kids
    log.info("token trie: %d tokens, %d nodes in %.2f s", n, next_id, time.perf_counter() - t0)
    return TokenTrie(node_byte_a, child_lo, child_hi, tok_ptr, tok_ids, depth1)
