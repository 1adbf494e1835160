"""DaemonSet controller.

One pod per node that should run it: the node matches the template's ``nodeName`` (if set),
``nodeSelector`` and required node affinity, and every NoSchedule/NoExecute taint is tolerated by
the template's tolerations plus the standard DaemonSet ones. A node whose only untolerated taints
are NoSchedule keeps an existing pod but gets no new one.

Pods are ``<ds>-<5 random characters>``; they are left to the scheduler with the required node
affinity ``matchFields metadata.name In [<node>]`` (replacing the template's required terms, which
were already checked against the node) and the tolerations
``node.kubernetes.io/{not-ready,unreachable}:NoExecute`` and
``node.kubernetes.io/{disk-pressure,memory-pressure,pid-pressure,unschedulable}:NoSchedule``
(plus ``network-unavailable:NoSchedule`` for host-network pods).

Finished pods are deleted (and replaced on the next sync); extra pods on a node are deleted
keeping the oldest; pods on nodes that should not run them are deleted; pods for nodes that no
longer exist are deleted at once (upstream the pod GC does that for bound pods).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.selectors import pod_matches_node_selector_and_affinity
from kubesched.api.tolerations import find_untolerated_taint
from kubesched.cluster.embedded.controllers.base import Controller
from kubesched.cluster.embedded.controllers.index import target_node
from kubesched.cluster.embedded.controllers.replicaset import template_hash
from kubesched.cluster.embedded.controllers.util import (
    controller_ref,
    creation_time,
    is_active,
    is_deleting,
    is_ready,
    pod_from_template,
)
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import Obj, is_terminal, key_of, namespace_of, object_key

REVISION_LABEL = "controller-revision-hash"


def _toleration(key: str, effect: str) -> dict[str, str]:
    return {"key": key, "operator": "Exists", "effect": effect}


def add_daemon_tolerations(spec: dict[str, Any]) -> None:
    """Add (or replace) the DaemonSet tolerations in a pod spec, in place."""
    wanted = [
        _toleration("node.kubernetes.io/not-ready", "NoExecute"),
        _toleration("node.kubernetes.io/unreachable", "NoExecute"),
        _toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
        _toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
        _toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
        _toleration("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    if spec.get("hostNetwork"):
        wanted.append(_toleration("node.kubernetes.io/network-unavailable", "NoSchedule"))
    tolerations = [dict(t) for t in spec.get("tolerations") or []]
    for tol in wanted:
        same = [
            i
            for i, t in enumerate(tolerations)
            if all((t.get(f) or "") == (tol.get(f) or "") for f in ("key", "effect", "operator", "value"))
        ]
        if same:
            if tolerations[same[0]] != tol:
                tolerations = [tol if i in same else t for i, t in enumerate(tolerations)]
        else:
            tolerations.append(tol)
    spec["tolerations"] = tolerations


def pin_to_node(spec: dict[str, Any], node_name: str) -> None:
    """Required node affinity ``metadata.name In [node]``, replacing any required terms, in place."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    affinity = dict(spec.get("affinity") or {})
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    required = dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    required["nodeSelectorTerms"] = [term]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity


def should_run(ds: Obj, node: Obj) -> tuple[bool, bool]:
    """``(should run, should continue running)`` of a DaemonSet's pod on ``node``."""
    template = (ds.get("spec") or {}).get("template") or {}
    spec = deep_copy(template.get("spec") or {})
    if spec.get("nodeName") and spec["nodeName"] != node["metadata"]["name"]:
        return False, False
    add_daemon_tolerations(spec)
    probe = {"spec": spec}
    if not pod_matches_node_selector_and_affinity(probe, node):
        return False, False
    taints = (node.get("spec") or {}).get("taints") or []
    if find_untolerated_taint(taints, spec["tolerations"]) is not None:
        return False, find_untolerated_taint(taints, spec["tolerations"], ("NoExecute",)) is None
    return True, True


_Stats = tuple[int, int, int, int]  # desired, scheduled, misscheduled, ready
_ZERO: _Stats = (0, 0, 0, 0)


class DaemonSetController(Controller):
    """Keys are ``ns/name`` (every node) or ``ns/name|node`` (one node: a pod or node event)."""

    kind = "DaemonSet"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fits: dict[str, dict[str, tuple[bool, bool]]] = {}  # ds uid -> node -> should_run()
        self._stats: dict[str, dict[str, _Stats]] = {}  # ds uid -> node -> stats
        self._totals: dict[str, list[int]] = {}

    def handle(self, kind: str, old: Obj | None, new: Obj) -> None:
        if kind == "Node":
            if old is None or old.get("spec") != new.get("spec") or (old.get("metadata") or {}).get(
                "labels"
            ) != (new.get("metadata") or {}).get("labels"):
                self._node_changed(new["metadata"]["name"])
            return
        if kind == self.kind and (old is None or old.get("spec") != new.get("spec")):
            self._fits.pop(new["metadata"]["uid"], None)
        super().handle(kind, old, new)

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Node":
            self._node_changed(obj["metadata"]["name"])
            return
        if kind == self.kind:
            uid = obj["metadata"]["uid"]
            for cache in (self._fits, self._stats, self._totals):
                cache.pop(uid, None)  # type: ignore[attr-defined]
        super().handle_delete(kind, obj)

    def pod_changed(self, pod: Obj) -> None:
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == self.kind:
            self.enqueue(f"{object_key(self.kind, namespace_of(pod), ref['name'])}|{target_node(pod) or ''}")

    def _node_changed(self, node_name: str) -> None:
        keys = []
        for ds in self.api.iter("DaemonSet"):
            self._fits.get(ds["metadata"]["uid"], {}).pop(node_name, None)
            keys.append(f"{key_of(ds)}|{node_name}")
        self.enqueue_all(sorted(keys))

    def _new_pod(self, ds: Obj, node_name: str) -> Obj:
        ns = namespace_of(ds)
        name, generate_name = self.random_name(ns, ds["metadata"]["name"])
        revision = template_hash((ds.get("spec") or {}).get("template") or {})
        pod = pod_from_template(ds, name, generate_name=generate_name, labels={REVISION_LABEL: revision})
        add_daemon_tolerations(pod["spec"])
        pin_to_node(pod["spec"], node_name)
        return pod

    def sync(self, key: str) -> None:
        ds_key, _, node_name = key.partition("|")
        ds = self.get(ds_key)
        if ds is None:
            return
        uid = ds["metadata"]["uid"]
        if key == ds_key:
            names = {n["metadata"]["name"] for n in self.api.iter("Node")}
            names.update(self.index.owned(uid).by_node)
            for name in sorted(names):
                self._sync_node(ds_key, ds, name)
        else:
            self._sync_node(ds_key, ds, node_name)
        current = self.get(ds_key)
        totals = self._totals.get(uid, [0, 0, 0, 0])
        if current is not None:
            self.update_status(
                current,
                {
                    "desiredNumberScheduled": totals[0],
                    "currentNumberScheduled": totals[1],
                    "numberMisscheduled": totals[2],
                    "numberReady": totals[3],
                    "numberAvailable": totals[3],
                    "updatedNumberScheduled": totals[1],
                },
            )

    def _sync_node(self, key: str, ds: Obj, node_name: str) -> None:
        uid = ds["metadata"]["uid"]
        node = self.api.get("Node", None, node_name) if node_name else None
        pods = self.index.pods(uid, node_name)
        stats = _ZERO
        if node is None:
            for pod in pods:  # the node is gone (or the pod names none)
                self.delete_pod(pod, grace=0)
        else:
            fits = self._fits.setdefault(uid, {})
            if node_name not in fits:
                fits[node_name] = should_run(ds, node)
            run, keep = fits[node_name]
            stats = self._reconcile_node(key, ds, node_name, pods, run, keep)
        per_node = self._stats.setdefault(uid, {})
        old = per_node.get(node_name, _ZERO)
        if stats != old:
            totals = self._totals.setdefault(uid, [0, 0, 0, 0])
            for i in range(4):
                totals[i] += stats[i] - old[i]
            if stats == _ZERO:
                per_node.pop(node_name, None)
            else:
                per_node[node_name] = stats

    def _reconcile_node(self, key: str, ds: Obj, node_name: str, pods: list[Obj], run: bool, keep: bool) -> _Stats:
        if run and not pods:
            if not self.is_blocked(key):
                self.create_pod(key, self._new_pod(ds, node_name))
            return (1, 0, 0, 0)
        if not keep:
            misscheduled = int(any(is_active(p) for p in pods))
            for pod in pods:
                if not is_deleting(pod):
                    self.delete_pod(pod)
            return (int(run), 0, misscheduled, 0)
        running = []
        for pod in pods:
            if is_deleting(pod):
                continue
            if is_terminal(pod):
                self.delete_pod(pod)
            else:
                running.append(pod)
        running.sort(key=lambda p: (creation_time(p), p["metadata"].get("uid", "")))
        for extra in running[1:]:
            self.delete_pod(extra)
        if not running:
            return (int(run), 0, 0, 0)
        return (int(run), 1, 0, int(is_ready(running[0])))
