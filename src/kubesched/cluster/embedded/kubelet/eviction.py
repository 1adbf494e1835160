"""Kubelet node-pressure eviction in the embedded cluster (``spec.cluster.eviction``).

Each simulated kubelet runs the eviction manager's synchronize loop every ``monitoringPeriod``
(10 s) — all nodes at the same instants, ``k × period``:

1. observe ``memory.available`` = capacity − Σ usage of the running pods (``nodefs.available``
   likewise with ``ephemeral-storage``); usage comes from :mod:`~kubesched.cluster.embedded.kubelet.usage`.
   Capacity is the Node's ``status.capacity``; a Node that only gives ``allocatable`` is taken to
   reserve exactly the hard threshold (capacity = allocatable + threshold), so pods may use their
   whole allocatable before the node is under pressure;
2. thresholds met: ``available < threshold`` (hard at once, soft once met for its grace period); a
   met threshold stays met until ``threshold + evictionMinimumReclaim`` is available again;
3. node conditions (MemoryPressure, DiskPressure) hold while a threshold was met within the last
   ``evictionPressureTransitionPeriod`` (5 min). A change reaches the Node object with the next
   node status update (every ``nodeStatusUpdateFrequency``, half a period after the eviction loop),
   and with it the node lifecycle controller's taint ``node.kubernetes.io/<memory|disk>-pressure:
   NoSchedule`` (TaintNodesByCondition) — which keeps the scheduler away from the node;
4. if a threshold is met, rank the node's running pods (usage above request first, then lower
   priority, then larger usage − request; :func:`rank_for_eviction`) and evict the first one that is
   not critical (priority ≥ 2,000,000,000, static or mirror): **one pod per period**. Hard
   thresholds kill at once, soft ones after ``evictionMaxPodGracePeriod``. The pod turns Failed,
   reason ``Evicted``, the kubelet's message, condition ``DisruptionTarget``/``TerminationByKubelet``;
   an ``Evicted`` event is recorded. Controllers replace it like any failed pod.

While a node has a pressure condition the kubelet's admission refuses BestEffort pods (any pod under
disk pressure) that are not critical and do not tolerate the taint: Failed, reason ``Evicted``,
"The node had condition: [MemoryPressure]. ".

The loop's timers are background timers (they do not keep a run alive) except when something is
left to do: a usage change not yet observed, a threshold still met, a pressure condition that has to
clear. Pods in their termination grace period still run and are ranked like the others; evicting one
kills it at once.

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
    evicting: str | None = None  # uid of a pod killed with a grace period
    report_timer: Timer | None = None


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
        self._next = self.cluster.loop.call_at(when, self._tick, background=not self._needs_attention())

    def _needs_attention(self) -> bool:
        return any(s.dirty or s.active or (s.conditions and not s.pressure) for s in self.nodes.values())

    def _usage_changed(self, node: str) -> None:
        self.nodes.setdefault(node, _NodeState()).dirty = True
        timer = self._next
        if timer is not None and timer.background and not timer.cancelled:
            self.cluster.loop.cancel(timer)
            self._next = self.cluster.loop.call_at(timer.when, self._tick)

    def _tick(self) -> None:
        now = self.cluster.now()
        for name in sorted(set(self.nodes) | set(self.usage.nodes())):
            state = self.nodes.setdefault(name, _NodeState())
            if state.dirty or state.pressure or state.conditions:
                self.synchronize(name, state)
        period = self.config.monitoring_period
        self._schedule((math.floor(now / period + 1e-9) + 1) * period)

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

    def synchronize(self, name: str, state: _NodeState) -> None:
        """The eviction manager's ``synchronize`` for node ``name``."""
        now = self.cluster.now()
        state.dirty = False
        node = self.cluster.api.get("Node", None, name)
        if node is None:
            self.nodes.pop(name, None)
            return
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
        state.active = bool(met) and state.evicting is None
        if not actionable or state.evicting is not None:
            return
        # memory signals first, hard before soft (upstream byEvictionPriority)
        threshold = min(actionable, key=lambda t: (t.signal.resource != "memory", not t.hard))
        cap, available = observed[threshold.signal.name]
        # nothing evictable: the node stays as it is until usage changes (which marks it dirty)
        state.active = self._evict_one(name, state, threshold, threshold.value(cap), available, settings)

    def _evict_one(self, node: str, state: _NodeState, threshold: Threshold, value: int, available: int,
                   settings: NodeSettings) -> bool:
        resource = threshold.signal.resource
        now = self.cluster.now()
        running: dict[str, tuple[RunningPod, Obj]] = {}
        for p in self.usage.pods_on(node):
            current = self._current(p)
            if current is not None:  # terminating pods still run and count (upstream's active pods)
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
            if grace <= 0:
                self._kill(pod, message)
            else:
                uid = pod["metadata"].get("uid", "")
                state.evicting = uid
                self.cluster.loop.call_later(grace, functools.partial(self._finish, victim, state, uid, message))
            return True
        return False

    def _current(self, running: RunningPod) -> Obj | None:
        meta = running.pod["metadata"]
        pod = self.cluster.api.get("Pod", meta.get("namespace"), meta["name"])
        if pod is None or pod["metadata"].get("uid") != meta.get("uid"):
            return None
        return pod

    def _finish(self, running: RunningPod, state: _NodeState, uid: str, message: str) -> None:
        if state.evicting == uid:
            state.evicting = None
        pod = self._current(running)
        if pod is not None:
            self._kill(pod, message)

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
