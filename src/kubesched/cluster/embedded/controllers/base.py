"""Shared machinery of the embedded controllers.

Every controller is *level-triggered*: a watch event only puts a key (``namespace/name`` of the
object to reconcile) on the controller's queue, and ``sync(key)`` reads the current state from the
store. The queue is drained at once, but never re-entrantly: a write made while syncing may
deliver events synchronously (outside a store dispatch), and those only enqueue keys that the
running drain picks up afterwards. This keeps runs deterministic and ordering intact.

Pods a controller creates go through ``cluster.create`` (admission, quota). When a create is refused
the owner's key is remembered as *blocked* and synced again when something that could change the
answer happens: a quota's usage goes down, its limits go up, a quota appears or goes, a
PriorityClass is created.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.cluster.objcopy import deep_copy
from kubesched.cluster.protocol import ApiError, Obj
from kubesched.timefmt import parse_rfc3339

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

#: the alphabet of generated name suffixes (no vowels, no look-alikes)
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATE_NAME_BASE = 58  # 63 minus the 5 random characters
TERMINAL_PHASES = ("Succeeded", "Failed")

PodKey = tuple[str, str]


def split_key(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return ns, name


def obj_key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def controller_ref(obj: Obj) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def owner_reference(owner: Obj) -> dict[str, Any]:
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def is_deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def is_active(pod: Obj) -> bool:
    """Neither terminal nor being deleted (upstream ``FilterActivePods``)."""
    return not is_terminal(pod) and not is_deleting(pod)


def ready_condition(pod: Obj) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return dict(cond)
    return None


def is_ready(pod: Obj) -> bool:
    cond = ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def is_running_and_ready(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and is_ready(pod)


def creation_time(obj: Obj) -> float:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    return parse_rfc3339(ts) if ts else 0.0


def replicas_of(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def pod_from_template(
    owner: Obj, name: str, *, generate_name: str | None = None, labels: dict[str, str] | None = None
) -> Obj:
    """A pod for ``owner``'s ``spec.template``: template labels/annotations (plus ``labels``), the
    owner as controller, the owner's namespace."""
    template = (owner.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": owner["metadata"].get("namespace") or "default",
        "labels": {**(tmeta.get("labels") or {}), **(labels or {})},
        "ownerReferences": [owner_reference(owner)],
    }
    if generate_name:
        meta["generateName"] = generate_name
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": deep_copy(template.get("spec") or {}),
    }


def target_node(pod: Obj) -> str | None:
    """``spec.nodeName``, else the single node a DaemonSet pod's required affinity pins it to."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    for term in (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []:
        for f in term.get("matchFields") or []:
            values = f.get("values") or []
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return None


@dataclass(slots=True)
class _Entry:
    owner: str
    uid: str
    rv: int
    active: bool
    ready: bool
    node: str


@dataclass(slots=True)
class OwnerPods:
    """The pods of one controller as the index knows them, with running counts."""

    keys: dict[PodKey, _Entry] = field(default_factory=dict)
    active: int = 0
    ready: int = 0  # active and Ready
    by_node: dict[str, set[PodKey]] = field(default_factory=dict)

    def add(self, key: PodKey, entry: _Entry) -> None:
        self.keys[key] = entry
        self.active += entry.active
        self.ready += entry.active and entry.ready
        self.by_node.setdefault(entry.node, set()).add(key)

    def remove(self, key: PodKey) -> None:
        entry = self.keys.pop(key)
        self.active -= entry.active
        self.ready -= entry.active and entry.ready
        keys = self.by_node.get(entry.node)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self.by_node[entry.node]


_NO_PODS = OwnerPods()


class PodIndex:
    """Pods by the UID of their controller, with per-owner counts of active and ready pods and a
    per-node view. Kept up to date from watch events *and* from the controllers' own writes (the
    events of writes made inside a dispatch arrive later); :meth:`pods` returns the objects as the
    store has them now."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.store = cluster.store
        self._owners: dict[str, OwnerPods] = {}
        self._entry: dict[PodKey, _Entry] = {}
        cluster.store.watch(self)

    def note(self, pod: Obj) -> None:
        ref = controller_ref(pod)
        meta = pod["metadata"]
        key = (meta.get("namespace") or "default", meta["name"])
        rv = int(meta.get("resourceVersion") or 0)
        old = self._entry.get(key)
        if old is not None and old.rv > rv:
            return  # a stale event: the index already knows a newer object
        if old is not None:
            self._drop(key, old)
        if ref is None or not ref.get("uid"):
            return
        entry = _Entry(ref["uid"], meta.get("uid", ""), rv, is_active(pod), is_ready(pod), target_node(pod) or "")
        self._entry[key] = entry
        self._owners.setdefault(entry.owner, OwnerPods()).add(key, entry)

    def _drop(self, key: PodKey, entry: _Entry) -> None:
        del self._entry[key]
        owner = self._owners.get(entry.owner)
        if owner is not None:
            owner.remove(key)
            if not owner.keys:
                del self._owners[entry.owner]

    def forget(self, namespace: str, name: str, uid: str) -> None:
        key = (namespace, name)
        entry = self._entry.get(key)
        if entry is not None and entry.uid == uid:
            self._drop(key, entry)

    def refresh(self, namespace: str, name: str, uid: str) -> None:
        """Re-read one pod after a write of our own (delete): note or forget it."""
        current = self.store.get("Pod", namespace, name)
        if current is None or current["metadata"].get("uid") != uid:
            self.forget(namespace, name, uid)
        else:
            self.note(current)

    def owned(self, owner_uid: str) -> OwnerPods:
        return self._owners.get(owner_uid, _NO_PODS)

    def pods(self, owner_uid: str, node: str | None = None) -> list[Obj]:
        owned = self.owned(owner_uid)
        keys = owned.keys if node is None else sorted(owned.by_node.get(node, ()))
        out = []
        for key in keys:
            pod = self.store.get("Pod", key[0], key[1])
            if pod is not None and pod["metadata"].get("uid") == owned.keys[key].uid:
                out.append(pod)
        return out

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self.note(obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "Pod":
            self.note(new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            meta = obj["metadata"]
            self.forget(meta.get("namespace") or "default", meta["name"], meta.get("uid", ""))


def _quota_relaxed(old: Obj, new: Obj) -> bool:
    from kubesched.cluster.embedded.quota import quota_hard, quota_used

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
        self.store = cluster.store
        self.index = index
        self._queue: dict[str, None] = {}
        self._busy = False
        self._blocked: set[str] = set()
        cluster.store.watch(self)

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
        if kind in ("ResourceQuota", "PriorityClass"):
            self.wake_blocked()
        self.handle(kind, None, obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "ResourceQuota" and _quota_relaxed(old, new):
            self.wake_blocked()
        self.handle(kind, old, new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "ResourceQuota":
            self.wake_blocked()
        self.handle_delete(kind, obj)

    def handle(self, kind: str, old: Obj | None, new: Obj) -> None:
        """An add (``old`` None) or update of any kind."""
        if kind == self.kind and (old is None or old.get("spec") != new.get("spec")):
            self._blocked.discard(obj_key(new))
            self.enqueue(obj_key(new))
        elif kind == "Pod":
            self.pod_changed(new)

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind == self.kind:
            self.delete_dependents(obj)
        elif kind == "Pod":
            self.pod_changed(obj)

    def pod_changed(self, pod: Obj) -> None:
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == self.kind:
            self.enqueue(f"{pod['metadata'].get('namespace') or 'default'}/{ref['name']}")

    def delete_dependents(self, owner: Obj) -> None:
        """Garbage collection (background propagation): delete the pods ``owner`` controlled."""
        for pod in sorted(self.index.pods(owner["metadata"]["uid"]), key=lambda p: p["metadata"]["name"]):
            self.delete_pod(pod)

    # -- writes ----------------------------------------------------------------------------------
    def get(self, key: str) -> Obj | None:
        ns, name = split_key(key)
        return self.store.get(self.kind, ns, name)

    def random_name(self, namespace: str, base: str) -> tuple[str, str]:
        """``(name, generateName)``: ``base-`` plus 5 random characters from the cluster's rng,
        avoiding names of existing pods."""
        prefix = f"{base}-"[:MAX_GENERATE_NAME_BASE]
        while True:
            idx = self.cluster.rng.integers(0, len(NAME_ALPHABET), size=5)
            name = prefix + "".join(NAME_ALPHABET[int(i)] for i in idx)
            if self.store.get("Pod", namespace, name) is None:
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
        ns = meta.get("namespace") or "default"
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
        return self.store.update({**obj, "status": merged})
