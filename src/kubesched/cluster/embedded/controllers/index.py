"""The pod index shared by the workload controllers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubesched.cluster.embedded.controllers.util import PodKey, controller_ref, is_deleting, is_ready
from kubesched.k8s.objects import Obj, is_terminal, namespace_of

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster


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
class PodEntry:
    """What the index remembers of a pod."""

    owner: str
    uid: str
    rv: int
    terminal: bool
    deleting: bool
    ready: bool
    node: str

    @property
    def active(self) -> bool:
        return not self.terminal and not self.deleting


@dataclass(slots=True)
class OwnerPods:
    """The pods of one controller as the index knows them, with running counts."""

    keys: dict[PodKey, PodEntry] = field(default_factory=dict)
    active: int = 0
    ready: int = 0  # active and Ready
    by_node: dict[str, set[PodKey]] = field(default_factory=dict)

    def add(self, key: PodKey, entry: PodEntry) -> None:
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
        self.api = cluster.api
        self._owners: dict[str, OwnerPods] = {}
        self._entry: dict[PodKey, PodEntry] = {}
        cluster.api.watch(self)

    def note(self, pod: Obj) -> None:
        ref = controller_ref(pod)
        meta = pod["metadata"]
        key = (namespace_of(pod), meta["name"])
        rv = int(meta.get("resourceVersion") or 0)
        old = self._entry.get(key)
        if old is not None and old.rv > rv:
            return  # a stale event: the index already knows a newer object
        if old is not None:
            self._drop(key, old)
        if ref is None or not ref.get("uid"):
            return
        entry = PodEntry(
            ref["uid"], meta.get("uid", ""), rv, is_terminal(pod), is_deleting(pod), is_ready(pod), target_node(pod) or ""
        )
        self._entry[key] = entry
        self._owners.setdefault(entry.owner, OwnerPods()).add(key, entry)

    def _drop(self, key: PodKey, entry: PodEntry) -> None:
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
        current = self.api.get("Pod", namespace, name)
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
            pod = self.api.get("Pod", key[0], key[1])
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
            self.forget(namespace_of(obj), meta["name"], meta.get("uid", ""))
