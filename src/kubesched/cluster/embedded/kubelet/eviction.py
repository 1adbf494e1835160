"""Kubelet node-pressure eviction in the embedded cluster (``spec.cluster.eviction``).

Each simulated kubelet runs the eviction manager's loop (upstream ``managerImpl.Start``):
synchronize; if that evicted a pod, wait until the pod is cleaned up and synchronize again at once;
otherwise sleep ``monitoringPeriod`` (10 s). A node that has never evicted runs at the instants
``k × period`` that all such nodes share (its synchronize evicts nothing, so it always sleeps a whole
period). A node's first eviction takes it off that grid for good: from then on its loop runs on its
own phase, one period after its last synchronize that evicted nothing:

- evicting blocks synchronize until the pod is killed (upstream ``killPod`` with a grace period
  override): at once for a hard threshold, ``evictionMaxPodGracePeriod`` later for a soft one;
- then the kubelet checks every second (``podCleanupPollFreq``, the first check one second after the
  kill) whether the pod is cleaned up — terminal, or deleted, and no longer running on the node — and
  synchronizes again as soon as it is, or 30 s after the kill (``podCleanupTimeout``) if it never is.

So a node under pressure evicts its pods about a second apart (hard thresholds), or
``evictionMaxPodGracePeriod`` + 1 s apart (soft), not one per period. In this model a killed pod is
cleaned up the moment it is killed (no finalizers, container removal or volume teardown are
modelled), so the wait ends at its first check; the timeout covers a pod still running on the node
after its kill. While a kill or a cleanup wait runs the node is not synchronized (upstream's loop is
blocked there too).

Each synchronize:

1. observes ``memory.available`` = capacity − Σ usage of the running pods (``nodefs.available``
   likewise with ``ephemeral-storage``); usage comes from :mod:`~kubesched.cluster.embedded.kubelet.usage`.
   Capacity is the Node's ``status.capacity``; a Node that only gives ``allocatable`` is taken to
   reserve exactly the hard threshold (capacity = allocatable + threshold), so pods may use their
   whole allocatable before the node is under pressure;
2. finds the thresholds met: ``available < threshold`` (hard at once, soft once met for its grace
   period); a met threshold stays met until ``threshold + evictionMinimumReclaim`` is available again;
3. node conditions (MemoryPressure, DiskPressure) hold while a threshold was met within the last
   ``evictionPressureTransitionPeriod`` (5 min). A change reaches the Node object with the next
   node status update (every ``nodeStatusUpdateFrequency``, at the instants ``k × frequency +
   frequency / 2``), and with it the node lifecycle controller's taint
   ``node.kubernetes.io/<memory|disk>-pressure: NoSchedule`` (TaintNodesByCondition) — which keeps
   the scheduler away from the node;
4. if a threshold is met, ranks the node's running pods (usage above request first, then lower
   priority, then larger usage − request; :func:`rank_for_eviction`) and evicts the first one that is
   not critical (priority ≥ 2,000,000,000, static or mirror): **one pod per synchronize**. The pod
   turns Failed, reason ``Evicted``, the kubelet's message, condition
   ``DisruptionTarget``/``TerminationByKubelet`` when it is killed; an ``Evicted`` event is recorded
   when it is chosen. Controllers replace it like any failed pod.

While a node has a pressure condition the kubelet's admission refuses BestEffort pods (any pod under
disk pressure) that are not critical and do not tolerate the taint: Failed, reason ``Evicted``,
"The node had condition: [MemoryPressure]. ".

The loops' timers (the shared grid's, and each node's own once it has one) are background timers
(they do not keep a run alive) except when something is left to do: a usage change not yet
observed, a threshold still met, a pressure condition that has to clear; a kill or a cleanup wait
always keeps the run alive. Pods in their termination grace period still run and are ranked like the
others; evicting one for a hard threshold kills it at once.

``report()`` → ``cluster.eviction``: ``evictions`` (time, pod, node, signal, priority, usage,
request, message), ``nodeConditions`` (time, node, type, status, as written to the Node), and
``pingPongAvoidance`` when that option is on (:mod:`~kubesched.cluster.embedded.kubelet.pingpong`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.cluster_settings.eviction import (
    SIGNALS,
    EvictionConfig,
    NodeSettings,
    Threshold,
    parse_config,
)
from kubesched.api.quantity import format_quantity
from kubesched.api.resources import node_allocatable
from kubesched.api.tolerations import is_tolerated
from kubesched.cluster.embedded.kubelet.eviction_rank import (
    EVICTED_REASON,
    TERMINATION_BY_KUBELET,
    Candidate,
    admission_message,
    container_usages,
    eviction_message,
    is_critical,
    rank_for_eviction,
)
from kubesched.cluster.embedded.kubelet.lifecycle import ADMIT, PodAdmitResult
from kubesched.cluster.embedded.kubelet.pingpong import PingPongAvoidance
from kubesched.cluster.embedded.kubelet.usage import NodeUsage, RunningPod
from kubesched.des.clock import Timer
from kubesched.k8s.objects import DISRUPTION_TARGET, ApiError, Obj, is_terminal
from kubesched.k8s.timefmt import rfc3339

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

__all__ = ["EvictionManager", "start_eviction"]

_CONDITION_TEXT = {
    ("MemoryPressure", True): ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
                               "NodeHasInsufficientMemory"),
    ("MemoryPressure", False): ("KubeletHasSufficientMemory", "kubelet has sufficient memory available",
                                "NodeHasSufficientMemory"),
    ("DiskPressure", True): ("KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure"),
    ("DiskPressure", False): ("KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure"),
}
_CONDITION_TAINT = {s.condition: s.taint_key for s in SIGNALS.values()}
#: upstream ``podCleanupPollFreq``: how often the loop checks whether the evicted pod is cleaned up
POD_CLEANUP_POLL = 1.0
#: upstream ``podCleanupTimeout``: after this long the loop gives up waiting and synchronizes again
POD_CLEANUP_TIMEOUT = 30.0


@dataclass
class _NodeState:
    """What one kubelet's eviction manager remembers between two synchronize runs."""

    first_observed: dict[Threshold, float] = field(default_factory=dict)
    last_observed: dict[str, float] = field(default_factory=dict)  # condition -> time
    conditions: frozenset[str] = frozenset()  # the kubelet's view
    reported: frozenset[str] = frozenset()  # what the Node object says
    dirty: bool = True
    pressure: bool = False  # a threshold was met at the last synchronize
    active: bool = False  # the next synchronize can act (evict, or a soft grace period runs out)
    own_loop: bool = False  # off the shared grid since its first eviction: the loop keeps its own phase
    timer: Timer | None = None  # own loop: its next step (synchronize, end of a kill, cleanup check)
    report_timer: Timer | None = None


@dataclass(frozen=True, slots=True)
class _Eviction:
    """The pod a synchronize chose to evict, and how: killed ``grace`` seconds after the choice."""

    victim: RunningPod
    message: str
    grace: float


class EvictionManager:
    def __init__(self, cluster: EmbeddedCluster, config: EvictionConfig) -> None:
        self.cluster = cluster
        self.config = config
        self.usage = NodeUsage(cluster, config.default_usage)
        self.usage.subscribe(self._usage_changed)
        self.nodes: dict[str, _NodeState] = {}
        self.evictions: list[dict[str, Any]] = []
        self.condition_log: list[dict[str, Any]] = []
        self.avoidance = PingPongAvoidance(cluster, config.ping_pong) if config.ping_pong else None
        cluster.node_agent.add_pod_admit_handler(self)
        self._next: Timer | None = None
        self._schedule(0.0)

    # -- loop ----------------------------------------------------------------------------------
    def _schedule(self, when: float) -> None:
        """The shared grid's next instant: the nodes that have never evicted synchronize there."""
        self._next = self.cluster.loop.call_at(when, self._tick, background=not self._needs_attention())

    def _needs_attention(self) -> bool:
        return any(_needs_attention(s) for s in self.nodes.values() if not s.own_loop)

    def _usage_changed(self, node: str) -> None:
        state = self.nodes.setdefault(node, _NodeState())
        state.dirty = True
        timer = state.timer if state.own_loop else self._next
        if timer is None or not timer.background or timer.cancelled:
            return  # no sleep to wake up from, or already in the foreground (a kill or cleanup wait)
        self.cluster.loop.cancel(timer)
        foreground = self.cluster.loop.call_at(timer.when, timer.callback)
        if state.own_loop:
            state.timer = foreground
        else:
            self._next = foreground

    def _tick(self) -> None:
        now = self.cluster.now()
        for name in sorted(set(self.nodes) | set(self.usage.nodes())):
            state = self.nodes.setdefault(name, _NodeState())
            if not state.own_loop and _has_anything_to_observe(state):
                self._run(name, state)
        period = self.config.monitoring_period
        self._schedule((math.floor(now / period + 1e-9) + 1) * period)

    def _run(self, name: str, state: _NodeState) -> None:
        """One turn of node ``name``'s loop: synchronize, then kill and wait for the cleanup if it
        evicted, else (on its own phase) sleep a period."""
        eviction = self.synchronize(name, state)
        if self.nodes.get(name) is not state:
            return  # the Node is gone, and its loop with it
        if eviction is None:
            if state.own_loop:
                self._sleep(name, state)
            return
        state.own_loop = True
        if eviction.grace <= 0:
            self._kill_victim(name, state, eviction)
        else:
            state.timer = self.cluster.loop.call_later(
                eviction.grace, functools.partial(self._kill_victim, name, state, eviction))

    def _sleep(self, name: str, state: _NodeState) -> None:
        state.timer = self.cluster.loop.call_later(self.config.monitoring_period,
                                                   functools.partial(self._wake, name, state),
                                                   background=not _needs_attention(state))

    def _wake(self, name: str, state: _NodeState) -> None:
        state.timer = None
        if self.nodes.get(name) is not state:
            return
        gone = self.cluster.api.get("Node", None, name) is None  # its synchronize ends the loop
        if _has_anything_to_observe(state) or gone:
            self._run(name, state)
        else:  # nothing to observe: the same as a synchronize that finds nothing to do
            self._sleep(name, state)

    def _kill_victim(self, name: str, state: _NodeState, eviction: _Eviction) -> None:
        """The kill returns (the end of the grace period): the cleanup wait starts."""
        state.timer = None
        pod = self._current(eviction.victim)
        if pod is not None:
            self._kill(pod, eviction.message)
        self._check_cleanup(name, state, eviction.victim, self.cluster.now(), 1)

    def _check_cleanup(self, name: str, state: _NodeState, victim: RunningPod, killed: float, checks: int) -> None:
        """Check ``checks`` of upstream's ``waitForPodsCleanup`` (one each ``POD_CLEANUP_POLL`` after
        the kill, the last one at ``POD_CLEANUP_TIMEOUT``)."""
        when = killed + checks * POD_CLEANUP_POLL
        deadline = killed + POD_CLEANUP_TIMEOUT

        def check() -> None:
            state.timer = None
            if when >= deadline or self._cleaned_up(victim):
                self._run(name, state)
            else:
                self._check_cleanup(name, state, victim, killed, checks + 1)

        state.timer = self.cluster.loop.call_at(min(when, deadline), check)

    def _cleaned_up(self, victim: RunningPod) -> bool:
        """Upstream ``PodCleanedUpFunc``: terminal (or deleted) and no container left running."""
        pod = self._current(victim)
        return (pod is None or is_terminal(pod)) and not self.usage.tracks(victim.node, _uid(victim))

    # -- one kubelet -----------------------------------------------------------------------------
    def _observe(self, node: Obj, settings: NodeSettings, name: str) -> dict[str, tuple[int, int]]:
        """signal -> (capacity, available)."""
        capacity = (node.get("status") or {}).get("capacity") or {}
        allocatable = node_allocatable(node)
        out: dict[str, tuple[int, int]] = {}
        for signal in sorted({t.signal.name for t in settings.thresholds}):
            resource = SIGNALS[signal].resource
            cap = _capacity(capacity, allocatable, resource, settings.hard(signal))
            if cap is None:
                continue
            out[signal] = (cap, cap - self.usage.node_usage(name, resource))
        return out

    def synchronize(self, name: str, state: _NodeState) -> _Eviction | None:
        """The eviction manager's ``synchronize`` for node ``name``: the pod it evicts, if any (the
        caller kills it)."""
        now = self.cluster.now()
        state.dirty = False
        node = self.cluster.api.get("Node", None, name)
        if node is None:
            self.nodes.pop(name, None)
            return None
        settings = self.config.for_node(node)
        observed = self._observe(node, settings, name)
        # met now, or met before and not yet resolved: available below threshold + minimum reclaim
        # (upstream thresholdsMet with and without enforceMinReclaim, merged)
        met = []
        for t in settings.thresholds:
            if t.signal.name in observed:
                cap, available = observed[t.signal.name]
                if available < (t.resolved_at(cap) if t in state.first_observed else t.value(cap)):
                    met.append(t)
        state.first_observed = {t: state.first_observed.get(t, now) for t in met}
        for t in met:
            state.last_observed[t.signal.condition] = now
        conditions = frozenset(c for c, seen in state.last_observed.items()
                               if now - seen < self.config.pressure_transition_period)
        state.last_observed = {c: t for c, t in state.last_observed.items() if c in conditions}
        if conditions != state.conditions:
            state.conditions = conditions
            self._report_soon(name, state)
        actionable = [t for t in met if t.hard or now - state.first_observed[t] >= t.grace_period]
        state.pressure = bool(met)
        state.active = bool(met)
        if not actionable:
            return None
        # memory signals first, hard before soft (upstream byEvictionPriority)
        threshold = min(actionable, key=lambda t: (t.signal.resource != "memory", not t.hard))
        cap, available = observed[threshold.signal.name]
        eviction = self._evict_one(name, threshold, threshold.value(cap), available, settings)
        # nothing evictable: the node stays as it is until usage changes (which marks it dirty)
        state.active = eviction is not None
        return eviction

    def _evict_one(self, node: str, threshold: Threshold, value: int, available: int,
                   settings: NodeSettings) -> _Eviction | None:
        resource = threshold.signal.resource
        now = self.cluster.now()
        running: dict[str, tuple[RunningPod, Obj]] = {}
        for p in self.usage.pods_on(node):
            current = self._current(p)
            # terminating pods still run and count (upstream's active pods); a pod already killed
            # whose containers are not gone yet is no candidate
            if current is not None and not is_terminal(current):
                running[p.key] = (p, current)
        candidates = [Candidate(k, int((pod.get("spec") or {}).get("priority") or 0),
                                p.usage(resource, now), p.request(resource)) for k, (p, pod) in running.items()]
        for candidate in rank_for_eviction(candidates):
            victim, pod = running[candidate.key]
            if is_critical(pod):
                continue
            message = eviction_message(resource, value, available,
                                       container_usages(pod, resource, candidate.usage))
            grace = 0 if threshold.hard else settings.max_pod_grace_period
            self.evictions.append({
                "time": round(now, 6), "pod": candidate.key, "node": node, "signal": threshold.signal.name,
                "priority": candidate.priority, "usage": format_quantity(resource, candidate.usage),
                "request": format_quantity(resource, candidate.request), "message": message,
            })
            self.cluster.log.record(EVICTED_REASON, candidate.key, node=node, message=message)
            if self.avoidance is not None:
                self.avoidance.note_eviction(pod, node, victim.started)
            return _Eviction(victim, message, grace)
        return None

    def _current(self, running: RunningPod) -> Obj | None:
        meta = running.pod["metadata"]
        pod = self.cluster.api.get("Pod", meta.get("namespace"), meta["name"])
        if pod is None or pod["metadata"].get("uid") != meta.get("uid"):
            return None
        return pod

    def _kill(self, pod: Obj, message: str) -> None:
        if is_terminal(pod):
            return
        status = dict(pod.get("status") or {})
        condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": TERMINATION_BY_KUBELET,
                     "message": message, "lastTransitionTime": rfc3339(self.cluster.now())}
        status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != DISRUPTION_TARGET]
        status["conditions"].append(condition)
        try:
            killed = self.cluster.node_agent.set_terminal({**pod, "status": status}, "Failed", EVICTED_REASON,
                                                          message)
            if killed["metadata"].get("deletionTimestamp"):  # was being deleted: the deletion completes now
                self.cluster.api.delete("Pod", killed["metadata"].get("namespace"), killed["metadata"]["name"])
        except ApiError:
            pass

    # -- node status -----------------------------------------------------------------------------
    def _report_soon(self, name: str, state: _NodeState) -> None:
        if state.report_timer is not None and not state.report_timer.cancelled:
            return
        freq = self.config.node_status_update_frequency
        now = self.cluster.now()
        when = now if freq <= 0 else (math.floor((now - freq / 2) / freq + 1e-9) + 1) * freq + freq / 2
        state.report_timer = self.cluster.loop.call_at(when, lambda: self._report(name, state))

    def _report(self, name: str, state: _NodeState) -> None:
        state.report_timer = None
        node = self.cluster.api.get("Node", None, name)
        if node is None or state.conditions == state.reported:
            return
        now = self.cluster.now()
        changed = sorted(state.conditions ^ state.reported)
        status = dict(node.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") not in changed]
        spec = dict(node.get("spec") or {})
        taints = [t for t in spec.get("taints") or [] if t.get("key") not in {_CONDITION_TAINT[c] for c in changed}]
        for ctype in changed:
            on = ctype in state.conditions
            reason, message, event = _CONDITION_TEXT[(ctype, on)]
            conditions.append({"type": ctype, "status": "True" if on else "False", "reason": reason,
                               "message": message, "lastTransitionTime": rfc3339(now),
                               "lastHeartbeatTime": rfc3339(now)})
            if on and self.config.taint_nodes_by_condition:
                taints.append({"key": _CONDITION_TAINT[ctype], "effect": "NoSchedule"})
            self.condition_log.append({"time": round(now, 6), "node": name, "type": ctype,
                                       "status": "True" if on else "False"})
            self.cluster.log.record(event, f"Node/{name}", node=name, message=message)
        status["conditions"] = conditions
        spec["taints"] = taints
        if not taints:
            spec.pop("taints")
        state.reported = state.conditions
        self.cluster.api.update({**node, "spec": spec, "status": status})

    # -- kubelet admission (PodAdmitHandler) ---------------------------------------------------------
    def admit(self, pod: Obj, node: Obj) -> PodAdmitResult:
        state = self.nodes.get((node.get("metadata") or {}).get("name") or "")
        if state is None or not state.conditions or is_critical(pod):
            return ADMIT
        if state.conditions == frozenset({"MemoryPressure"}):
            qos = (pod.get("status") or {}).get("qosClass")
            if qos is None:
                from kubesched.cluster.embedded.apiserver.quota import pod_qos_class

                qos = pod_qos_class(pod)
            if qos != "BestEffort":
                return ADMIT
            taint = {"key": _CONDITION_TAINT["MemoryPressure"], "effect": "NoSchedule"}
            if is_tolerated(taint, (pod.get("spec") or {}).get("tolerations") or []):
                return ADMIT
        return PodAdmitResult.refuse(EVICTED_REASON, admission_message(sorted(state.conditions)))

    # -- result ------------------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {"evictions": list(self.evictions), "nodeConditions": list(self.condition_log)}
        if self.avoidance is not None:
            out["pingPongAvoidance"] = list(self.avoidance.applied)
        return out


def _has_anything_to_observe(state: _NodeState) -> bool:
    """Whether a synchronize now could see something: a usage change, pressure, a condition."""
    return bool(state.dirty or state.pressure or state.conditions)


def _needs_attention(state: _NodeState) -> bool:
    """Whether the node's next synchronize has something to do: keep the run alive until it ran."""
    return state.dirty or state.active or bool(state.conditions and not state.pressure)


def _uid(running: RunningPod) -> str:
    return str(running.pod["metadata"].get("uid", ""))


def _capacity(capacity: dict[str, Any], allocatable: dict[str, int], resource: str,
              hard: Threshold | None) -> int | None:
    from kubesched.api.quantity import resource_amount

    if capacity.get(resource) is not None:
        return resource_amount(resource, capacity[resource])
    if resource not in allocatable:
        return None
    alloc = allocatable[resource]
    if hard is None:
        return alloc
    if hard.quantity is not None:
        return alloc + hard.quantity
    pct = hard.percentage or 0.0
    return int(alloc / (1 - pct)) if pct < 1 else alloc


def start_eviction(cluster: EmbeddedCluster, section: dict[str, Any]) -> EvictionManager:
    """Factory for ``spec.cluster.eviction`` (see :mod:`kubesched.cluster.embedded.subsystems`)."""
    return EvictionManager(cluster, parse_config(section))
