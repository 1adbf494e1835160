"""One scheduling cycle (upstream ``schedule_one.go``): pop, filter, (preempt), score, select,
assume, reserve, permit, bind — or record the failure and requeue."""

from __future__ import annotations

import functools
import logging
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from kubesched.k8s.objects import ApiError
from kubesched.scheduler import queue as q
from kubesched.scheduler.binding import BindingMode
from kubesched.scheduler.framework.extender import (
    EXTENDER_NAME,
    MAX_EXTENDER_PRIORITY,
    ExtenderError,
    FilterVerdict,
    apply_verdicts,
    filter_through,
)
from kubesched.scheduler.framework.interface import MAX_NODE_SCORE, PODS_TO_ACTIVATE, Code, CycleState, Status
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.framework.waiting import WaitingPod, go_duration
from kubesched.scheduler.messages import fit_error_message, truncate_note
from kubesched.scheduler.queue import QueuedPodInfo
from kubesched.scheduler.records import AttemptRecord, Recorder

if TYPE_CHECKING:
    from kubesched.scheduler.cache import Cache
    from kubesched.scheduler.config import SchedulerSettings
    from kubesched.scheduler.metrics import Metrics
    from kubesched.scheduler.ports import Cluster, Timers

log = logging.getLogger("kubesched.scheduler")

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES = "no nodes available to schedule pods"
NOOP = object()  # nominating mode "Noop": keep whatever the pod has


class Scheduler(Protocol):
    """What a scheduling cycle uses of the scheduler running it
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


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    found = num_all_nodes * percentage // 100
    return max(found, MIN_FEASIBLE_NODES_TO_FIND)


class FitError(Exception):
    def __init__(self, num_all_nodes: int, statuses: dict[str, Status], plugins: set[str], pre_filter_msg: str = ""):
        super().__init__()
        self.num_all_nodes = num_all_nodes
        self.statuses = statuses
        self.plugins = plugins
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = ""

    def message(self) -> str:
        return fit_error_message(
            self.num_all_nodes, self.pre_filter_msg, self.statuses.values(), self.post_filter_msg
        )


def schedule_one(sched: Scheduler) -> bool:
    qpi = sched.queue.pop()
    if qpi is None:
        return False
    sched.in_flight = qpi.pod.uid
    try:
        _scheduling_cycle(sched, qpi)
    finally:
        sched.finish_cycle()
    return True


def _scheduling_cycle(sched: Scheduler, qpi: QueuedPodInfo) -> None:
    """Upstream ``schedulingCycle``: find a node (``schedulePod``: PreFilter, Filter, Score), or
    handle the failure (PostFilter — preemption — and the requeue); then assume the pod on the node,
    Reserve and Permit, and hand it to the binding cycle."""
    pod = qpi.pod
    fwk = sched.framework_for(pod)
    if fwk is None:
        return
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
    started = time.perf_counter() if metrics.timing else None
    state = CycleState()
    state.write(PODS_TO_ACTIVATE, {})
    try:
        sched.cache.update_snapshot()
        node_name, scores = _schedule_pod(sched, fwk, state, pod)
    except FitError as fit:
        _after_fit_error(sched, fwk, state, qpi, fit, started)
        return
    except _NoNodes:
        metrics.attempt("unschedulable", fwk.name, _since(started))
        _handle_failure(sched, qpi, Status.unresolvable(NO_NODES), NO_NODES, "")
        return
    except Exception as err:  # noqa: BLE001 - the pod must not be lost, whatever went wrong
        # a plugin's Error status (RuntimeError), or a fault of kubesched's own on an odd object:
        # either way the pod goes back to the queue with backoff, condition SchedulerError and a
        # FailedScheduling event, as upstream's handleSchedulingFailure does for an error
        message = str(err) if isinstance(err, RuntimeError) else f"{type(err).__name__}: {err}"
        if not isinstance(err, RuntimeError):
            log.exception("scheduling cycle of pod %s failed", pod.key)
        metrics.attempt("error", fwk.name, _since(started))
        _handle_failure(sched, qpi, Status.error(message), message, "")
        return
    binding = _assume_reserve_permit(sched, fwk, state, qpi, node_name, scores, started)
    if binding is not None:
        _binding_cycle(sched, fwk, *binding)


def _since(started: float | None) -> float | None:
    """Seconds since ``started`` (a ``perf_counter`` reading), when the cycle is timed."""
    return None if started is None else time.perf_counter() - started


class _NoNodes(Exception):
    pass


def _schedule_pod(
    sched: Scheduler, fwk: Framework, state: CycleState, pod: PodInfo
) -> tuple[str, list[dict[str, Any]]]:
    cache = sched.cache
    n = cache.num_nodes()
    if n == 0:
        raise _NoNodes()
    feasible = _find_nodes_that_fit(sched, fwk, state, pod)
    if len(feasible) == 1:
        return cache.node_infos[int(feasible[0])].name, []
    idx = feasible
    totals, per_plugin = fwk.run_score(state, pod, cache, idx)
    if fwk.extenders:
        _add_extender_scores(fwk, pod, cache, idx, totals, per_plugin)
    best = totals.max()
    winners = np.flatnonzero(totals == best)
    choice = int(winners[0]) if len(winners) == 1 else int(winners[sched.rng.integers(len(winners))])
    scores: list[dict[str, Any]] = []
    if sched.records.keep_attempts:
        order = np.argsort(-totals, kind="stable")[:10]
        for k in order:
            scores.append({
                "node": cache.node_infos[int(idx[k])].name,
                "total": int(totals[k]),
                "plugins": {name: int(v[k]) for name, v in per_plugin.items()},
            })
    return cache.node_infos[int(idx[choice])].name, scores


def _find_nodes_that_fit(sched: Scheduler, fwk: Framework, state: CycleState, pod: PodInfo) -> np.ndarray:
    """Upstream ``findNodesThatFitPod``: PreFilter, the nominated node alone, then the (PreFilter-
    restricted) node list from ``nextStartNodeIndex`` until enough feasible nodes are found."""
    cache = sched.cache
    nodes = cache.node_infos
    pre_result, status = fwk.run_pre_filter(state, pod)
    if status is not None:
        if status.code == Code.ERROR:
            raise RuntimeError(status.message())
        statuses = {info.name: status for info in nodes}
        raise FitError(len(nodes), statuses, {status.plugin} if status.plugin else set(), status.message())

    diagnosis: dict[str, Status] = {}
    plugins: set[str] = set()
    nominated_index: int | None = None  # set when the nominated node failed with a status
    nominated = pod.nominated_node_name
    if nominated:
        info = cache.get(nominated)
        if info is not None:
            st = fwk.run_filter_with_nominated(state, pod, info)
            if st is None:
                only = np.asarray([info.index], dtype=np.int64)
                if not fwk.extenders:
                    return only
                try:
                    only, on_nominated = _pass_extenders(fwk, pod, cache, only)
                except RuntimeError as err:  # upstream logs an error on the nominated node
                    log.error("evaluation failed on nominated node %s of pod %s: %s", nominated, pod.key, err)
                    on_nominated = []
                else:
                    if len(only):
                        return only
                apply_verdicts(diagnosis, on_nominated)
                if info.name in diagnosis:
                    nominated_index = info.index
            elif st.code != Code.ERROR:  # upstream only logs an error on the nominated node
                diagnosis[info.name] = st
                plugins.add(st.plugin)
                nominated_index = info.index

    if pre_result is not None and pre_result.node_names is not None:
        # v1.28.7 fails the whole attempt when a PreFilter names a node the snapshot lacks
        # (fixed in v1.28.10, #124764)
        missing = sorted(n for n in pre_result.node_names if cache.get(n) is None)
        if missing:
            raise RuntimeError(f'nodeinfo not found for node name "{missing[0]}"')
        order = np.asarray([i.index for i in nodes if i.name in pre_result.node_names], dtype=np.int64)
    else:
        order = np.arange(len(nodes), dtype=np.int64)
    total = len(order)
    to_find = num_feasible_nodes_to_find(
        fwk.percentage_of_nodes_to_score if fwk.percentage_of_nodes_to_score is not None
        else sched.settings.percentage_of_nodes_to_score,
        total,
    )
    start = sched.next_start_node_index % total if total else 0
    if start:
        order = np.concatenate([order[start:], order[:start]])
    ok, fails, known = _filter_in_windows(fwk, state, pod, cache, order, to_find)
    positions = np.flatnonzero(ok)
    if len(positions) > to_find:
        processed = int(positions[to_find - 1]) + 1
        positions = positions[:to_find]
    else:
        processed = total
    scanned = order[:processed]
    # a filter Error aborts the attempt (upstream: the error channel cancels the search; the
    # failing node gets no status)
    error = None
    if any(st.code == Code.ERROR for st in known.values()):
        error = next(
            ((k, st) for k, j in enumerate(scanned.tolist())
             if (st := known.get(j)) is not None and st.code == Code.ERROR),
            None,
        )
    if error is not None:
        scanned = scanned[: error[0]]
        processed = error[0]
    if total:
        # processedNodes = #feasible + #statuses, updated even after an error; the nominated
        # node's status counts too unless the scan evaluated (and so overwrote) it
        extra = 1 if nominated_index is not None and not bool(np.any(scanned == nominated_index)) else 0
        sched.next_start_node_index = (sched.next_start_node_index + processed + extra) % total
    if error is not None:
        raise RuntimeError(error[1].message())
    feasible = order[positions]
    verdicts: list[FilterVerdict] = []
    if len(feasible) and fwk.extenders:
        before = len(feasible)
        feasible, verdicts = _pass_extenders(fwk, pod, cache, feasible)
        if len(feasible) != before:
            # upstream puts the fake plugin name "Extender" in the pod's unschedulable plugins
            plugins.add(EXTENDER_NAME)
    if len(feasible):
        return feasible
    failed = scanned[~ok[:processed]]
    first_fail = np.full(len(nodes), -1, dtype=np.int64)
    if fails is None:  # which filter failed each node first: the failed nodes asked again for it
        first_fail[failed] = fwk.filter_all(state, pod, cache, failed)[1]
    else:
        first_fail[order[:len(fails)]] = fails
    found = fwk.statuses_for(state, pod, cache, failed, first_fail, known)
    diagnosis.update(zip(map(_NAME, map(nodes.__getitem__, failed.tolist())), found))
    plugins.update(st.plugin for st in dict(zip(map(id, found), found)).values())
    apply_verdicts(diagnosis, verdicts)
    plugins.discard("")
    raise FitError(len(nodes), diagnosis, plugins)


_NAME = operator.attrgetter("name")

#: the first window of nodes filtered holds at least this many; each next one is twice the last
MIN_FILTER_WINDOW = 256


def _filter_in_windows(fwk: Framework, state: CycleState, pod: PodInfo, cache: Cache, order: np.ndarray,
                       to_find: int) -> tuple[np.ndarray, np.ndarray | None, dict[int, Status]]:
    """The filters' verdicts on the nodes of ``order`` (the scan's order), a window of nodes at a
    time until more than ``to_find`` nodes pass — the scan stops at the ``to_find``-th, and looks at
    every node only when no more pass — or every node is done: for a big cluster most nodes need
    not be filtered at all (upstream stops checking nodes once it has found enough, too). Returns
    per node of ``order`` as far as it got: whether it passes and the first filter failing it (as
    :meth:`Framework.filter_all`; None when that was not worked out: see
    :meth:`Framework.filter_passing`), and the statuses computed on the way (by node index)."""
    total = len(order)
    window = max(2 * (to_find + 1), MIN_FILTER_WINDOW)
    if window >= total:
        mask, first_fail, statuses = fwk.filter_passing(state, pod, cache)
        return mask[order], None if first_fail is None else first_fail[order], statuses
    passes: list[np.ndarray] = []
    fails: list[np.ndarray | None] = []
    known: dict[int, Status] = {}
    done = found = 0
    while done < total:
        where = order[done:done + window]
        mask, first_fail, statuses = fwk.filter_passing(state, pod, cache, where)
        passes.append(mask)
        fails.append(first_fail)
        known.update(statuses)
        done += len(where)
        found += int(np.count_nonzero(mask))
        if found > to_find:
            break
        window *= 2
    # each window works the first failures out, or none does (only nominated pods make it)
    return np.concatenate(passes), None if fails[0] is None else np.concatenate(cast(list[np.ndarray], fails)), known


def _pass_extenders(fwk: Framework, pod: PodInfo, cache: Cache, feasible: np.ndarray
                    ) -> tuple[np.ndarray, list[FilterVerdict]]:
    """The extenders' filter over the feasible nodes (by index, the scheduler's order kept); a
    failing extender that is not ignorable fails the attempt with its error."""
    nodes = cache.node_infos
    try:
        passed, verdicts = filter_through(fwk.extenders, pod, [nodes[j] for j in feasible.tolist()], log.info)
    except ExtenderError as err:
        raise RuntimeError(str(err)) from err
    return np.asarray([info.index for info in passed], dtype=np.int64), verdicts


def _add_extender_scores(
    fwk: Framework, pod: PodInfo, cache: Cache, idx: np.ndarray, totals: np.ndarray,
    per_plugin: dict[str, np.ndarray],
) -> None:
    """Upstream ``prioritizeNodes``' extender part: each interested extender's 0..10 scores,
    times its weight, scaled to MaxNodeScore, added to the nodes' totals. A failing prioritize
    call gives no scores (ignorable or not)."""
    nodes = cache.node_infos
    infos = [nodes[j] for j in idx.tolist()]
    position = {info.name: k for k, info in enumerate(infos)}
    for extender in fwk.extenders:
        if not extender.is_interested(pod):
            continue
        try:
            scores = extender.prioritize(pod, infos)
        except ExtenderError as err:
            log.debug("extender %s gave no scores for pod %s: %s", extender.name, pod.key, err)
            continue
        added = np.zeros(len(idx), dtype=np.int64)  # without a prioritize verb: all 0, as upstream
        for host, score in scores:
            k = position.get(host)
            if k is not None:
                added[k] += score * extender.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        totals += added
        per_plugin[extender.name] = per_plugin.get(extender.name, 0) + added


def _after_fit_error(sched: Scheduler, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, fit: FitError,
                     started: float | None = None) -> None:
    nominating: Any = NOOP
    if fwk.post_filter_plugins:
        result, status = fwk.run_post_filter(state, qpi.pod, fit.statuses)
        fit.post_filter_msg = status.message() if not status.is_success() else ""
        if result is not None and result.nominated_node_name is not None:
            nominating = result.nominated_node_name
    sched.metrics.attempt("unschedulable", fwk.name, _since(started))
    qpi.unschedulable_plugins = set(fit.plugins)
    message = fit.message()
    if sched.records.keep_attempts:
        sched.records.attempt(AttemptRecord(
            time=sched.clock(), pod=qpi.pod.key, outcome="unschedulable", message=message,
            node_statuses={name: st.message() for name, st in fit.statuses.items()},
        ))
    _handle_failure(sched, qpi, Status.unschedulable(message), message, nominating)


def _handle_failure(sched: Scheduler, qpi: QueuedPodInfo, status: Status, message: str, nominating: Any) -> None:
    """Upstream handleSchedulingFailure: requeue, update the nominator, event, status patch."""
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


def _patch_pod_scheduled(sched: Scheduler, pod: dict[str, Any], reason: str, message: str, nominating: Any) -> None:
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


def _assume_reserve_permit(
    sched: Scheduler, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, node_name: str,
    scores: list[dict[str, Any]], started: float | None = None,
) -> tuple[_Binding, WaitingPod | None] | None:
    """The end of a scheduling cycle that found a node: assume the pod there, Reserve, Permit.
    What the binding cycle needs, or None when Reserve or Permit failed the pod (handled)."""
    pod = qpi.pod
    assumed_obj = dict(pod.obj)
    assumed_obj["spec"] = dict(pod.spec)
    assumed_obj["spec"]["nodeName"] = node_name
    assumed = PodInfo.from_pod(assumed_obj, pod)
    sched.cache.assume(assumed, node_name)
    sched.queue.nominator.delete(pod)
    binding = _Binding(sched, fwk, state, qpi, assumed, node_name, scores, started)
    status = fwk.run_reserve(state, pod, node_name)
    if status is not None:
        binding.fail(status, False)
        return None
    permit = fwk.run_permit(state, pod, node_name)
    if isinstance(permit, Status):
        binding.fail(permit, False)
        return None
    # the end of a successful scheduling cycle: pods a plugin asked to activate (PodsToActivate)
    to_activate: dict[str, PodInfo] | None = state.read(PODS_TO_ACTIVATE)
    if to_activate:
        sched.queue.activate(list(to_activate.values()))
        to_activate.clear()
    return binding, permit


def _binding_cycle(sched: Scheduler, fwk: Framework, binding: _Binding, waiting: WaitingPod | None) -> None:
    """Upstream ``bindingCycle``: wait at Permit when a plugin asked to, then PreBind and Bind as
    the scheduler's binding mode runs them; the end (PostBind, or the failure path) comes back on
    the scheduling thread."""
    if waiting is not None:
        _wait_on_permit(sched, fwk, waiting, binding)
        return
    _bind(sched, fwk, binding.state, binding.qpi.pod, binding.node_name, binding)


def _wait_on_permit(sched: Scheduler, fwk: Framework, waiting: WaitingPod, binding: _Binding) -> None:
    """Upstream ``WaitOnPermit`` at the start of the binding cycle: arm each waiting plugin's
    timeout, then go on once the pod is allowed, or fail the binding when it is rejected (a FitError
    over its node, as upstream reports it). The outcome comes from another pod's cycle or from a
    timer; the rest of the binding cycle runs after that, never inside it."""
    timers = sched.timers
    if timers is not None:
        now = timers.now()
        for plugin, seconds in sorted(waiting.pending.items()):
            message = f"rejected due to timeout after waiting {go_duration(seconds)} at plugin {plugin}"
            handle = timers.call_at(now + seconds, functools.partial(waiting.reject, plugin, message))
            waiting.add_timer(timers.cancel, handle)

    def decided(status: Status | None) -> None:
        def go_on() -> None:
            fwk.waiting_pods.remove(waiting.pod.uid)
            if status is not None:
                binding.fail(status, True, permit=True)
                return
            _bind(sched, fwk, binding.state, binding.qpi.pod, binding.node_name, binding)

        if timers is not None:
            timers.call_at(timers.now(), go_on)
        else:
            go_on()

    waiting.wait(decided)


def _bind(sched: Scheduler, fwk: Framework, state: CycleState, pod: PodInfo, node_name: str,
          binding: _Binding) -> None:
    """PreBind, Bind: as the scheduler's binding mode runs binding cycles (see :mod:`.binding`)."""
    sched.binding.submit(lambda: fwk.run_bind(state, pod, node_name), binding.done)


@dataclass
class _Binding:
    """The end of one pod's binding cycle, on the scheduling thread: success (event, PostBind) or
    upstream's failure path."""

    sched: Scheduler
    fwk: Framework
    state: CycleState
    qpi: QueuedPodInfo
    assumed: PodInfo
    node_name: str
    scores: list[dict[str, Any]]
    started: float | None = None  # perf_counter at the cycle's start, when timed

    def done(self, status: Status | None) -> None:
        if status is not None and not status.is_success():
            self.fail(status, True)
            return
        sched, fwk, pod, node_name = self.sched, self.fwk, self.qpi.pod, self.node_name
        sched.metrics.attempt("scheduled", fwk.name, _since(self.started))
        sched.metrics.pod_scheduling_attempts.observe(self.qpi.attempts)
        if self.started is not None and self.qpi.initial_attempt_timestamp is not None:
            sched.metrics.observe_sli(self.qpi.attempts, sched.clock() - self.qpi.initial_attempt_timestamp)
        if sched.records.keep_attempts:
            sched.records.attempt(AttemptRecord(
                time=sched.clock(), pod=pod.key, outcome="scheduled", node=node_name, scores=self.scores,
            ))
        sched.cluster.record_event(
            pod.obj, type="Normal", reason="Scheduled", action="Binding",
            note=f"Successfully assigned {pod.key} to {node_name}", node=node_name,
        )
        fwk.run_post_bind(self.state, pod, node_name)

    def fail(self, status: Status, binding: bool, *, permit: bool = False) -> None:
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
        sched.cache.forget(self.assumed)
        if status.is_rejected() and (not binding or permit):
            fit = FitError(1, {node_name: status}, {status.plugin} - {""})
            qpi.unschedulable_plugins = set(fit.plugins)
            message = fit.message()
        else:
            message = status.message()
        if binding and not status.is_rejected():
            sched.queue.move_all(q.ASSIGNED_POD_DELETE)
        sched.metrics.attempt("error" if status.code == Code.ERROR else "unschedulable", fwk.name, _since(self.started))
        _handle_failure(sched, qpi, status, message, "")
        if binding and status.is_rejected():
            sched.queue.move_all(q.ASSIGNED_POD_DELETE, lambda other: other.uid != pod.uid)
