"""The informers' caches (what upstream's listers read) and the change events they produce.

One lock guards every kind's cache. An informer applies a watch event or a relist under it, and
the resulting add/update/delete notifications are handed to the sink while the lock is still held,
so the order of notifications is the order of cache states. The sink only enqueues; the scheduling
thread applies them later (see :class:`~kubesched.cluster.kube.cluster.KubeCluster`).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kubesched.cluster.kube.resources import Resource
from kubesched.k8s.journal import ChangeJournal
from kubesched.k8s.objects import Obj, object_key

#: (event, kind, old, new) with event one of "add", "update", "delete"; for "delete", ``new`` is
#: the last known state of the object and ``old`` is None
Change = tuple[str, str, Obj | None, Obj]
Sink = Callable[[Change], None]


def _meta(obj: Obj) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata") or {}
    return meta


def prepare(resource: Resource, obj: Obj) -> Obj:
    """Make a decoded object look like the embedded store's: kind and apiVersion set (list items
    come without them), managedFields dropped (upstream's informer transform does the same)."""
    obj.setdefault("kind", resource.kind)
    obj.setdefault("apiVersion", resource.api_version)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


class InformerCache:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._objects: dict[str, dict[str, Obj]] = {}
        self._sink: Sink | None = None
        self._journal = ChangeJournal()

    def set_sink(self, sink: Sink | None) -> None:
        with self.lock:
            self._sink = sink

    def _emit(self, change: Change) -> None:
        if self._sink is not None:
            self._sink(change)

    # -- reading (listers) -----------------------------------------------------------------
    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj | None:
        with self.lock:
            return self._objects.get(resource.kind, {}).get(object_key(resource.kind, namespace, name))

    def list(self, kind: str) -> list[Obj]:
        with self.lock:
            return list(self._objects.get(kind, {}).values())

    def changes(self, kind: str, since: int | None) -> tuple[int, builtins.list[str] | None]:
        """See :meth:`ChangeJournal.since <kubesched.k8s.journal.ChangeJournal.since>`."""
        with self.lock:
            return self._journal.since(kind, since)

    def count(self, kind: str) -> int:
        with self.lock:
            return len(self._objects.get(kind, {}))

    # -- writing (informers) ---------------------------------------------------------------
    def _put(self, resource: Resource, key: str, obj: Obj) -> None:
        bucket = self._objects.setdefault(resource.kind, {})
        old = bucket.get(key)
        bucket[key] = obj
        self._journal.note(resource.kind, key, len(bucket))
        if old is None:
            self._emit(("add", resource.kind, None, obj))
        elif _meta(old).get("uid") != _meta(obj).get("uid"):
            # the object was deleted and re-created under the same name while we were not looking
            self._emit(("delete", resource.kind, None, old))
            self._emit(("add", resource.kind, None, obj))
        elif _meta(old).get("resourceVersion") != _meta(obj).get("resourceVersion"):
            self._emit(("update", resource.kind, old, obj))

    def apply(self, resource: Resource, event_type: str, obj: Obj) -> None:
        """Apply one watch event. Replays of what the cache already holds (same resourceVersion)
        and deletes of unknown objects change nothing, so a resumed watch never duplicates."""
        meta = _meta(obj)
        key = object_key(resource.kind, meta.get("namespace"), str(meta.get("name")))
        with self.lock:
            if event_type == "DELETED":
                bucket = self._objects.get(resource.kind, {})
                old = bucket.get(key)
                if old is None or _meta(old).get("uid") != meta.get("uid"):
                    return
                del bucket[key]
                self._journal.note(resource.kind, key, len(bucket))
                self._emit(("delete", resource.kind, None, obj))
            else:
                self._put(resource, key, obj)

    def replace(self, resource: Resource, objs: Iterable[Obj]) -> None:
        """Apply a full list: adds and updates for what changed, deletes for what vanished (the
        relist after a 410 must synthesise the deletes the lost watch events would have carried)."""
        fresh: dict[str, Obj] = {}
        for obj in objs:
            meta = _meta(obj)
            fresh[object_key(resource.kind, meta.get("namespace"), str(meta.get("name")))] = obj
        with self.lock:
            bucket = self._objects.setdefault(resource.kind, {})
            for key in [k for k in bucket if k not in fresh]:
                gone = bucket.pop(key)
                self._journal.note(resource.kind, key, len(bucket))
                self._emit(("delete", resource.kind, None, gone))
            for key, obj in fresh.items():
                self._put(resource, key, obj)
