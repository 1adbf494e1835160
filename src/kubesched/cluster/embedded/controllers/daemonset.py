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
from kubesched.cluster.embedded.controllers.base import (
    Controller,
    creation_time,
    is_active,
    is_deleting,
    is_ready,
    is_terminal,
    obj_key,
    pod_from_template,
)
from kubesched.cluster.embedded.controllers.replicaset import template_hash
from kubesched.cluster.objcopy import deep_copy
from kubesched.cluster.protocol import Obj

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


def target_node(pod: Obj) -> str | None:
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {})
    for term in required.get("nodeSelectorTerms") or []:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or []) == 1:
                return str(f["values"][0])
    return None


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


class DaemonSetController(Controller):
    kind = "DaemonSet"

    def handle(self, kind: str, old: Obj | None, new: Obj) -> None:
        if kind == "Node":
            if old is None or old.get("spec") != new.get("spec") or (old.get("metadata") or {}).get(
                "labels"
            ) != (new.get("metadata") or {}).get("labels"):
                self._enqueue_every_daemonset()
            return
        super().handle(kind, old, new)

    def handle_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Node":
            self._enqueue_every_daemonset()
            return
        super().handle_delete(kind, obj)

    def _enqueue_every_daemonset(self) -> None:
        self.enqueue_all(sorted(obj_key(ds) for ds in self.store.iter("DaemonSet")))

    def _new_pod(self, ds: Obj, node_name: str) -> Obj:
        ns = ds["metadata"].get("namespace") or "default"
        name, generate_name = self.random_name(ns, ds["metadata"]["name"])
        revision = template_hash((ds.get("spec") or {}).get("template") or {})
        pod = pod_from_template(ds, name, generate_name=generate_name, labels={REVISION_LABEL: revision})
        add_daemon_tolerations(pod["spec"])
        pin_to_node(pod["spec"], node_name)
        return pod

    def sync(self, key: str) -> None:
        ds = self.get(key)
        if ds is None:
            return
        nodes = sorted(self.store.iter("Node"), key=lambda n: n["metadata"]["name"])
        by_node: dict[str, list[Obj]] = {}
        for pod in self.index.pods(ds["metadata"]["uid"]):
            by_node.setdefault(target_node(pod) or "", []).append(pod)
        stats = {"desired": 0, "scheduled": 0, "misscheduled": 0, "ready": 0}
        for node in nodes:
            node_name = node["metadata"]["name"]
            run, keep = should_run(ds, node)
            pods = by_node.pop(node_name, [])
            stats["desired"] += run
            if run and not pods:
                if not self.is_blocked(key):
                    self.create_pod(key, self._new_pod(ds, node_name))
                continue
            if not keep:
                stats["misscheduled"] += any(is_active(p) for p in pods)
                for pod in pods:
                    if not is_deleting(pod):
                        self.delete_pod(pod)
                continue
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
            if running:
                stats["scheduled"] += 1
                stats["ready"] += is_ready(running[0])
        for pods in by_node.values():  # pods for nodes that are gone
            for pod in pods:
                self.delete_pod(pod, grace=0)
        current = self.get(key)
        if current is None:
            return
        self.update_status(
            current,
            {
                "desiredNumberScheduled": stats["desired"],
                "currentNumberScheduled": stats["scheduled"],
                "numberMisscheduled": stats["misscheduled"],
                "numberReady": stats["ready"],
                "numberAvailable": stats["ready"],
                "updatedNumberScheduled": stats["scheduled"],
            },
        )
