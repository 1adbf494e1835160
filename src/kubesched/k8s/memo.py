"""Memoising by object identity.

API objects are replaced, never changed in place, so a value worked out from one object holds as long
as that very object does: an informer delivers the same object to every handler, and unchanged
objects come back as the same object cycle after cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """``compute(obj)``, remembered per object: an entry keeps its object alive, so the object's id
    cannot be reused while it is cached; everything is forgotten once ``limit`` entries are held."""

    __slots__ = ("_compute", "limit", "_seen")

    def __init__(self, compute: Callable[[K], V], limit: int) -> None:
        self._compute = compute
        self.limit = limit
        self._seen: dict[int, tuple[K, V]] = {}

    def __call__(self, obj: K) -> V:
        seen = self._seen.get(id(obj))
        if seen is not None and seen[0] is obj:
            return seen[1]
        value = self._compute(obj)
        if len(self._seen) >= self.limit:
            self._seen.clear()
        self._seen[id(obj)] = (obj, value)
        return value
