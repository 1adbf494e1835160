"""Ping-pong avoidance between kubelet and scheduler (opt-in: ``spec.cluster.eviction.avoidPingPong``).

The Pod Preemption design (end of "Preemption - Eviction workflow"): a pod the scheduler placed may
be evicted by the kubelet right away because the node's eviction ranking prefers to keep another
pod; "scheduler should avoid the node and should try scheduling the pod on a different node if the
pod is evicted by the Kubelet". Upstream never built this into kube-scheduler; what 1.28 has instead
is the node-pressure taint (``node.kubernetes.io/memory-pressure:NoSchedule``), which only arrives
with the next node status update and so lets the replacement pod land on the same node once more.

We keep the scheduler unchanged and do it where the design's intent can be expressed with the API:
when the kubelet evicts a pod that had been running for at most ``window``, and the pod has a
controller, the controller's replacement pods created during the next ``duration`` get the node
pushed away in their node affinity, the way a mutating admission webhook would do it:

- ``mode: Preferred`` (default, the design's "should try a different node"): a
  ``preferredDuringSchedulingIgnoredDuringExecution`` term of weight 100 preferring every node
  *but* those (``matchFields metadata.name NotIn [...]``), so NodeAffinity scoring steers the pod
  away while the node stays feasible when nothing else fits;
- ``mode: Required``: the ``NotIn`` requirement is added to every required node selector term; the
  pod cannot go back to the node at all (pods created after ``duration`` are not affected, a pod
  created within it keeps the constraint for its whole life, as pod specs are immutable).

Mutated pods carry the annotation ``kubesched.io/avoided-nodes`` and are listed in the eviction
report under ``pingPongAvoidance``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesched.api.cluster_settings.eviction import PingPongSettings
from kubesched.k8s.objcopy import deep_copy
from kubesched.k8s.objects import Obj, key_of

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

AVOIDED_NODES_ANNOTATION = "kubesched.io/avoided-nodes"
PREFERENCE_WEIGHT = 100
NODE_NAME_FIELD = "metadata.name"


def controller_uid(pod: Obj) -> str | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("uid"):
            return str(ref["uid"])
    return None


def with_avoided_nodes(pod: Obj, nodes: list[str], mode: str) -> Obj:
    """A copy of ``pod`` whose node affinity avoids ``nodes`` (see the module docstring)."""
    new = deep_copy(pod)
    spec = new.setdefault("spec", {})
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    requirement = {"key": NODE_NAME_FIELD, "operator": "NotIn", "values": list(nodes)}
    if mode == "Required":
        required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
        terms: list[dict[str, Any]] = required.get("nodeSelectorTerms") or [{}]
        for term in terms:
            term["matchFields"] = [*(term.get("matchFields") or []), requirement]
        required["nodeSelectorTerms"] = terms
    else:
        preferred = node_affinity.setdefault("preferredDuringSchedulingIgnoredDuringExecution", [])
        preferred.append({"weight": PREFERENCE_WEIGHT, "preference": {"matchFields": [requirement]}})
    meta = new.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), AVOIDED_NODES_ANNOTATION: ",".join(nodes)}
    return new


class PingPongAvoidance:
    """Remembers recent early evictions per controller and rewrites the controller's new pods."""

    def __init__(self, cluster: EmbeddedCluster, settings: PingPongSettings) -> None:
        self.cluster = cluster
        self.settings = settings
        self._avoid: dict[str, dict[str, float]] = {}  # controller uid -> node -> until
        self.applied: list[dict[str, Any]] = []
        cluster.api.watch(self)

    def note_eviction(self, pod: Obj, node: str, started: float) -> None:
        now = self.cluster.now()
        owner = controller_uid(pod)
        if owner is None or now - started > self.settings.window:
            return
        self._avoid.setdefault(owner, {})[node] = now + self.settings.duration

    def _nodes_for(self, owner: str) -> list[str]:
        now = self.cluster.now()
        active = {n: until for n, until in self._avoid.get(owner, {}).items() if until > now}
        if active:
            self._avoid[owner] = active
        else:
            self._avoid.pop(owner, None)
        return sorted(active)

    # -- watch ---------------------------------------------------------------------------------
    def on_add(self, kind: str, obj: Obj) -> None:
        if kind != "Pod" or (obj.get("spec") or {}).get("nodeName"):
            return
        owner = controller_uid(obj)
        if owner is None or owner not in self._avoid:
            return
        nodes = self._nodes_for(owner)
        if not nodes:
            return
        self.cluster.api.rewrite_created_pod(with_avoided_nodes(obj, nodes, self.settings.mode))
        self.applied.append({"time": round(self.cluster.now(), 6), "pod": key_of(obj), "nodes": nodes,
                             "mode": self.settings.mode})

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        pass

    def on_delete(self, kind: str, obj: Obj) -> None:
        pass
