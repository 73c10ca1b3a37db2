"""A byte trie over a vocabulary's tokens, in flat numpy arrays (built once per tokenizer).

Nodes are numbered depth by depth (root = 0), so the children of a node are one contiguous
range and ``parent`` is non-decreasing. Several token ids may spell the same bytes (Gemma has
printable ASCII twice and two single-space tokens); a node lists all of them.
"""
from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass

import numpy as np

from ...contract.cache import ByteCache, shared_cache
from ...contract.vocab import Vocab
from .array_ops import concat_ranges

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
    """The trie in a few numpy passes over the tokens sorted by their bytes (no per-node Python).

    Token ``i`` (in sorted order) opens a new node at depth ``d`` iff ``lcp[i] < d <= len[i]``;
    otherwise its depth-``d`` node is that of the last token before it that opened one. Nodes are
    numbered depth by depth, in token order within a depth, so each node's children are one range
    sorted by byte. Only one depth's node column is kept at a time (a ``[tokens, max_len]`` id
    matrix took 100 MB and a third of the build at Gemma's 262,144 ids)."""
    t0 = time.perf_counter()
    tb = vocab.token_bytes
    ids = [i for i, b in enumerate(tb) if b]
    ids.sort(key=tb.__getitem__)  # stable: ids that share bytes stay in id order
    n = len(ids)
    if not n:
        return _empty_trie()
    order = np.asarray(ids, dtype=np.int64)
    keys = [tb[i] for i in ids]
    lens = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    width = int(lens.max())
    flat = np.frombuffer(b"".join(keys), dtype=np.uint8)
    del keys
    starts = np.cumsum(lens) - lens
    mat = np.zeros((n, width), dtype=np.uint8)
    mat[np.repeat(np.arange(n), lens), np.arange(len(flat)) - np.repeat(starts, lens)] = flat

    # lcp[i] = common prefix length of token i-1 and token i (0 for i = 0).
    lcp = np.zeros(n, dtype=np.int64)
    if n > 1:
        both = np.minimum(lens[1:], lens[:-1])
        same = (mat[1:] == mat[:-1]) & (np.arange(width)[None, :] < both[:, None])
        lcp[1:] = np.where(same.all(axis=1), both, np.argmin(same, axis=1))

    node_byte, parent = [np.zeros(1, np.uint8)], [np.full(1, -1, np.int64)]
    term = np.zeros(n, np.int64)  # the node each token ends at
    cur = np.zeros(n, np.int64)  # each live token's node at the previous depth (the root first)
    live = np.arange(n)
    next_id = 1
    for d in range(1, width + 1):
        keep = lens[live] >= d
        live, cur = live[keep], cur[keep]
        if not len(live):
            break
        new = lcp[live] < d
        node = np.cumsum(new) - 1 + next_id  # a token that opens no node shares its predecessor's
        node_byte.append(mat[live[new], d - 1])
        parent.append(cur[new])
        next_id += int(new.sum())
        ends = lens[live] == d
        term[live[ends]] = node[ends]
        cur = node
    node_byte_a = np.concatenate(node_byte)
    parent_a = np.concatenate(parent)
    ids_all = np.arange(next_id)
    child_lo = np.searchsorted(parent_a, ids_all, side="left")
    child_hi = np.searchsorted(parent_a, ids_all, side="right")

    by_node = np.argsort(term, kind="stable")  # ids of one node stay in id order
    tok_ptr = np.zeros(next_id + 1, dtype=np.int64)
    np.cumsum(np.bincount(term, minlength=next_id), out=tok_ptr[1:])
    tok_ids = order[by_node].astype(np.int32)

    depth1 = np.full(256, -1, dtype=np.int64)
    kids = np.arange(child_lo[0], child_hi[0])
    depth1[node_byte_a[kids]] = kids
    log.info("token trie: %d tokens, %d nodes in %.2f s", n, next_id, time.perf_counter() - t0)
    return TokenTrie(node_byte_a, child_lo, child_hi, tok_ptr, tok_ids, depth1)


def spelled(trie: TokenTrie, group: np.ndarray, node: np.ndarray, state: np.ndarray,
            ok: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, token id, state) of every token spelled by the trie nodes (only tokens ``ok``).
    Nearly every node spells one token: those are a gather; only the few with several ids (bytes
    shared by two ids) are expanded. The order does not matter: the lift's `assemble` sorts the arcs.
    Token ids come back int32, ``group`` and ``state`` in their own dtype: per-node lookups, so
    no int64 column per arc is made (a lift spells tens of millions of token ends)."""
    return spelled_taking(trie, [group, node, state], ok)


def spelled_taking(trie: TokenTrie, ends: list[np.ndarray],
                   ok: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`spelled` of ``ends = [group, node, state]``, taken out of the list (emptied): where the
    caller keeps no other reference, each column goes as soon as it is spelled (the nodes once
    their tokens are read), not after the whole result is built."""
    group, node, state = ends
    ends.clear()
    n_tok, several, head = _spelling(trie)
    multi = np.flatnonzero(several[node])
    first, n_more = trie.tok_ptr[node[multi]], n_tok[node[multi]] - 1
    more = concat_ranges(first + 1, first + 1 + n_more)  # the ids after each first
    tokens = head[node]  # (int32: the trie's ids)
    del node
    if len(more):
        tokens = np.concatenate([tokens, trie.tok_ids[more]])
        extra = np.repeat(multi, n_more)
        group = np.concatenate([group, group[extra]])
        state = np.concatenate([state, state[extra]])
    if ok is not None:
        sel = ok[tokens]
        group, tokens, state = group[sel], tokens[sel], state[sel]
    return group, tokens, state


def _spelling(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids per node, whether a node spells several ids, the first id of each node), per trie
    built once: the lift spells its token ends a search level at a time (`spelled_taking`)."""
    got = _SPELLING.get(trie)
    if got is None:
        n_tok = np.diff(trie.tok_ptr)
        last = len(trie.tok_ids) - 1
        head = trie.tok_ids[np.minimum(trie.tok_ptr[:-1], last)] if last >= 0 else np.zeros(len(n_tok), np.int32)
        got = _SPELLING[trie] = (n_tok, n_tok > 1, head)
    return got


_SPELLING: weakref.WeakKeyDictionary[TokenTrie, tuple[np.ndarray, np.ndarray, np.ndarray]] = weakref.WeakKeyDictionary()


def _empty_trie() -> TokenTrie:
    one = np.ones(1, np.int64)  # the root's (empty) child range, as the general path gives it
    return TokenTrie(np.zeros(1, np.uint8), one, one.copy(), np.zeros(2, np.int64), np.zeros(0, np.int32),
                     np.full(256, -1, np.int64))
