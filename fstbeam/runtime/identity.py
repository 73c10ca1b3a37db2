"""Caches keyed by object identity whose keys cannot be taken over by a new object.

``id(obj)`` alone is a bad cache key: once ``obj`` is freed, a new object may get the same id
(CPython reuses the address) and would find the old entry. :class:`IdentityCache` keys an entry
by ``id(obj)`` but holds a weak reference to ``obj`` whose callback drops the entry when ``obj``
is freed, before its address can be reused; a lookup also checks that the entry's object *is*
the one asked about. Objects that take no weak reference are held strongly instead (then the id
cannot be reused while the entry lives). :func:`identity_key` gives an object a serial number
that is never given to another object, for keys made of several objects.
"""
from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from typing import Callable, Generic, TypeVar

__all__ = ["IdentityCache", "identity_key"]

V = TypeVar("V")


class IdentityCache(Generic[V]):
    """``object -> value`` by identity (see the module docs); ``maxsize`` keeps the most recently
    stored entries only."""

    def __init__(self, maxsize: int | None = None) -> None:
        self.maxsize = maxsize
        # id(obj) -> (weak reference to obj, or obj itself, value)
        self._entries: OrderedDict[int, tuple[object, V]] = OrderedDict()

    def _holder(self, obj: object) -> object:
        """A weak reference to ``obj`` that drops its entry when ``obj`` dies; ``obj`` itself
        for objects without weak references."""
        key = id(obj)
        entries = weakref.ref(self._entries)  # the callback must not keep this cache alive

        def drop(ref: weakref.ref[object]) -> None:
            live = entries()
            if live is not None and key in live and live[key][0] is ref:
                del live[key]

        try:
            return weakref.ref(obj, drop)
        except TypeError:  # e.g. int, tuple, objects with __slots__ and no __weakref__
            return obj

    @staticmethod
    def _target(holder: object) -> object:
        return holder() if isinstance(holder, weakref.ref) else holder

    def get(self, obj: object, default: V | None = None) -> V | None:
        entry = self._entries.get(id(obj))
        if entry is None or self._target(entry[0]) is not obj:
            return default
        return entry[1]

    def __getitem__(self, obj: object) -> V:
        entry = self._entries.get(id(obj))
        if entry is None or self._target(entry[0]) is not obj:
            raise KeyError(f"no entry for this {type(obj).__name__}")
        return entry[1]

    def __contains__(self, obj: object) -> bool:
        entry = self._entries.get(id(obj))
        return entry is not None and self._target(entry[0]) is obj

    def __setitem__(self, obj: object, value: V) -> None:
        key = id(obj)
        self._entries.pop(key, None)
        self._entries[key] = (self._holder(obj), value)
        while self.maxsize is not None and len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)

    def get_or_make(self, obj: object, make: Callable[[], V]) -> V:
        """The value of ``obj``, made (and stored) by ``make()`` on a miss."""
        entry = self._entries.get(id(obj))
        if entry is not None and self._target(entry[0]) is obj:
            return entry[1]
        value = make()
        self[obj] = value
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


_SERIALS: IdentityCache[int] = IdentityCache()
_NEXT = itertools.count(1)


def identity_key(obj: object) -> int:
    """A serial number of ``obj``, the same for the object's lifetime and never given to another
    object (unlike ``id()``)."""
    return _SERIALS.get_or_make(obj, lambda: next(_NEXT))
