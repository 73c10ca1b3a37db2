"""The process's memo of interior walks (`shared_walks`): per trie and component shape, the trie
walk of the shape's interior from each start ``code = canonical state * 256 + first byte``.

A walk's results are kept as flat arrays grouped by start code (CSR), so that a lift gathers
the walks of all its blocks at once instead of one Python step per block. Two memos share the
walks: the *shared* shapes (least recently used dropped after `MEMO_SHAPES`; whether a shape is
there decides whether the lift shares it, as it always did) and the shapes a lift walked once
without sharing them (`ONCE_BYTES` in all): a JSON object's free property names have the same
interior in every schema that allows undeclared properties, and walking it (the whole trie)
was a third of such a compile.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..array_ops import csr, ranges, sorted_triples, unique
from ..token_trie import spelled

if TYPE_CHECKING:
    from ..token_trie import TokenTrie

# Shared shapes remembered per trie (least recently used dropped first).
MEMO_SHAPES = 64
# Bytes of walks kept for the shared shapes: above it the least recently used shapes' walks are
# let go (walked again when met), their keys kept, so what is shared does not change. (A
# string-like interior's walks cover the whole trie, tens of MB: 64 of them would be gigabytes
# held by a long-lived process between compiles.)
SHARED_BYTES = 256 << 20
# Bytes of walks kept for shapes walked without sharing (least recently used dropped first).
ONCE_BYTES = 96 << 20
# Bytes of walks both memos keep between lifts (`settle`): a lift uses the budgets above while it
# runs, then the least recently used walks go. (Carried from one schema to the next, the full
# budgets added up to 350 MB on the next compile's peak: o77304 851 MB alone, 1,036 MB after
# others; one free-property-name interior's walks are about 15 MB with Gemma 3's tokenizer.)
IDLE_BYTES = 32 << 20


class ShapeWalks:
    """The walks of one shape's interior (``n`` canonical states; exits lead to state ``n``)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.done = np.zeros(n * 256, bool)
        zero, ptr = np.zeros(0, np.int32), np.zeros(n * 256 + 1, np.int64)
        # token ends inside: (trie node, canonical state); exits: (child node read on the exit
        # byte, canonical state it was read from); both grouped by start code
        self.e_ptr, self.e_node, self.e_state = ptr, zero, zero
        self.x_ptr, self.x_node, self.x_state = ptr.copy(), zero, zero
        self.used = 0  # `walks_for`'s clock when last handed out (`settle` lets the oldest go)
        self._tokens: tuple[np.ndarray, ...] | None = None  # (ptr, token, canonical next), sorted by (code, token)
        self._next: tuple[np.ndarray, ...] | None = None  # (ptr, canonical next): distinct per code, sorted
        # (counted once per change: the memos add up their walks' bytes at every lookup, 9,000
        # sums over a few arrays each in 30 median compiles, 3% of their time)
        self._bytes: int | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name not in ("_bytes", "used"):  # (a changed array: counted again when asked)
            object.__setattr__(self, "_bytes", None)

    @property
    def nbytes(self) -> int:
        if self._bytes is None:
            arrays = [self.e_node, self.e_state, self.x_node, self.x_state, *(self._tokens or ()), *(self._next or ())]
            self._bytes = sum(a.nbytes for a in arrays)
        return self._bytes

    def ensure(self, shape: Any, trie: TokenTrie, codes: np.ndarray, make_arcs: Callable[..., Any],
               stepper_cls: Callable[..., Any]) -> None:
        """Walk the starts among ``codes`` not walked before (one level-synchronous BFS)."""
        todo = unique(codes[~self.done[codes]])
        if not len(todo):
            return
        n_states, src, byte, dst = shape.arcs()
        sink = n_states - 1
        step = stepper_cls(make_arcs(n_states, src, byte, dst), trie)
        code = todo
        node = trie.depth1[todo & 255]
        state = todo >> 8
        ends, exits = [], []
        while len(node):
            has = trie.tok_ptr[node + 1] > trie.tok_ptr[node]
            ends.append((code[has], node[has], state[has]))
            s, node, nxt = step(node, state)
            out = nxt == sink
            code, state = code[s], state[s]
            exits.append((code[out], node[out], state[out]))
            code, node, state = code[~out], node[~out], nxt[~out].astype(np.int64)
        self.e_ptr, self.e_node, self.e_state = self._merge(self.e_ptr, self.e_node, self.e_state, ends)
        self.x_ptr, self.x_node, self.x_state = self._merge(self.x_ptr, self.x_node, self.x_state, exits)
        self.done[todo] = True
        self._tokens = self._next = None

    def _merge(self, ptr: np.ndarray, node: np.ndarray, state: np.ndarray,
               parts: Sequence[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        old = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
        code = np.concatenate([old, *(p[0] for p in parts)])
        order = np.argsort(code, kind="stable")
        # int32 (trie nodes, canonical states): held between compiles, half the bytes of int64
        node = np.concatenate([node, *(p[1] for p in parts)], dtype=np.int32, casting="same_kind")[order]
        state = np.concatenate([state, *(p[2] for p in parts)], dtype=np.int32, casting="same_kind")[order]
        return csr(code, len(ptr) - 1), node, state

    def ends(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(index into ``codes``, node, canonical state) of the token ends of each start."""
        return self._gather(self.e_ptr, self.e_node, self.e_state, codes)

    def exits(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(index into ``codes``, child node, canonical state) of the exits of each start."""
        return self._gather(self.x_ptr, self.x_node, self.x_state, codes)

    def _spell(self, trie: TokenTrie) -> tuple[np.ndarray, ...]:
        code = np.repeat(np.arange(len(self.e_ptr) - 1), np.diff(self.e_ptr))
        code, tok, rel = sorted_triples(*spelled(trie, code, self.e_node, self.e_state, None))
        self._tokens = (csr(code, len(self.e_ptr) - 1), tok, rel)
        return self._tokens

    def tokens(self, trie: TokenTrie, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(index into ``codes``, token id, canonical next state) of the token arcs inside, each
        start's arcs sorted by token id; spelled out once per shape, not once per compile."""
        ptr, tok, rel = self._tokens if self._tokens is not None else self._spell(trie)
        idx, t, r = self._gather(ptr, tok, rel, codes)
        return idx, t, r

    def next_states(self, trie: TokenTrie, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into ``codes``, canonical next state): the distinct states each start's tokens
        reach inside, ascending (what the lift's searches walk instead of every token)."""
        if self._next is None:
            ptr, _, rel = self._tokens if self._tokens is not None else self._spell(trie)
            code = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
            key = unique(code * (self.n + 1) + rel)
            self._next = (csr(key // (self.n + 1), len(ptr) - 1), key % (self.n + 1))
        ptr, rel = self._next
        pos = ranges(ptr, codes)
        return np.repeat(np.arange(len(codes)), ptr[codes + 1] - ptr[codes]), rel[pos]

    @staticmethod
    def _gather(ptr: np.ndarray, node: np.ndarray, state: np.ndarray,
                codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = ranges(ptr, codes)
        idx = np.repeat(np.arange(len(codes)), ptr[codes + 1] - ptr[codes])
        return idx, node[pos], state[pos]


#: held while a lift reads or fills the memos (`shared_walks.share`)
LOCK = threading.RLock()
_CLOCK = itertools.count(1)
_SHARED: weakref.WeakKeyDictionary[TokenTrie, OrderedDict[str, ShapeWalks]] = weakref.WeakKeyDictionary()
_ONCE: weakref.WeakKeyDictionary[TokenTrie, OrderedDict[str, ShapeWalks]] = weakref.WeakKeyDictionary()


def shared_keys(trie: TokenTrie) -> set[str]:
    """The shapes shared before (in the shared memo): shared again wherever met."""
    return set(_SHARED.get(trie, {}))


def walks_for(trie: TokenTrie, key: str, n: int, shared: bool) -> ShapeWalks:
    """The walks of shape ``key``, from either memo; a shared shape is (re)entered in the shared
    memo, as most recently used."""
    memo, once = _SHARED.setdefault(trie, OrderedDict()), _ONCE.setdefault(trie, OrderedDict())
    if shared:
        if key not in memo:
            memo[key] = once.pop(key) if key in once else ShapeWalks(n)
        memo.move_to_end(key)
        while len(memo) > MEMO_SHAPES:  # no longer shared by default, but its walks stay useful
            old_key, old = memo.popitem(last=False)
            once[old_key] = old
        walks = memo[key]
        _bound_shared(memo, walks)
    else:
        walks = memo.get(key) or once.get(key) or ShapeWalks(n)
        if key not in memo:
            once[key] = walks
            once.move_to_end(key)
    total = sum(w.nbytes for w in once.values())
    while len(once) > 1 and total > ONCE_BYTES:
        total -= once.popitem(last=False)[1].nbytes
    walks.used = next(_CLOCK)
    return walks


def settle(trie: TokenTrie) -> None:
    """Let go of the least recently used walks of both memos until they hold `IDLE_BYTES` (a
    shared shape's key stays, with empty walks: what is shared does not change)."""
    memo, once = _SHARED.get(trie, OrderedDict()), _ONCE.get(trie, OrderedDict())
    held = sorted([(w.used, k, w, m) for m in (memo, once) for k, w in m.items() if w.nbytes],
                  key=lambda e: e[0])
    total = sum(e[2].nbytes for e in held)
    for _, key, walks, m in held:
        if total <= IDLE_BYTES:
            break
        total -= walks.nbytes
        if m is memo:
            memo[key] = ShapeWalks(walks.n)
        else:
            del once[key]


def held_bytes(trie: TokenTrie | None = None) -> int:
    """Bytes of walks both memos hold for ``trie`` (None: for every trie)."""
    tries = {trie} if trie is not None else set(_SHARED) | set(_ONCE)
    none: OrderedDict[str, ShapeWalks] = OrderedDict()
    return sum(w.nbytes for t in tries for m in (_SHARED.get(t, none), _ONCE.get(t, none)) for w in m.values())


def _bound_shared(memo: OrderedDict[str, ShapeWalks], keep: ShapeWalks) -> None:
    """Let go of the least recently used shared shapes' walks (not ``keep``'s) while the walks
    add up to more than `SHARED_BYTES`; the keys stay, with empty walks."""
    total = sum(w.nbytes for w in memo.values())
    for k, w in list(memo.items()):
        if total <= SHARED_BYTES:
            break
        if w is keep or not w.nbytes:
            continue
        total -= w.nbytes
        memo[k] = ShapeWalks(w.n)


def clear() -> None:
    """Forget every walk (tests)."""
    _SHARED.clear()
    _ONCE.clear()
