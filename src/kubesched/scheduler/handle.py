"""What plugins get from the scheduler: the upstream ``framework.Handle`` for one profile."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.k8s.objects import DISRUPTION_TARGET, ApiError, Obj
from kubesched.k8s.timefmt import rfc3339
from kubesched.scheduler.framework.types import PREEMPTION_BY_SCHEDULER, PodInfo

if TYPE_CHECKING:
    from kubesched.scheduler.cache import Cache
    from kubesched.scheduler.framework.runtime import Framework
    from kubesched.scheduler.scheduler import Scheduler


class ProfileHandle:
    def __init__(self, scheduler: Scheduler, scheduler_name: str) -> None:
        self._scheduler = scheduler
        self.scheduler_name = scheduler_name
        self.framework: Framework  # set once the profile's framework exists

    # -- reading ------------------------------------------------------------------------------
    def snapshot(self) -> Cache:
        return self._scheduler.cache

    def list(self, kind: str) -> list[Obj]:
        return self._scheduler.cluster.list(kind)

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self._scheduler.cluster.get("Namespace", "", namespace)
        if ns is None:
            return {}
        labels: dict[str, str] = dict((ns.get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels

    def now(self) -> float:
        return self._scheduler.clock()

    @property
    def rng(self) -> np.random.Generator:
        return self._scheduler.rng

    @property
    def cluster(self) -> Any:
        return self._scheduler.cluster

    @property
    def nominator(self) -> Any:
        return self._scheduler.queue.nominator

    @property
    def metrics(self) -> Any:
        return self._scheduler.metrics

    def current_pod(self, pod: PodInfo) -> PodInfo | None:
        obj = self._scheduler.cluster.get("Pod", pod.namespace, pod.name)
        if obj is None:
            return None
        return PodInfo.from_pod(obj)

    @property
    def keep_all_candidates(self) -> bool:
        """Keep every preemption candidate in the records (when explanations were asked for)."""
        return bool(self._scheduler.record_attempts)

    def record_preemption(self, record: Any) -> None:
        self._scheduler.preemptions.append(record)

    # -- acting -------------------------------------------------------------------------------
    def clear_nominated_node_name(self, pod: PodInfo) -> None:
        current = self._scheduler.cluster.get("Pod", pod.namespace, pod.name)
        if current is None or not (current.get("status") or {}).get("nominatedNodeName"):
            return
        try:
            self._scheduler.cluster.patch_pod_status(current, {"nominatedNodeName": None})
        except ApiError:
            pass

    def preempt_victim(self, victim: PodInfo, preemptor: PodInfo, node_name: str) -> str | None:
        """Mark the victim with DisruptionTarget, delete it gracefully and record ``Preempted``."""
        cluster = self._scheduler.cluster
        condition = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTION_BY_SCHEDULER,
            "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
            # upstream builds the condition afresh on each preemption (from the preemptor's status),
            # so re-preempting a terminating victim changes it again and produces an update event
            "lastTransitionTime": rfc3339(self._scheduler.clock()),
        }
        try:
            cluster.patch_pod_status(victim.obj, {"conditions": [condition]})
            cluster.delete_pod(victim.obj)
        except ApiError as err:  # in 1.28 any failure, NotFound included, fails the preemption
            return err.message
        cluster.record_event(
            victim.obj,
            type="Normal",
            reason="Preempted",
            action="Preempting",
            note=f"Preempted by a pod on node {node_name}",
            related=preemptor.obj,
        )
        return None
