"""The cluster autoscaler's nodes from the moment they are asked of the cloud provider to the moment
they are gone: what :mod:`.autoscaler` decides, carried out here.

A node asked for (:meth:`NodeLifecycle.request`) is registered ``scaleUpDelay`` later (NotReady,
tainted ``node.kubernetes.io/not-ready:NoSchedule``) and becomes Ready ``nodeStartupTime`` after
that; until it is registered it is *upcoming*, billed but not in ``nodeCount``. A node removed
(:meth:`NodeLifecycle.remove`) is tainted ``ToBeDeletedByClusterAutoscaler:NoSchedule``, its pods
are deleted (grace capped at ``maxGracefulTerminationSec``; events ``ScaleDown``), and the Node is
deleted once they are gone. Events ``NodeAdded``, ``NodeReady`` and ``NodeRemoved`` are recorded
with pod ``Node/<name>``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from kubesched.api.cluster_settings.autoscaler import AutoscalerConfig, NodeGroup
from kubesched.cluster.embedded.autoscaler.nodes import NOT_READY_TAINT, TO_BE_DELETED_TAINT
from kubesched.cluster.embedded.controllers.util import is_daemonset_pod, is_mirror_pod
from kubesched.k8s.objects import ApiError, Obj, is_terminal, key_of
from kubesched.k8s.timefmt import rfc3339

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster


class NodeLifecycle:
    """The autoscaler's nodes being provisioned, starting and removed."""

    def __init__(self, cluster: EmbeddedCluster, config: AutoscalerConfig) -> None:
        self.cluster = cluster
        self.config = config
        self.upcoming: dict[str, NodeGroup] = {}  # decided, not yet registered
        self.requested_at: dict[str, float] = {}  # upcoming node -> when it was asked of the cloud
        self.provisioning_seconds = 0.0  # asked for, not yet registered: billed, not in nodeCount
        self.drains: set[str] = set()  # non-empty nodes being drained
        self.starting: set[str] = set()  # registered, not yet Ready
        self.draining: dict[str, float] = {}
        self._names: dict[str, int] = {}

    def next_name(self, group: NodeGroup) -> str:
        while True:
            self._names[group.name] = self._names.get(group.name, 0) + 1
            name = f"{group.name}-{self._names[group.name]}"
            if name not in self.upcoming and self.cluster.api.get("Node", None, name) is None:
                return name

    def request(self, group: NodeGroup, now: float) -> None:
        """Ask the cloud provider for a node of ``group``: it registers ``scaleUpDelay`` later."""
        name = self.next_name(group)
        self.upcoming[name] = group
        self.requested_at[name] = now
        self.cluster.loop.call_later(group.scale_up_delay, functools.partial(self.register, name, group))

    def provisioning(self, now: float) -> float:
        """Seconds of nodes asked for and not (or not yet) registered, up to ``now``."""
        return self.provisioning_seconds + sum(now - t for t in self.requested_at.values())

    # -- starting ----------------------------------------------------------------------------------
    def register(self, name: str, group: NodeGroup, initial: bool = False) -> None:
        self.upcoming.pop(name, None)
        asked = self.requested_at.pop(name, None)
        if asked is not None:
            self.provisioning_seconds += self.cluster.now() - asked
        node = group.node_object(name)
        now = rfc3339(self.cluster.now())
        ready = initial or group.node_startup_time <= 0
        status = node.setdefault("status", {})
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False",
                                 "reason": "KubeletReady" if ready else "KubeletNotReady",
                                 "lastTransitionTime": now}]
        if not ready:
            spec = node.setdefault("spec", {})
            spec["taints"] = [*(spec.get("taints") or []), {"key": NOT_READY_TAINT, "effect": "NoSchedule"}]
        if self.cluster.create(node) is None:
            return
        if not initial:
            self.cluster.log.record("NodeAdded", f"Node/{name}", node=name, message=f"node group {group.name}")
        if not ready:
            self.starting.add(name)
            self.cluster.loop.call_later(group.node_startup_time, lambda: self._ready(name))
        elif not initial:
            self.cluster.log.record("NodeReady", f"Node/{name}", node=name)

    def _ready(self, name: str) -> None:
        self.starting.discard(name)
        node = self.cluster.api.get("Node", None, name)
        if node is None:
            return
        spec = dict(node.get("spec") or {})
        spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != NOT_READY_TAINT]
        if not spec["taints"]:
            del spec["taints"]
        status = dict(node.get("status") or {})
        status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"] + [
            {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "lastTransitionTime": rfc3339(self.cluster.now())}]
        self.cluster.api.update({**node, "spec": spec, "status": status})
        self.cluster.log.record("NodeReady", f"Node/{name}", node=name)

    # -- removal -----------------------------------------------------------------------------------
    def remove(self, name: str) -> Obj | None:
        """Start removing the node: taint it and delete its pods; the Node goes once they are gone.
        Returns the node as it was (None: no such node)."""
        node = self.cluster.api.get("Node", None, name)
        if node is None:
            return None
        now = self.cluster.now()
        self.draining[name] = now
        spec = dict(node.get("spec") or {})
        spec["taints"] = [*(spec.get("taints") or []),
                          {"key": TO_BE_DELETED_TAINT, "value": str(int(now)), "effect": "NoSchedule"}]
        self.cluster.api.update({**node, "spec": spec})
        self.cluster.log.record("ScaleDown", f"Node/{name}", node=name,
                                message="marked the node as toBeDeleted/unschedulable")
        longest = 0
        for pod in sorted(self._pods_on(name), key=key_of):
            if is_daemonset_pod(pod) or is_mirror_pod(pod) or pod["metadata"].get("deletionTimestamp"):
                continue
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            grace = min(30 if grace is None else int(grace), self.config.max_graceful_termination)
            longest = max(longest, grace)
            self.cluster.log.record("ScaleDown", key_of(pod), node=name, message="deleting pod for node scale down")
            try:
                self.cluster.delete("Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"], grace)
            except ApiError:
                pass
        self.cluster.loop.call_later(longest, lambda: self._check_drained(name))
        return node

    def pod_gone(self, node: str) -> None:
        """A pod bound to ``node`` was deleted or finished: the node may be drained now."""
        if node in self.draining:
            self.cluster.loop.call_at(self.cluster.now(), lambda: self._check_drained(node))

    def _pods_on(self, name: str) -> list[Obj]:
        return [p for p in self.cluster.api.iter("Pod") if (p.get("spec") or {}).get("nodeName") == name
                and not is_terminal(p)]

    def _check_drained(self, name: str) -> None:
        if name not in self.draining or self.cluster.api.get("Node", None, name) is None:
            return
        left = self._pods_on(name)
        if any(not is_daemonset_pod(p) and not is_mirror_pod(p) for p in left):
            return
        for pod in left:
            try:
                self.cluster.delete("Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"], 0)
            except ApiError:
                pass
        del self.draining[name]
        self.drains.discard(name)
        self.cluster.delete("Node", None, name)
        self.cluster.log.record("NodeRemoved", f"Node/{name}", node=name)
