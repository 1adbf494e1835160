"""The assume cache (upstream ``assumecache``): the informer's objects of one kind, with the versions
the scheduler assumed (Reserve's bindings and provisioned claims) in place of the stored ones."""

from __future__ import annotations

from typing import TypeVar

from kubesched.k8s.objects import Obj
from kubesched.scheduler.framework.interface import Handle
from kubesched.scheduler.plugins.volumebinding.objects import metadata, resource_version


def _cache_key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


#: a stored object, or its absence
_Stored = TypeVar("_Stored", Obj, Obj | None)


class AssumeCache:
    """The informer's objects of one kind, overlaid with the versions this scheduler assumed
    (upstream ``assumecache``): an assumed object is seen until the API server's copy moves past
    the version it was assumed from, or until it is restored."""

    def __init__(self, handle: Handle, kind: str) -> None:
        self.handle = handle
        self.kind = kind
        self._assumed: dict[str, Obj] = {}
        #: the cluster's mark at the last :meth:`changes` (None until that is first asked)
        self._mark: int | None = None
        #: keys whose assumption was made, restored or dropped since the last :meth:`changes`
        self._dirty: set[str] = set()

    def api_get(self, namespace: str | None, name: str) -> Obj | None:
        return self.handle.get(self.kind, namespace or "", name)

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self._seen(_cache_key(namespace, name), self.api_get(namespace, name))

    def current(self) -> list[Obj]:
        """The objects, assumed versions in place of the stored ones, in the informer's order."""
        stored = self.handle.list(self.kind)
        if not self._assumed:
            return stored
        return [self._seen(_cache_key(metadata(obj).get("namespace"), metadata(obj)["name"]), obj) for obj in stored]

    def changes(self) -> dict[str, Obj | None] | None:
        """What is seen now (as :meth:`current` would show it) of the objects that may look
        different from what the last call showed, by key (None: gone): those the cluster's journal
        names and those whose assumption came or went meanwhile. None when that cannot be told
        (the first call, or the cluster cannot tell): read :meth:`current` instead."""
        self._mark, keys = self.handle.changes(self.kind, self._mark)
        if keys is None:
            self._dirty.clear()
            return None
        out: dict[str, Obj | None] = {}
        for key in [*keys, *self._dirty]:
            if key not in out:
                namespace, _, name = key.rpartition("/")
                out[key] = self._seen(key, self.api_get(namespace, name))
        self._dirty.clear()
        return out

    def _seen(self, key: str, current: _Stored) -> _Stored:
        """What is seen of the object ``key`` whose stored copy is ``current``: the assumed version
        until the stored copy moves past it (then the assumption is dropped)."""
        assumed = self._assumed.get(key)
        if assumed is None:
            return current
        if current is None or resource_version(current) > resource_version(assumed):
            del self._assumed[key]
            self._changed(key)
            return current
        return assumed

    def assume(self, obj: Obj) -> None:
        meta = metadata(obj)
        key = _cache_key(meta.get("namespace"), meta["name"])
        self._assumed[key] = obj
        self._changed(key)

    def restore(self, obj: Obj) -> None:
        meta = metadata(obj)
        key = _cache_key(meta.get("namespace"), meta["name"])
        if self._assumed.pop(key, None) is not None:
            self._changed(key)

    def _changed(self, key: str) -> None:
        if self._mark is not None:  # someone follows the changes
            self._dirty.add(key)
