"""An in-memory object store with resourceVersions and watch events, like etcd behind an API server."""

from __future__ import annotations

import builtins
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

from kubesched.k8s.journal import ChangeJournal
from kubesched.k8s.kinds import is_namespaced
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import DEFAULT_NAMESPACE, ApiError, Obj, object_key
from kubesched.k8s.timefmt import rfc3339
from kubesched.scheduler.ports import ClusterEventHandler, deliver

Clock = Callable[[], float]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch; returns a new object, never mutates its inputs."""
    if not isinstance(patch, dict):
        return deep_copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


#: what an index files an object under (client-go's ``IndexFunc``)
IndexFunc = Callable[[Obj], Iterable[Hashable]]


class ObjectStore:
    """Objects by kind and ``namespace/name``; every write bumps a global resourceVersion and
    notifies the watchers synchronously, in registration order. Secondary indexes
    (:meth:`add_index`) and the journal of changes (:meth:`changes`) are kept in the same step as
    the objects, before any watcher hears of the write."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._objects: dict[str, dict[str, Obj]] = {}
        self._rv = 0
        self._uid = 0
        self._watchers: list[ClusterEventHandler] = []
        self._pending: deque[tuple[str, str, Obj | None, Obj]] = deque()
        self._dispatching = False
        #: per kind: index name -> (its function, value -> keys of the objects filed under it)
        self._indexes: dict[str, dict[str, tuple[IndexFunc, dict[Hashable, dict[str, None]]]]] = {}
        self._journal = ChangeJournal()

    # -- reading ---------------------------------------------------------------------------
    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        return self._objects.get(kind, {}).get(object_key(kind, namespace, name))

    def list(self, kind: str) -> list[Obj]:
        return list(self._objects.get(kind, {}).values())

    def iter(self, kind: str) -> Iterator[Obj]:
        return iter(self._objects.get(kind, {}).values())

    @property
    def resource_version(self) -> int:
        return self._rv

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        """See :meth:`ChangeJournal.since <kubesched.k8s.journal.ChangeJournal.since>`."""
        return self._journal.since(kind, since)

    # -- secondary indexes -----------------------------------------------------------------
    def add_index(self, kind: str, name: str, values: IndexFunc) -> None:
        """File the objects of ``kind`` under each value ``values(obj)`` gives, from now on kept in
        step with every write (client-go's ``Indexer``); adding an index again changes nothing."""
        indexes = self._indexes.setdefault(kind, {})
        if name in indexes:
            return
        filed: dict[Hashable, dict[str, None]] = {}
        indexes[name] = (values, filed)
        for key, obj in self._objects.get(kind, {}).items():
            for value in values(obj):
                filed.setdefault(value, {})[key] = None

    def by_index(self, kind: str, name: str, value: Hashable) -> builtins.list[Obj]:
        """The objects of ``kind`` the index ``name`` files under ``value`` (in no particular order)."""
        bucket = self._objects.get(kind, {})
        return [bucket[key] for key in self._indexes[kind][name][1].get(value, ())]

    def _refile(self, kind: str, key: str, old: Obj | None, new: Obj | None) -> None:
        """Keep the indexes and the journal in step with a write of ``key`` (``old`` -> ``new``)."""
        self._journal.note(kind, key, len(self._objects.get(kind, ())))
        for values, filed in self._indexes.get(kind, {}).values():
            if old is not None:
                for value in values(old):
                    keys = filed.get(value)
                    if keys is not None:
                        keys.pop(key, None)
                        if not keys:
                            del filed[value]
            if new is not None:
                for value in values(new):
                    filed.setdefault(value, {})[key] = None

    # -- watching --------------------------------------------------------------------------
    def watch(self, handler: ClusterEventHandler) -> None:
        self._watchers.append(handler)

    def _notify(self, event: str, kind: str, old: Obj | None, new: Obj) -> None:
        """Deliver events in resourceVersion order: a write made by a watcher while an event is
        being delivered is queued and delivered to everyone after it, as a real watch would."""
        self._pending.append((event, kind, old, new))
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while self._pending:
                ev, k, before, after = self._pending.popleft()
                for w in list(self._watchers):
                    deliver(w, ev, k, before, after)
        finally:
            self._dispatching = False

    # -- writing ---------------------------------------------------------------------------
    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def create(self, obj: Obj) -> Obj:
        kind = obj["kind"]
        meta = dict(obj.get("metadata") or {})
        if is_namespaced(kind):
            meta.setdefault("namespace", DEFAULT_NAMESPACE)
        key = object_key(kind, meta.get("namespace"), meta["name"])
        bucket = self._objects.setdefault(kind, {})
        if key in bucket:
            raise ApiError(409, "AlreadyExists", f'{kind.lower()}s "{meta["name"]}" already exists')
        self._uid += 1
        meta.setdefault("uid", f"{self._uid:08x}-0000-4000-8000-{self._uid:012x}")
        meta["resourceVersion"] = self._next_rv()
        meta.setdefault("creationTimestamp", rfc3339(self._clock()))
        new = dict(obj)
        new["metadata"] = meta
        bucket[key] = new
        self._refile(kind, key, None, new)
        self._notify("add", kind, None, new)
        return new

    def update(self, new: Obj) -> Obj:
        kind = new["kind"]
        meta = dict(new["metadata"])
        key = object_key(kind, meta.get("namespace"), meta["name"])
        bucket = self._objects.get(kind, {})
        old = bucket.get(key)
        if old is None:
            raise ApiError(404, "NotFound", f'{kind.lower()}s "{meta["name"]}" not found')
        meta["resourceVersion"] = self._next_rv()
        new = dict(new)
        new["metadata"] = meta
        bucket[key] = new
        self._refile(kind, key, old, new)
        self._notify("update", kind, old, new)
        return new

    def patch(self, kind: str, namespace: str | None, name: str, merge: Obj) -> Obj:
        old = self.get(kind, namespace, name)
        if old is None:
            raise ApiError(404, "NotFound", f'{kind.lower()}s "{name}" not found')
        return self.update(merge_patch(old, merge))

    def remove(self, kind: str, namespace: str | None, name: str) -> Obj:
        key = object_key(kind, namespace, name)
        bucket = self._objects.get(kind, {})
        old = bucket.pop(key, None)
        if old is None:
            raise ApiError(404, "NotFound", f'{kind.lower()}s "{name}" not found')
        self._rv += 1
        self._refile(kind, key, old, None)
        self._notify("delete", kind, None, old)
        return old
