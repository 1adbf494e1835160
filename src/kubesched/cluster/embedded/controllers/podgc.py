"""The pod garbage collector's orphan pass (upstream ``pkg/controller/podgc``, ``gcOrphaned``).

A pod bound to a node that does not exist (the node was deleted, or a manifest named a node the
cluster never had) has no kubelet: it never starts, or stops being looked after. Every
``GC_CHECK_PERIOD`` (20 s) the collector looks for such pods; a node found missing is checked again
after ``QUARANTINE`` (40 s), and if it is still gone its pods are deleted at once, those not yet
finished marked ``Failed`` first with the ``DisruptionTarget`` condition (reason ``DeletionByPodGC``,
"PodGC: node no longer exists"). Controllers then replace them like any deleted pod.

The periodic pass is a background timer (it does not keep a run going); a quarantine under way is a
foreground one, so a run lasts until the orphans are collected.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kubesched.k8s.objects import DISRUPTION_TARGET, ApiError, Obj, is_terminal
from kubesched.k8s.timefmt import rfc3339

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

GC_CHECK_PERIOD = 20.0
QUARANTINE = 40.0
REASON = "DeletionByPodGC"
MESSAGE = "PodGC: node no longer exists"


class PodGarbageCollector:
    def __init__(self, cluster: EmbeddedCluster) -> None:
        self.cluster = cluster
        self.api = cluster.api
        self.quarantined: dict[str, float] = {}  # missing node -> when it may be collected
        cluster.api.watch(self)
        self._tick_at(GC_CHECK_PERIOD)

    # -- watch: a pod bound to a missing node, or a node deleted under its pods, wakes the pass --------
    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod" and self._orphan_node(obj) is not None:
            self._wake()

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "Pod" and not (old.get("spec") or {}).get("nodeName") and self._orphan_node(new) is not None:
            self._wake()

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Node" and any(self._orphan_node(p) == obj["metadata"]["name"] for p in self.api.iter("Pod")):
            self._wake()

    def _orphan_node(self, pod: Obj) -> str | None:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or self.api.get("Node", None, node) is not None:
            return None
        return str(node)

    # -- the periodic pass ----------------------------------------------------------------------------
    def _next_tick(self) -> float:
        now = self.cluster.now()
        return (math.floor(now / GC_CHECK_PERIOD + 1e-9) + 1) * GC_CHECK_PERIOD

    def _tick_at(self, when: float) -> None:
        self.cluster.loop.call_at(when, self._tick, background=True)

    def _wake(self) -> None:
        """Hold the run open until the next pass (a foreground no-op timer)."""
        self.cluster.loop.call_at(self._next_tick(), lambda: None)

    def _tick(self) -> None:
        now = self.cluster.now()
        missing = sorted({n for n in map(self._orphan_node, self.api.iter("Pod")) if n is not None})
        for node in missing:
            due = self.quarantined.setdefault(node, now + QUARANTINE)
            if due <= now + 1e-9:
                self._collect(node)
                del self.quarantined[node]
            else:
                # the pass that will collect it keeps the run going
                self.cluster.loop.call_at(math.ceil(due / GC_CHECK_PERIOD - 1e-9) * GC_CHECK_PERIOD, lambda: None)
        self.quarantined = {n: t for n, t in self.quarantined.items() if n in missing}
        self._tick_at(now + GC_CHECK_PERIOD)

    def _collect(self, node: str) -> None:
        for pod in sorted((p for p in self.api.iter("Pod") if self._orphan_node(p) == node),
                          key=lambda p: (p["metadata"].get("namespace") or "", p["metadata"]["name"])):
            meta = pod["metadata"]
            try:
                if not is_terminal(pod):  # upstream markFailedAndDeletePodWithCondition
                    status = dict(pod.get("status") or {})
                    status["phase"] = "Failed"
                    status["conditions"] = [c for c in status.get("conditions") or []
                                            if c.get("type") != DISRUPTION_TARGET] + [
                        {"type": DISRUPTION_TARGET, "status": "True", "reason": REASON, "message": MESSAGE,
                         "lastTransitionTime": rfc3339(self.cluster.now())}]
                    self.api.update({**pod, "status": status})
                # the Failed pod may have been replaced by its controller meanwhile: delete this one only
                # (upstream deletes with a UID precondition)
                current = self.api.get("Pod", meta.get("namespace"), meta["name"])
                if current is not None and current["metadata"].get("uid") == meta.get("uid"):
                    self.api.delete("Pod", meta.get("namespace"), meta["name"])
            except ApiError:
                pass  # gone meanwhile
