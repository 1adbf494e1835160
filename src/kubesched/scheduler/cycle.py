"""One pod's scheduling attempt, as upstream's ``pkg/scheduler/schedule_one.go`` runs it:
``scheduleOne`` pops the pod, ``schedulingCycle`` finds it a node (:mod:`.placement`) or handles the
failure (PostFilter — preemption — and the requeue), assumes it there, runs Reserve and Permit;
``bindingCycle`` waits at Permit when asked to, then PreBind and Bind as the scheduler's binding
mode runs them (:mod:`.binding`), and ends with PostBind or upstream's failure path."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kubesched.k8s.objects import ApiError
from kubesched.scheduler import queue as q
from kubesched.scheduler.binding import BindingMode
from kubesched.scheduler.framework.interface import PODS_TO_ACTIVATE, Code, CycleState, Status
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.framework.waiting import WaitingPod, go_duration
from kubesched.scheduler.messages import truncate_note
from kubesched.scheduler.placement import FitError, NodeSearch, NoNodes
from kubesched.scheduler.queue import QueuedPodInfo
from kubesched.scheduler.records import AttemptRecord, Recorder

if TYPE_CHECKING:
    from kubesched.scheduler.cache import Cache
    from kubesched.scheduler.config import SchedulerSettings
    from kubesched.scheduler.metrics import Metrics
    from kubesched.scheduler.ports import Cluster, Timers

log = logging.getLogger("kubesched.scheduler")

NO_NODES = "no nodes available to schedule pods"
NOOP = object()  # nominating mode "Noop": keep whatever the pod has


class CycleHost(Protocol):
    """What a scheduling attempt uses of the scheduler running it
    (:class:`kubesched.scheduler.scheduler.Scheduler`)."""

    in_flight: str | None
    next_start_node_index: int

    @property
    def cluster(self) -> Cluster: ...

    @property
    def cache(self) -> Cache: ...

    @property
    def queue(self) -> q.SchedulingQueue: ...

    @property
    def settings(self) -> SchedulerSettings: ...

    @property
    def metrics(self) -> Metrics: ...

    @property
    def rng(self) -> np.random.Generator: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def records(self) -> Recorder: ...

    @property
    def binding(self) -> BindingMode: ...

    @property
    def timers(self) -> Timers | None: ...

    def framework_for(self, pod: PodInfo) -> Framework | None: ...

    def finish_cycle(self) -> None: ...


def schedule_one(sched: CycleHost) -> bool:
    """Upstream ``scheduleOne``: pop the next pod and run its scheduling cycle (the binding cycle
    goes on as the scheduler's binding mode runs it). False when the queue had no pod."""
    qpi = sched.queue.pop()
    if qpi is None:
        return False
    sched.in_flight = qpi.pod.uid
    try:
        fwk = sched.framework_for(qpi.pod)
        if fwk is not None:
            SchedulingAttempt(sched, fwk, qpi).scheduling_cycle()
    finally:
        sched.finish_cycle()
    return True


def _since(started: float | None) -> float | None:
    """Seconds since ``started`` (a ``perf_counter`` reading), when the cycle is timed."""
    return None if started is None else time.perf_counter() - started


class SchedulingAttempt:
    """One pod's attempt: its scheduling cycle, then (once it has a node) its binding cycle, whose
    end comes back on the scheduling thread."""

    def __init__(self, sched: CycleHost, fwk: Framework, qpi: QueuedPodInfo) -> None:
        self.sched = sched
        self.fwk = fwk
        self.qpi = qpi
        self.state = CycleState()
        self.state.write(PODS_TO_ACTIVATE, {})
        #: perf_counter at the cycle's start, when the scheduler's cycles are timed
        self.started: float | None = None
        #: once a node is found: the node, the pod as assumed there and the best nodes' scores
        self.node_name = ""
        self.assumed: PodInfo | None = None
        self.scores: list[dict[str, Any]] = []
        #: the pod held at Permit until its waiting plugins allow it (None: it need not wait)
        self.waiting: WaitingPod | None = None

    # -- the scheduling cycle ----------------------------------------------------------------------
    def scheduling_cycle(self) -> None:
        """Upstream ``schedulingCycle``: find a node (``schedulePod``), or handle the failure
        (PostFilter, then the requeue); then assume the pod on the node, Reserve and Permit, and hand
        it to the binding cycle."""
        sched, pod = self.sched, self.qpi.pod
        if pod.deleting:
            sched.cluster.record_event(
                pod.obj, type="Warning", reason="FailedScheduling", action="Scheduling",
                note=f"skip schedule deleting pod: {pod.key}",
            )
            return
        if sched.cache.is_assumed(pod.uid):
            return
        metrics = sched.metrics
        metrics.start_cycle()
        self.started = time.perf_counter() if metrics.timing else None
        try:
            sched.cache.update_snapshot()
            node_name = self.schedule_pod()
        except FitError as fit:
            self.post_filter(fit)
            return
        except NoNodes:
            metrics.attempt("unschedulable", self.fwk.name, _since(self.started))
            self.handle_failure(Status.unresolvable(NO_NODES), NO_NODES, "")
            return
        except Exception as err:  # noqa: BLE001 - the pod must not be lost, whatever went wrong
            # a plugin's Error status (RuntimeError), or a fault of kubesched's own on an odd object:
            # either way the pod goes back to the queue with backoff, condition SchedulerError and a
            # FailedScheduling event, as upstream's handleSchedulingFailure does for an error
            message = str(err) if isinstance(err, RuntimeError) else f"{type(err).__name__}: {err}"
            if not isinstance(err, RuntimeError):
                log.exception("scheduling cycle of pod %s failed", pod.key)
            metrics.attempt("error", self.fwk.name, _since(self.started))
            self.handle_failure(Status.error(message), message, "")
            return
        if self.assume_reserve_permit(node_name):
            self.binding_cycle()

    def schedule_pod(self) -> str:
        """Upstream ``schedulePod`` (see :class:`~kubesched.scheduler.placement.NodeSearch`); the
        scheduler's ``nextStartNodeIndex`` moves on even when no node fits."""
        sched = self.sched
        search = NodeSearch(
            self.fwk, self.state, self.qpi.pod, sched.cache, start=sched.next_start_node_index,
            percentage=sched.settings.percentage_of_nodes_to_score, rng=sched.rng,
            keep_scores=sched.records.keep_attempts)
        try:
            node_name = search.schedule_pod()
        finally:
            sched.next_start_node_index = search.next_start
        self.scores = search.scores
        return node_name

    def post_filter(self, fit: FitError) -> None:
        """No node fits: PostFilter (preemption, which may nominate a node), then the failure
        handling with the FitError's message."""
        sched, fwk, qpi = self.sched, self.fwk, self.qpi
        nominating: Any = NOOP
        if fwk.post_filter_plugins:
            result, status = fwk.run_post_filter(self.state, qpi.pod, fit.statuses)
            fit.post_filter_msg = status.message() if not status.is_success() else ""
            if result is not None and result.nominated_node_name is not None:
                nominating = result.nominated_node_name
        sched.metrics.attempt("unschedulable", fwk.name, _since(self.started))
        qpi.unschedulable_plugins = set(fit.plugins)
        message = fit.message()
        if sched.records.keep_attempts:
            sched.records.attempt(AttemptRecord(
                time=sched.clock(), pod=qpi.pod.key, outcome="unschedulable", message=message,
                node_statuses={name: st.message() for name, st in fit.statuses.items()},
            ))
        self.handle_failure(Status.unschedulable(message), message, nominating)

    def assume_reserve_permit(self, node_name: str) -> bool:
        """The end of a scheduling cycle that found a node: assume the pod there, Reserve, Permit
        (a plugin may ask the pod to wait: :attr:`waiting`). False when Reserve or Permit failed the
        pod (handled)."""
        sched, fwk, pod = self.sched, self.fwk, self.qpi.pod
        assumed_obj = dict(pod.obj)
        assumed_obj["spec"] = dict(pod.spec)
        assumed_obj["spec"]["nodeName"] = node_name
        self.node_name = node_name
        self.assumed = PodInfo.from_pod(assumed_obj, pod)
        sched.cache.assume(self.assumed, node_name)
        sched.queue.nominator.delete(pod)
        status = fwk.run_reserve(self.state, pod, node_name)
        if status is not None:
            self.binding_failed(status, in_binding=False)
            return False
        permit = fwk.run_permit(self.state, pod, node_name)
        if isinstance(permit, Status):
            self.binding_failed(permit, in_binding=False)
            return False
        # the end of a successful scheduling cycle: pods a plugin asked to activate (PodsToActivate)
        to_activate: dict[str, PodInfo] | None = self.state.read(PODS_TO_ACTIVATE)
        if to_activate:
            sched.queue.activate(list(to_activate.values()))
            to_activate.clear()
        self.waiting = permit
        return True

    # -- the binding cycle -------------------------------------------------------------------------
    def binding_cycle(self) -> None:
        """Upstream ``bindingCycle``: wait at Permit when a plugin asked to, then PreBind and Bind as
        the scheduler's binding mode runs them; the end (PostBind, or the failure path) comes back on
        the scheduling thread."""
        if self.waiting is not None:
            self.wait_on_permit(self.waiting)
            return
        self.bind()

    def wait_on_permit(self, waiting: WaitingPod) -> None:
        """Upstream ``WaitOnPermit`` at the start of the binding cycle: arm each waiting plugin's
        timeout, then go on once the pod is allowed, or fail the binding when it is rejected (a
        FitError over its node, as upstream reports it). The outcome comes from another pod's cycle
        or from a timer; the rest of the binding cycle runs after that, never inside it."""
        timers = self.sched.timers
        if timers is not None:
            now = timers.now()
            for plugin, seconds in sorted(waiting.pending.items()):
                message = f"rejected due to timeout after waiting {go_duration(seconds)} at plugin {plugin}"
                # background: a timeout alone does not hold a simulation open (a gang that can never
                # fit would wait, time out and retry for ever); one without ``until`` still runs
                # while pods wait at Permit, as while pods back off (see :mod:`kubesched.sim.runner`)
                handle = timers.call_at(now + seconds, functools.partial(waiting.reject, plugin, message),
                                        background=True)
                waiting.add_timer(timers.cancel, handle)

        def decided(status: Status | None) -> None:
            def go_on() -> None:
                self.fwk.waiting_pods.remove(waiting.pod.uid)
                if status is not None:
                    self.binding_failed(status, in_binding=True, permit=True)
                    return
                self.bind()

            if timers is not None:  # later in this instant
                timers.call_at(timers.now(), go_on, background=True)
            else:
                go_on()

        waiting.wait(decided)

    def bind(self) -> None:
        """PreBind, Bind: as the scheduler's binding mode runs binding cycles (see :mod:`.binding`)."""
        fwk, state, pod, node_name = self.fwk, self.state, self.qpi.pod, self.node_name
        self.sched.binding.submit(lambda: fwk.run_bind(state, pod, node_name), self.bound)

    def bound(self, status: Status | None) -> None:
        """The binding's outcome, on the scheduling thread: success (the Scheduled event, PostBind)
        or upstream's failure path."""
        if status is not None and not status.is_success():
            self.binding_failed(status, in_binding=True)
            return
        sched, fwk, qpi, node_name = self.sched, self.fwk, self.qpi, self.node_name
        pod = qpi.pod
        sched.metrics.attempt("scheduled", fwk.name, _since(self.started))
        sched.metrics.pod_scheduling_attempts.observe(qpi.attempts)
        if self.started is not None and qpi.initial_attempt_timestamp is not None:
            sched.metrics.observe_sli(qpi.attempts, sched.clock() - qpi.initial_attempt_timestamp)
        if sched.records.keep_attempts:
            sched.records.attempt(AttemptRecord(
                time=sched.clock(), pod=pod.key, outcome="scheduled", node=node_name, scores=self.scores,
            ))
        sched.cluster.record_event(
            pod.obj, type="Normal", reason="Scheduled", action="Binding",
            note=f"Successfully assigned {pod.key} to {node_name}", node=node_name,
        )
        fwk.run_post_bind(self.state, pod, node_name)

    def binding_failed(self, status: Status, *, in_binding: bool, permit: bool = False) -> None:
        """Upstream's Reserve/Permit failure path in ``schedulingCycle`` and
        ``handleBindingCycleError``: Unreserve, forget the assumed pod, clear the nomination. A
        Reserve/Permit rejection is reported as a ``FitError`` over the one node (its plugin
        recorded for requeueing); PreBind/Bind failures and errors with their own message.
        Forgetting a pod in the binding cycle counts as an AssignedPodDelete: before the failure
        handler for an error (so the pod goes to backoffQ), after it, sparing the pod itself, for
        a rejection. A pod rejected while waiting at Permit (``permit``) is reported as a FitError
        too, as upstream's binding cycle does."""
        sched, fwk, qpi, node_name = self.sched, self.fwk, self.qpi, self.node_name
        pod = qpi.pod
        fwk.run_unreserve(self.state, pod, node_name)
        assert self.assumed is not None
        sched.cache.forget(self.assumed)
        if status.is_rejected() and (not in_binding or permit):
            fit = FitError(1, {node_name: status}, {status.plugin} - {""})
            qpi.unschedulable_plugins = set(fit.plugins)
            message = fit.message()
        else:
            message = status.message()
        if in_binding and not status.is_rejected():
            sched.queue.move_all(q.ASSIGNED_POD_DELETE)
        sched.metrics.attempt("error" if status.code == Code.ERROR else "unschedulable", fwk.name,
                              _since(self.started))
        self.handle_failure(status, message, "")
        if in_binding and status.is_rejected():
            sched.queue.move_all(q.ASSIGNED_POD_DELETE, lambda other: other.uid != pod.uid)

    # -- failures --------------------------------------------------------------------------------------
    def handle_failure(self, status: Status, message: str, nominating: Any) -> None:
        """Upstream ``handleSchedulingFailure``: requeue, update the nominator, event, status patch."""
        sched, qpi = self.sched, self.qpi
        pod = qpi.pod
        reason = "Unschedulable" if status.is_rejected() else "SchedulerError"
        current = sched.cluster.get("Pod", pod.namespace, pod.name)
        if current is not None and not (current.get("spec") or {}).get("nodeName"):
            qpi.pod = PodInfo.from_pod(current)
            sched.queue.add_unschedulable_if_not_present(qpi, sched.queue.scheduling_cycle)
        if nominating is NOOP:
            sched.queue.nominator.add(qpi.pod)
        else:
            sched.queue.nominator.add(qpi.pod, nominating)
        # upstream records the event (and tries the status patch) even for a pod that is gone
        sched.cluster.record_event(
            current if current is not None else pod.obj, type="Warning", reason="FailedScheduling",
            action="Scheduling", note=truncate_note(message),
        )
        if current is None:
            return
        _patch_pod_scheduled(sched, current, reason, message, nominating)


def _patch_pod_scheduled(sched: CycleHost, pod: dict[str, Any], reason: str, message: str, nominating: Any) -> None:
    """Upstream ``updatePod``: the PodScheduled=False condition and the nomination, when they
    change, sent without waiting for the answer."""
    status = pod.get("status") or {}
    existing = next((c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"), None)
    condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
    same = existing is not None and all(existing.get(k) == v for k, v in condition.items())
    patch: dict[str, Any] = {}
    if not same:
        from kubesched.k8s.timefmt import rfc3339

        keep = existing is not None and existing.get("status") == "False" and existing.get("lastTransitionTime")
        condition["lastTransitionTime"] = existing["lastTransitionTime"] if keep and existing else rfc3339(sched.clock())
        patch["conditions"] = [condition]
    if nominating is not NOOP and (status.get("nominatedNodeName") or "") != nominating:
        patch["nominatedNodeName"] = nominating or None
    if patch:
        try:
            # nothing decided later reads the answer: a real cluster sends it while the next cycle runs
            sched.cluster.patch_pod_status(pod, patch, wait=False)
        except ApiError:
            pass
