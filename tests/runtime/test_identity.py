"""Identity-keyed caches: a new object at a freed object's address never finds the old entry
(an ``id()``-keyed dict would hand it out)."""
from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

import numpy as np
import pytest

from fstbeam.runtime.identity import IdentityCache, identity_key


class Obj:
    def __init__(self, tag):
        self.tag = tag


def _reuse_address(old_id: int, make, tries: int = 200_000):
    """A new object from ``make(i)`` at the address ``old_id`` (CPython hands a freed block of the
    same size out again). Where the allocator hands none out (it may not, on a fresh interpreter
    with other free blocks), the test cannot build its case and is skipped, not failed."""
    kept = [None] * tries  # the misses stay alive so the allocator moves on (no list growth meanwhile)
    for i in range(tries):
        obj = make(i)
        if id(obj) == old_id:
            return obj
        kept[i] = obj
    pytest.skip("no new object got the freed address (the allocator did not reuse it this run)")


def test_a_new_object_at_the_same_address_misses():
    cache: IdentityCache[str] = IdentityCache()
    a = Obj("old")
    cache[a] = "old value"
    naive = {id(a): "old value"}  # what an id()-keyed dict does
    assert cache.get(a) == "old value" and a in cache
    old = id(a)
    del a
    gc.collect()
    assert len(cache) == 0  # the entry left with its object
    b = _reuse_address(old, Obj)
    assert id(b) in naive  # the hazard: the id alone finds the old entry
    assert b not in cache and cache.get(b) is None
    with pytest.raises(KeyError):
        cache[b]


def test_objects_without_weak_references_are_held():
    cache: IdentityCache[int] = IdentityCache()
    key, twin = tuple([1, 2, 3]), tuple([1, 2, 3])  # tuples take no weak reference: the entry holds the object
    cache[key] = 7
    assert cache[key] == 7 and twin is not key and cache.get(twin) is None


def test_maxsize_keeps_the_latest():
    cache: IdentityCache[int] = IdentityCache(maxsize=2)
    objs = [Obj(i) for i in range(3)]
    for i, o in enumerate(objs):
        cache[o] = i
    assert objs[0] not in cache and cache[objs[1]] == 1 and cache[objs[2]] == 2


def test_identity_key_is_never_reused():
    a = Obj("a")
    ka = identity_key(a)
    assert identity_key(a) == ka
    old = id(a)
    del a
    gc.collect()
    b = _reuse_address(old, Obj)
    assert identity_key(b) != ka


def test_artifact_ids_of_a_new_artifact_at_a_freed_address():
    """The static shortlist's per-artifact ids: a new hard automaton at the old one's address
    gets its own tokens (an id()-keyed cache without the identity check returned the old ones)."""
    from fstbeam.runtime.model import shortlist as sl_mod
    from fstbeam.runtime.model.shortlist import _artifact_ids

    class Hard(SimpleNamespace):  # a subclass takes weak references, as HardTables does
        pass

    no_rows = np.zeros((0, 2), np.int32)
    first, later = np.asarray([3, 5], np.int64), np.asarray([7], np.int64)  # made before: only Hard objects below
    h1 = Hard(width=64, dense_masks=no_rows, state_sparse_tokens=first)
    assert _artifact_ids(h1).tolist() == [3, 5]
    entries = len(sl_mod._ARTIFACT_IDS)
    old, alive = id(h1), weakref.ref(h1)
    del h1
    gc.collect()
    assert alive() is None and len(sl_mod._ARTIFACT_IDS) == entries - 1  # the entry left with its artifact
    h2 = _reuse_address(old, lambda i: Hard(width=64, dense_masks=no_rows, state_sparse_tokens=later))
    assert _artifact_ids(h2).tolist() == [7]


def test_decoder_constraint_check_of_a_new_object_at_a_freed_address():
    """Decoder._check caches the checked form per constraints object: a new CompiledConstraints
    at a freed one's address is checked again (here: refused, its vocabulary is another width)."""
    import dataclasses

    from fstbeam.compiler.api import compile_constraints
    from fstbeam.errors import TokenizerMismatchError
    from fstbeam.runtime import Decoder

    from rt_helpers import TINY_TOKENS, StubLM, tiny_vocab

    vocab, wider = tiny_vocab(), tiny_vocab(TINY_TOKENS + ["d"])
    dec = Decoder(StubLM(vocab.width), vocab, eos_ids=[0], device="cpu")
    cc = compile_constraints(phrases=["a"], tokenizer=vocab)
    checked = dec._check(cc)
    assert dec._check(cc) is checked  # cached
    bad = dataclasses.replace(cc, vocab=wider)
    with pytest.raises(TokenizerMismatchError):
        dec._check(bad)
    old = id(bad)
    del bad
    gc.collect()
    new = _reuse_address(old, lambda i: dataclasses.replace(cc, vocab=wider if i % 2 else vocab))
    if new.vocab is vocab:
        assert dec._check(new) is not checked  # its own entry (same content, another object)
    else:
        with pytest.raises(TokenizerMismatchError):
            dec._check(new)
