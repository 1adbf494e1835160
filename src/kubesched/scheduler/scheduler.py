"""The Scheduler: queue + cache + profiles, fed by cluster events (upstream ``scheduler.go`` and
``eventhandlers.go``). It depends only on the Cluster port (``ports.py``), never on a backend."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kubesched.api.selectors import pod_matches_node_selector_and_affinity
from kubesched.api.tolerations import find_untolerated_taint
from kubesched.k8s.objects import Obj, is_terminal, scheduler_name_of
from kubesched.scheduler import features
from kubesched.scheduler import queue as q
from kubesched.scheduler.binding import BindingMode, InlineBinding
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.config import build_extenders, build_profile, parse_configuration
from kubesched.scheduler.framework.interface import (
    ADD,
    DELETE,
    UPDATE,
    UPDATE_NODE_ALLOCATABLE,
    UPDATE_NODE_CONDITION,
    UPDATE_NODE_LABEL,
    UPDATE_NODE_TAINT,
    ClusterEvent,
    Status,
)
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import PODS, NodeInfo, PodInfo
from kubesched.scheduler.handle import ProfileHandle
from kubesched.scheduler.metrics import Metrics
from kubesched.scheduler.plugins.affinityterms import parse_pod_terms
from kubesched.scheduler.plugins.fit import fits
from kubesched.scheduler.plugins.nodeports import port_conflicts
from kubesched.scheduler.ports import Cluster, Timers
from kubesched.scheduler.records import Recorder

IGNORED_META = ("resourceVersion", "generation", "managedFields")


def _assigned(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _namespace_labels(cluster: Cluster) -> Callable[[str], Mapping[str, str]]:
    """``namespace -> labels`` from the cluster (upstream ``GetNamespaceLabelsSnapshot``: the
    namespace lister; an unknown namespace has no labels), memoised for one event."""
    memo: dict[str, Mapping[str, str]] = {}

    def lookup(namespace: str) -> Mapping[str, str]:
        labels = memo.get(namespace)
        if labels is None:
            ns = cluster.get("Namespace", "", namespace)
            found: dict[str, str] = {}
            if ns is not None:  # as ProfileHandle.namespace_labels (the API server sets this label)
                found = dict((ns.get("metadata") or {}).get("labels") or {})
                found.setdefault("kubernetes.io/metadata.name", namespace)
            labels = memo[namespace] = found
        return labels

    return lookup


def _scheduling_relevant(pod: Obj) -> tuple[Any, ...]:
    meta = {k: v for k, v in (pod.get("metadata") or {}).items() if k not in IGNORED_META and k != "finalizers"}
    return (meta, pod.get("spec"))


def node_event(new: Obj, old: Obj) -> ClusterEvent | None:
    """Upstream nodeSchedulingPropertiesChange: the first relevant change, or None."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if bool(ns.get("unschedulable")) != bool(os_.get("unschedulable")) and not ns.get("unschedulable"):
        return ClusterEvent("Node", UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange")
    nst, ost = new.get("status") or {}, old.get("status") or {}
    if nst.get("allocatable") != ost.get("allocatable"):
        return ClusterEvent("Node", UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange")
    if (new["metadata"].get("labels") or {}) != (old["metadata"].get("labels") or {}):
        return ClusterEvent("Node", UPDATE_NODE_LABEL, "NodeLabelChange")
    if (ns.get("taints") or []) != (os_.get("taints") or []):
        return ClusterEvent("Node", UPDATE_NODE_TAINT, "NodeTaintChange")

    def conditions(st: Obj) -> dict[str, str]:
        return {c.get("type"): c.get("status") for c in st.get("conditions") or ()}

    if conditions(nst) != conditions(ost):
        return ClusterEvent("Node", UPDATE_NODE_CONDITION, "NodeConditionChange")
    return None


class Scheduler:
    def __init__(
        self,
        cluster: Cluster,
        config: dict[str, Any] | None,
        rng: np.random.Generator,
        clock: Callable[[], float],
        *,
        record_attempts: bool = False,
        config_dir: Path | None = None,
        bind_for_extenders: bool = False,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        """``config_dir``: where the configuration's file is (relative ``python:`` extender files are
        found from there). ``bind_for_extenders``: when a bind extender accepts a binding, record it
        in the cluster on the extender's behalf (a simulation, whose API server no extender can
        reach); against a real cluster the extender binds the pod itself. ``feature_gates``: the
        gates turned on or off (:mod:`kubesched.scheduler.features`; unknown names are refused)."""
        self.features = features.resolve(feature_gates)
        self.cluster = cluster
        self.rng = rng
        self.clock = clock
        #: the attempts (``record_attempts``: for explanations) and preemption decisions kept
        self.records = Recorder(keep_attempts=record_attempts)
        #: the clock that timeouts and binding cycles that wait run on (set by the SchedulerLoop);
        #: None: they wait on the wall clock, blocking
        self.timers: Timers | None = None
        #: how binding cycles run: in the scheduling cycle (a simulation) unless the runner of a
        #: long-running scheduler puts them in the background
        self.binding: BindingMode = InlineBinding(lambda: self.timers)
        #: state the profiles' plugins share (upstream: package-level variables), by key
        self.shared_sets: dict[str, set[str]] = {}
        self.metrics = Metrics()
        self.settings = parse_configuration(config)
        self.extenders = build_extenders(
            self.settings.extenders, config_dir, cluster.bind if bind_for_extenders else None)
        self.cache = Cache()
        self.next_start_node_index = 0
        # updates of the pod being scheduled are applied once its cycle has finished: a real
        # scheduler sees its own mid-cycle API writes only later, through the watch
        self.in_flight: str | None = None
        self._deferred: list[tuple[Obj, Obj]] = []
        nominator = q.Nominator(self._exists_unassigned)
        self.frameworks: dict[str, Framework] = {}
        #: per kind other than Node and Pod: how many adds, updates and deletes the scheduler saw
        self.generations: Counter[str] = Counter()
        handles: dict[str, ProfileHandle] = {}

        def handle_for(name: str) -> ProfileHandle:
            handles[name] = ProfileHandle(self, name)
            return handles[name]

        for i, raw in enumerate(self.settings.profiles):
            profile = build_profile(raw, i, handle_for, self.settings.ignored_by_extenders)
            fwk = Framework(profile, nominator, self.extenders)
            handles[profile.scheduler_name].framework = fwk
            self.frameworks[profile.scheduler_name] = fwk
        self._events = {name: fwk.events_by_plugin() for name, fwk in self.frameworks.items()}
        # kinds other than Pod and Node that some plugin wants to hear about (e.g. NodeResourceTopology)
        self._other_kinds = {
            evt.resource
            for events in self._events.values() for plugin_events in events.values() for evt in plugin_events
        } - {"Pod", "Node", "*"}
        first = next(iter(self.frameworks.values()))
        self.queue = q.SchedulingQueue(
            clock,
            lambda qpi: first.sort_key(qpi.pod, qpi.timestamp, qpi.initial_attempt_timestamp),
            self._pre_enqueue,
            lambda name: self._events.get(name, {}),
            nominator,
            initial_backoff=self.settings.pod_initial_backoff_seconds,
            max_backoff=self.settings.pod_max_backoff_seconds,
        )

    def enable_timing(self) -> None:
        """Measure durations for the metrics a long-running scheduler exports (scheduling attempts,
        extension points, sampled plugin executions, the scheduling SLI)."""
        metrics = self.metrics
        metrics.timing = True
        for name, fwk in self.frameworks.items():
            def observe_point(point: str, status: str, seconds: float, profile: str = name) -> None:
                metrics.observe_point(point, status, profile, seconds)

            fwk.enable_timing(observe_point, metrics.observe_plugin, lambda: metrics.sampling)

    # -- helpers ------------------------------------------------------------------------------
    def framework_for(self, pod: PodInfo) -> Framework | None:
        return self.frameworks.get(pod.scheduler_name)

    def _responsible(self, pod: Obj) -> bool:
        return scheduler_name_of(pod) in self.frameworks

    def _pre_enqueue(self, pod: PodInfo) -> Status | None:
        fwk = self.framework_for(pod)
        return fwk.run_pre_enqueue(pod) if fwk is not None else None

    def _exists_unassigned(self, pod: PodInfo) -> bool:
        current = self.cluster.get("Pod", pod.namespace, pod.name)
        return current is not None and not _assigned(current)

    # -- start-up: the informers' initial list -----------------------------------------------
    def start(self) -> None:
        for node in self.cluster.list("Node"):
            self.cache.add_node(node)
        for pod in self.cluster.list("Pod"):
            self.on_add("Pod", pod)
        self.cluster.watch(self)

    def close(self) -> None:
        """At the end of a run: let go of the connections the extenders keep open (a later call
        would open new ones)."""
        for extender in self.extenders:
            extender.close()

    # -- event handlers -----------------------------------------------------------------------
    def _other_kind_event(self, kind: str, action: int) -> None:
        self.generations[kind] += 1
        if kind in self._other_kinds:
            self.queue.move_all(ClusterEvent(kind, action, f"{kind}Change"))

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind not in ("Node", "Pod"):
            self._other_kind_event(kind, ADD)
        elif kind == "Node":
            info = self.cache.add_node(obj)
            self.queue.move_all(q.NODE_ADD, self._pre_check_for_node(info))
        elif kind == "Pod":
            if is_terminal(obj):
                return
            if _assigned(obj):
                pod = PodInfo.from_pod(obj)
                self.cache.add_pod(pod)
                self._assigned_pod_added(pod, q.ASSIGNED_POD_ADD)
            elif self._responsible(obj):
                self.queue.add(PodInfo.from_pod(obj))

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind not in ("Node", "Pod"):
            self._other_kind_event(kind, UPDATE)
            return
        if kind == "Node":
            info = self.cache.update_node(new)
            event = node_event(new, old)
            if event is not None:
                self.queue.move_all(event, self._pre_check_for_node(info))
            return
        if kind != "Pod":
            return
        if is_terminal(new):
            if not is_terminal(old):
                self.on_delete("Pod", old)
            return
        if _assigned(new):
            uid = new["metadata"].get("uid", "")
            previous = self.cache.pod_info(uid)
            if previous is None:
                queued = self.queue.queued(uid)
                previous = queued.pod if queued is not None else None
            pod = PodInfo.from_pod(new, previous)
            if not _assigned(old):
                self.queue.delete(PodInfo.from_pod(old, pod))
                self.cache.add_pod(pod)
                self._assigned_pod_added(pod, q.ASSIGNED_POD_ADD)
            else:
                self.cache.update_pod(pod)
                self._assigned_pod_added(pod, q.ASSIGNED_POD_UPDATE)
            return
        if not self._responsible(new):
            if self._responsible(old):
                self.queue.delete(PodInfo.from_pod(old))
            return
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if self.in_flight is not None and new["metadata"].get("uid") == self.in_flight:
            self._deferred.append((old, new))
            return
        queued = self.queue.queued(new["metadata"].get("uid", ""))
        new_info = PodInfo.from_pod(new, queued.pod if queued is not None else None)
        if self.cache.is_assumed(new_info.uid):
            return
        changed = _scheduling_relevant(old) != _scheduling_relevant(new)
        self.queue.update(PodInfo.from_pod(old, new_info), new_info, changed)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind not in ("Node", "Pod"):
            self._other_kind_event(kind, DELETE)
        elif kind == "Node":
            self.cache.remove_node(obj)
        elif kind == "Pod":
            if is_terminal(obj):
                return  # the informer stopped seeing it when it turned terminal
            pod = PodInfo.from_pod(obj)
            fwk = self.framework_for(pod)
            waiting = fwk.waiting_pods.get(pod.uid) if fwk is not None else None
            if waiting is not None:  # upstream RejectWaitingPod: the pod was assumed, held at Permit
                waiting.reject("", "removed")
            if _assigned(obj) or self.cache.pod_node(pod.uid) is not None:
                self.cache.remove_pod(pod)
                self.queue.move_all(q.ASSIGNED_POD_DELETE)
            else:
                self.queue.delete(pod)

    def _assigned_pod_added(self, pod: PodInfo, event: ClusterEvent) -> None:
        ns_labels = _namespace_labels(self.cluster)
        matching = [
            qpi for qpi in self.queue.unschedulable_pods() if _required_affinity_matches(qpi.pod, pod, ns_labels)
        ]
        self.queue.move_pods(matching, event)

    def _pre_check_for_node(self, info: NodeInfo) -> Callable[[PodInfo], bool]:
        """Upstream ``preCheckForNode``: ``AdmissionCheck`` (``noderesources.Fits`` with nothing
        ignored, required node selector/affinity, nodeName, host ports) plus the node's NoSchedule
        taints. Independent of the profiles' plugin configuration."""
        node = info.node or {}

        def check(pod: PodInfo) -> bool:
            if not _fits_request(pod, info):
                return False
            if not pod_matches_node_selector_and_affinity(pod.obj, node):
                return False
            wanted = pod.spec.get("nodeName")
            if wanted and wanted != info.name:
                return False
            if any(port_conflicts(info.used_ports, p) for p in pod.host_ports):
                return False
            return find_untolerated_taint(info.taints, pod.tolerations, ("NoSchedule",)) is None

        return check

    def finish_cycle(self) -> None:
        """Replay updates of the pod whose cycle just ended."""
        self.in_flight = None
        deferred, self._deferred = self._deferred, []
        for old, new in deferred:
            self.on_update("Pod", old, new)

    # -- running --------------------------------------------------------------------------------
    def schedule_pending(self) -> int:
        """Run scheduling cycles while activeQ has pods; return how many ran."""
        from kubesched.scheduler.cycle import schedule_one

        count = 0
        while self.queue.has_active():
            if schedule_one(self):
                count += 1
        return count


def _fits_request(pod: PodInfo, info: NodeInfo) -> bool:
    """Upstream ``noderesources.Fits`` (``fitsRequest`` with no ignored resources): the pod count,
    then every resource the pod requests a non-zero amount of — of any name, where upstream checks
    only the names ``fit_requests`` keeps (cpu, memory, ephemeral storage, scalar resources)."""
    checked = [(resource, amount) for resource, amount in pod.requests.items() if resource != PODS and amount > 0]
    return not fits(checked, allocatable=info.allocatable, requested=info.requested, pods=len(info.pods),
                    allowed_pods=info.allowed_pods)


def _required_affinity_matches(
    pending: PodInfo, assigned: PodInfo, ns_labels: Callable[[str], Mapping[str, str]]
) -> bool:
    """Upstream ``getUnschedulablePodsWithMatchingAffinityTerm``: does ``assigned`` match one of
    ``pending``'s required pod-affinity terms (``AffinityTerm.Matches``: the namespace is listed or
    matches the namespaceSelector, and the labels match the term's selector)?"""
    return any(term.matches(assigned, ns_labels) for term in parse_pod_terms(pending).required_affinity)
