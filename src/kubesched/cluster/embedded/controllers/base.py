"""Shared machinery of the embedded controllers.

Every controller is *level-triggered*: a watch event only puts a key (``namespace/name`` of the
object to reconcile) on the controller's queue, and ``sync(key)`` reads the current state from the
API server. The queue is drained at once, but never re-entrantly: a write made while syncing may
deliver events synchronously (outside a watch dispatch), and those only enqueue keys that the
running drain picks up afterwards. This keeps runs deterministic and ordering intact.

Pods a controller creates go through ``cluster.create`` (admission, quota). When a create is refused
the owner's key is remembered as *blocked* and synced again when something that could change the
answer happens: a quota's usage goes down, its limits go up, a quota appears or goes, a
PriorityClass is created.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kubesched.cluster.embedded.apiserver.quota import quota_hard, quota_used
from kubesched.cluster.embedded.controllers.index import PodIndex
from kubesched.cluster.embedded.controllers.util import (
    MAX_GENERATE_NAME_BASE,
    NAME_ALPHABET,
    controller_ref,
    is_deleting,
    is_ready,
)
from kubesched.k8s.memo import IdentityMemo
from kubesched.k8s.objects import (
    ApiError,
    Obj,
    is_terminal,
    key_of,
    namespace_of,
    object_key,
    split_key,
)

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster


def _flags_of(pod: Obj) -> tuple[Any, ...]:
    return (is_terminal(pod), is_deleting(pod), is_ready(pod), controller_ref(pod))


#: what the workload controllers look at in a pod, worked out once per delivered object (every
#: controller is told of the same objects)
_pod_flags: IdentityMemo[Obj, tuple[Any, ...]] = IdentityMemo(_flags_of, 64)


def _quota_relaxed(old: Obj, new: Obj) -> bool:
    """Whether a quota update may let a refused pod in now: a limit went up or usage went down."""
    old_used, new_used = quota_used(old), quota_used(new)
    old_hard, new_hard = quota_hard(old), quota_hard(new)
    if old_hard.keys() != new_hard.keys() or any(new_hard[k] > old_hard[k] for k in new_hard):
        return True
    return any(new_used.get(k, 0) < v for k, v in old_used.items())


class Controller:
    """Base class: a work queue of ``namespace/name`` keys and the create/delete helpers."""

    #: the kind this controller reconciles
    kind = ""

    def __init__(self, cluster: EmbeddedCluster, index: PodIndex) -> None:
        self.cluster = cluster
        self.api = cluster.api
        self.index = index
        self._queue: dict[str, None] = {}
        self._busy = False
        self._blocked: set[str] = set()
        cluster.api.watch(self)

    # -- queue ---------------------------------------------------------------------------------
    def enqueue(self, key: str) -> None:
        self._queue[key] = None
        if self._busy:
            return
        self._busy = True
        try:
            while self._queue:
                next_key = next(iter(self._queue))
                del self._queue[next_key]
                self.sync(next_key)
        finally:
            self._busy = False

    def enqueue_all(self, keys: Iterable[str]) -> None:
        for key in list(keys):
            self.enqueue(key)

    def is_blocked(self, key: str) -> bool:
        return key in self._blocked

    def wake_blocked(self) -> None:
        keys = sorted(self._blocked)
        self._blocked.clear()
        self.enqueue_all(keys)

    def sync(self, key: str) -> None:
        raise NotImplementedError

    # -- events ----------------------------------------------------------------------------------
    def on_add(self, kind: str, obj: Obj) -> None:
        if kind in ("ResourceQuota", "PriorityClass") and self._blocked:
            self.wake_blocked()
        self.handle(kind, None, obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "ResourceQuota" and self._blocked and _quota_relaxed(old, new):
            self.wake_blocked()
        self.handle(kind, old, new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "ResourceQuota" and self._blocked:
            self.wake_blocked()
        self.handle_delete(kind, obj)

    def handle(self, kind: str, old: Obj | None, new: Obj) -> None:
        """An add (``old`` None) or update of any kind."""
        if kind == self.kind and (old is None or old.get("spec") != new.get("spec")):
            self._blocked.discard(key_of(new))
            self.enqueue(key_of(new))
        elif kind == "Pod":
            if old is not None and _pod_flags(old) == _pod_flags(new):
                return  # nothing a workload controller looks at changed (e.g. a binding)
            self.pod_changed(new)

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind == self.kind:
            self.delete_dependents(obj)
        elif kind == "Pod":
            self.pod_changed(obj)

    def pod_changed(self, pod: Obj) -> None:
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == self.kind:
            self.enqueue(object_key(self.kind, namespace_of(pod), ref["name"]))

    def delete_dependents(self, owner: Obj) -> None:
        """Garbage collection (background propagation): delete the pods ``owner`` controlled."""
        for pod in sorted(self.index.pods(owner["metadata"]["uid"]), key=lambda p: p["metadata"]["name"]):
            self.delete_pod(pod)

    # -- writes ----------------------------------------------------------------------------------
    def get(self, key: str) -> Obj | None:
        ns, name = split_key(key)
        return self.api.get(self.kind, ns, name)

    def random_name(self, namespace: str, base: str) -> tuple[str, str]:
        """``(name, generateName)``: ``base-`` plus 5 random characters from the cluster's rng,
        avoiding names of existing pods."""
        prefix = f"{base}-"[:MAX_GENERATE_NAME_BASE]
        while True:
            idx = self.cluster.rng.integers(0, len(NAME_ALPHABET), size=5)
            name = prefix + "".join(NAME_ALPHABET[int(i)] for i in idx)
            if self.api.get("Pod", namespace, name) is None:
                return name, prefix

    def create_pod(self, key: str, pod: Obj) -> Obj | None:
        """``cluster.create`` (admission included). A refusal marks ``key`` blocked: no further
        attempt (None is returned at once) until :meth:`wake_blocked` or a spec change."""
        if key in self._blocked:
            return None
        created = self.cluster.create(pod)
        if created is None:
            self._blocked.add(key)
            return None
        self.index.note(created)
        return created

    def delete_pod(self, pod: Obj, grace: int | None = None) -> None:
        meta = pod["metadata"]
        ns = namespace_of(pod)
        try:
            self.cluster.delete("Pod", ns, meta["name"], grace)
        except ApiError:
            pass  # already gone
        self.index.refresh(ns, meta["name"], meta.get("uid", ""))

    def update_status(self, obj: Obj, fields: dict[str, Any]) -> Obj:
        """Merge ``fields`` into ``obj``'s status; write only if something changed."""
        status = dict(obj.get("status") or {})
        merged = {**status, **fields}
        if merged == status:
            return obj
        return self.api.update({**obj, "status": merged})
