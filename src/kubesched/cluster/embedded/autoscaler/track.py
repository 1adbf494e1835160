"""Watchers for the cluster autoscaler: which pods are unschedulable, and how many nodes (per
node group) existed over time."""

from __future__ import annotations

from collections.abc import Callable

from kubesched.api.cluster_settings.autoscaler import NODE_GROUP_LABEL
from kubesched.cluster.embedded.apiserver.server import ApiServer
from kubesched.k8s.objects import Obj, is_terminal, key_of, split_key


def is_unschedulable(pod: Obj) -> bool:
    """Pending, unassigned, not being deleted, and marked ``PodScheduled=False/Unschedulable``."""
    if (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
        return False
    if is_terminal(pod):
        return False
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
               for c in (pod.get("status") or {}).get("conditions") or [])


class PodTracker:
    """Keys of unschedulable pods; calls ``on_unschedulable()`` when a pod becomes one (or its
    nomination changes) and ``on_gone(node)`` when a pod bound to ``node`` is deleted or finishes."""

    def __init__(self, on_unschedulable: Callable[[], None], on_gone: Callable[[str], None]) -> None:
        self._keys: dict[str, None] = {}
        self._on_unschedulable = on_unschedulable
        self._on_gone = on_gone

    def unschedulable(self, api: ApiServer) -> list[Obj]:
        out = []
        for key in sorted(self._keys):
            ns, name = split_key(key)
            pod = api.get("Pod", ns, name)
            if pod is not None and is_unschedulable(pod):
                out.append(pod)
        return out

    def _note(self, old: Obj | None, pod: Obj) -> None:
        key = key_of(pod)
        if is_unschedulable(pod):
            nominated_changed = old is not None and ((old.get("status") or {}).get("nominatedNodeName")
                                                     != (pod.get("status") or {}).get("nominatedNodeName"))
            if key not in self._keys or nominated_changed:
                self._keys[key] = None
                self._on_unschedulable()
        else:
            self._keys.pop(key, None)

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self._note(None, obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind != "Pod":
            return
        self._note(old, new)
        node = (new.get("spec") or {}).get("nodeName")
        if node and is_terminal(new) and not is_terminal(old):
            self._on_gone(node)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind != "Pod":
            return
        self._keys.pop(key_of(obj), None)
        node = (obj.get("spec") or {}).get("nodeName")
        if node:
            self._on_gone(node)


class NodeTracker:
    """Node counts over time, for the whole cluster (group ``None``) and per node group."""

    def __init__(self, clock: Callable[[], float], groups: list[str]) -> None:
        self._clock = clock
        self._members: dict[str | None, set[str]] = {None: set(), **{g: set() for g in groups}}
        self._series: dict[str | None, list[list[float]]] = {g: [[0.0, 0]] for g in self._members}

    def members(self, group: str | None) -> set[str]:
        return self._members.get(group, set())

    def _record(self, group: str | None) -> None:
        if group not in self._members:
            return
        now = round(self._clock(), 6)
        series = self._series[group]
        count = len(self._members[group])
        if series[-1][0] == now:
            series[-1][1] = count
            if len(series) > 1 and series[-2][1] == count:
                series.pop()
        elif series[-1][1] != count:
            series.append([now, count])

    def _group_of(self, node: Obj) -> str | None:
        group = (node["metadata"].get("labels") or {}).get(NODE_GROUP_LABEL)
        return group if group in self._members else None

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind != "Node":
            return
        name = obj["metadata"]["name"]
        for group in {None, self._group_of(obj)}:
            self._members[group].add(name)
            self._record(group)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        pass

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind != "Node":
            return
        name = obj["metadata"]["name"]
        for group in {None, self._group_of(obj)}:
            self._members[group].discard(name)
            self._record(group)

    def series(self, group: str | None) -> list[list[float]]:
        return [list(p) for p in self._series.get(group, [])]

    def node_hours(self, group: str | None, now: float) -> float:
        points = self._series.get(group, [])
        total = 0.0
        for (t0, n), (t1, _) in zip(points, [*points[1:], [now, 0]], strict=True):
            total += max(0.0, t1 - t0) * n
        return total / 3600.0
