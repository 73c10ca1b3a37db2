"""The token trie (`compiler.hard.token_trie`) against a trie built by hand, node by node."""
from __future__ import annotations

import numpy as np
import pytest

from fstbeam.compiler.hard.token_trie import _build
from fstbeam.contract.vocab import Vocab


def _oracle(token_bytes):
    """(node bytes, children ranges, token ids per node, depth-1 nodes) of the trie whose nodes
    are every prefix of every token, numbered depth by depth, by bytes within a depth."""
    prefixes = {b""} | {t[:d] for t in token_bytes if t for d in range(1, len(t) + 1)}
    nodes = sorted(prefixes, key=lambda p: (len(p), p))
    node_id = {p: i for i, p in enumerate(nodes)}
    children = {p: [] for p in nodes}
    for p in nodes[1:]:
        children[p[:-1]].append(node_id[p])
    toks = {p: [] for p in nodes}
    for i, t in enumerate(token_bytes):
        if t:
            toks[t].append(i)
    return nodes, children, toks, node_id


def _check(token_bytes):
    trie = _build(Vocab(tuple(token_bytes), (), frozenset(), "plain", "t"))
    nodes, children, toks, node_id = _oracle(token_bytes)
    assert trie.num_nodes == len(nodes)
    for p, i in node_id.items():
        assert trie.node_byte[i] == (p[-1] if p else 0)
        kids = children[p]
        assert list(range(trie.child_lo[i], trie.child_hi[i])) == kids, p  # one range, by byte
        assert trie.tok_ids[trie.tok_ptr[i]:trie.tok_ptr[i + 1]].tolist() == toks[p], p
    expect1 = np.full(256, -1)
    for p, i in node_id.items():
        if len(p) == 1:
            expect1[p[0]] = i
    assert trie.depth1.tolist() == expect1.tolist()


@pytest.mark.parametrize("seed", range(40))
def test_random_vocabularies(seed):
    """Shared prefixes, duplicate byte strings (several ids), NUL and high bytes, empty ids."""
    rng = np.random.default_rng(seed)
    alphabet = np.array([0, 1, 97, 98, 99, 200, 255], np.uint8)
    toks = []
    for _ in range(int(rng.integers(1, 60))):
        n = int(rng.integers(0, 6))
        toks.append(bytes(alphabet[rng.integers(0, len(alphabet), n)]) or None)
    if rng.random() < 0.5 and any(toks):
        toks.append(next(t for t in toks if t))  # the same bytes under another id
    _check(toks)


def test_no_text_tokens():
    _check([None, None])


def test_default_vocabulary(gemma):
    """Gemma's 262,144 ids: every token's bytes lead to a node that lists it."""
    vocab, _ = gemma
    trie = _build(vocab)
    rng = np.random.default_rng(0)
    for i in rng.choice(vocab.width, 3000, replace=False).tolist():
        b = vocab.token_bytes[i]
        if not b:
            continue
        node = 0
        for c in b:
            lo, hi = trie.child_lo[node], trie.child_hi[node]
            node = lo + int(np.searchsorted(trie.node_byte[lo:hi], c))
            assert node < hi and trie.node_byte[node] == c
        assert i in trie.tok_ids[trie.tok_ptr[node]:trie.tok_ptr[node + 1]]
