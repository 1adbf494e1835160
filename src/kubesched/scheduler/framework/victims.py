"""What preemption does once it has chosen a node: the API calls on the victims and on the pods
nominated there (upstream ``prepareCandidate``, ``prepareCandidateAsync``, the Evaluator's
``PreemptPod`` and ``util.ClearNominatedNodeName`` in ``pkg/scheduler/framework/preemption``).

By default (v1.28) the calls are made inside the scheduling cycle. With SchedulerAsyncPreemption
(KEP-4832, Kubernetes 1.32+) they are made as background work while the scheduling thread goes on;
the preemptor counts as preempting until they are done, which its PreEnqueue reads.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence

from kubesched.k8s.objects import DISRUPTION_TARGET, ApiError, Obj
from kubesched.k8s.timefmt import rfc3339
from kubesched.scheduler.framework.interface import Handle, Status
from kubesched.scheduler.framework.types import PREEMPTION_BY_SCHEDULER, PodInfo
from kubesched.scheduler.ports import Cluster

log = logging.getLogger("kubesched.scheduler")


class VictimPreemption:
    """The victims' side of one preemption plugin's Evaluator. ``asynchronous``: the
    SchedulerAsyncPreemption gate."""

    def __init__(self, handle: Handle, *, asynchronous: bool) -> None:
        self.handle = handle
        self.asynchronous = asynchronous
        #: the pods whose preemption's API calls are under way (by uid)
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def is_running(self, uid: str) -> bool:
        """Upstream ``IsPodRunningPreemption``: whether the pod's victims are still being preempted."""
        with self._lock:
            return uid in self._running

    def prepare(self, node: str, victims: Sequence[PodInfo], pod: PodInfo) -> Status | None:
        """Upstream ``prepareCandidate``: preempt every victim, then clear the nominations of the
        lower-priority pods nominated to the node. The first failure, as an Error."""
        handle = self.handle
        errors = handle.cluster.call_all(self._preempt_calls(node, victims, pod))  # at the same time, as upstream
        err = next((e for e in errors if e is not None), None)
        if err is not None:
            return Status.error(err)
        handle.metrics.observe_victims(len(victims))
        for nominated in self._lower_nominated(node, pod):
            clear_nominated_node_name(handle.cluster, nominated)
        return None

    def prepare_async(self, node: str, victims: Sequence[PodInfo], pod: PodInfo) -> None:
        """Upstream ``prepareCandidateAsync`` (SchedulerAsyncPreemption): the API calls of
        :meth:`prepare`, made while the scheduling thread goes on; the pod counts as preempting
        until they are done (its PreEnqueue keeps it out of activeQ meanwhile). The lower-priority
        nominations are cleared first, then every victim but the last is preempted at once; the pod
        stops counting as preempting before the last victim goes, so that this deletion's event
        finds it ready to be requeued. If a call fails, the last victim is spared (the preemption
        cannot succeed any more, as upstream decided in #135495) and the pod is activated, lest it
        wait in the unschedulable pool for an event that will not come."""
        handle = self.handle
        cluster = handle.cluster
        handle.metrics.observe_victims(len(victims))
        lower = self._lower_nominated(node, pod)  # read here: the nominator is the scheduling thread's
        preempt = self._preempt_calls(node, victims, pod)
        with self._lock:
            self._running.add(pod.uid)

        took: list[float] = []  # the work's duration, handed to the scheduling thread

        def work() -> str | None:
            started = time.perf_counter()
            try:
                for nominated in lower:
                    clear_nominated_node_name(cluster, nominated)
                errors = cluster.call_all(preempt[:-1])
            finally:
                with self._lock:
                    self._running.discard(pod.uid)
            error = next((e for e in errors if e is not None), None)
            if error is None and preempt:
                error = preempt[-1]()
            took.append(time.perf_counter() - started)
            return error

        def then(error: str | None) -> None:
            handle.metrics.observe_preemption_goroutine("success" if error is None else "error", sum(took))
            if error is not None:
                log.error("preemption for pod %s failed: %s", pod.key, error)
                handle.activate([pod])

        handle.run_detached(work, then)


    def _preempt_calls(self, node: str, victims: Sequence[PodInfo], pod: PodInfo) -> list[Callable[[], str | None]]:
        """:func:`preempt_pod` of each victim, to be called."""
        cluster, now = self.handle.cluster, self.handle.now()
        return [functools.partial(preempt_pod, cluster, victim, pod, node, now) for victim in victims]

    def _lower_nominated(self, node: str, pod: PodInfo) -> list[PodInfo]:
        """Upstream ``getLowerPriorityNominatedPods``: the pods nominated to ``node`` below ``pod``'s
        priority, which may no longer fit there."""
        return [nominated for nominated in self.handle.nominator.pods_for_node(node) if nominated.priority < pod.priority]


def preempt_pod(cluster: Cluster, victim: PodInfo, preemptor: PodInfo, node_name: str, now: float) -> str | None:
    """Mark the victim with DisruptionTarget, delete it gracefully and record ``Preempted``; the API
    error's message if that fails."""
    condition = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
        # upstream builds the condition afresh on each preemption (from the preemptor's status),
        # so re-preempting a terminating victim changes it again and produces an update event
        "lastTransitionTime": rfc3339(now),
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


def clear_nominated_node_name(cluster: Cluster, pod: PodInfo) -> None:
    """Upstream ``util.ClearNominatedNodeName``: patch the pod's nomination away if it has one."""
    current: Obj | None = cluster.get("Pod", pod.namespace, pod.name)
    if current is None or not (current.get("status") or {}).get("nominatedNodeName"):
        return
    try:
        cluster.patch_pod_status(current, {"nominatedNodeName": None})
    except ApiError:
        pass
