"""Why is a pod pending? Every filter verdict on every node (upstream shows only the first failing
plugin per node), what would have to change, and what preemption would do and cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.analysis.hints import plugin_hints
from kubesched.analysis.volume_hints import claim_hints
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.extender import (
    EXTENDER_NAME,
    ExtenderError,
    apply_verdicts,
    filter_through,
)
from kubesched.scheduler.framework.interface import Code, CycleState, Status
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.messages import fit_error_message
from kubesched.scheduler.scheduler import Scheduler


@dataclass
class NodeVerdict:
    node: str
    failures: list[dict[str, Any]] = field(default_factory=list)  # plugin, code, reason, hints
    hints: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "fits": self.fits, "failures": self.failures, "hints": self.hints}


@dataclass
class PodDiagnosis:
    pod: str
    phase: str
    node: str | None
    nominated_node: str | None
    priority: int
    upstream_message: str = ""
    pre_filter: str = ""
    #: what stops the pod before any node is looked at, in words (its claims)
    pre_filter_hints: list[str] = field(default_factory=list)
    verdicts: list[NodeVerdict] = field(default_factory=list)
    preemption: dict[str, Any] | None = None
    #: for a ``preemptionPolicy: Never`` pod: what preemption would do were it allowed
    preemption_if_allowed: dict[str, Any] | None = None
    #: a pod the kubelet refused (or that otherwise failed): ``status.reason`` and ``message``
    failed: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "phase": self.phase,
            "node": self.node,
            "nominatedNodeName": self.nominated_node,
            "priority": self.priority,
            "upstreamMessage": self.upstream_message,
            "preFilter": self.pre_filter,
            "preFilterHints": self.pre_filter_hints,
            "nodes": [v.to_dict() for v in self.verdicts],
            "preemption": self.preemption,
            "preemptionIfAllowed": self.preemption_if_allowed,
            "failed": self.failed,
        }


def _extender_verdicts(fwk: Framework, pod: PodInfo, cache: Cache, result: PodDiagnosis,
                       statuses: dict[str, Status]) -> str | None:
    """The extenders' filter over the nodes every plugin accepted, as the scheduler would call
    them: their refusals join the nodes' verdicts (plugin ``Extender``) and the statuses preemption
    sees. The error that would fail the attempt, if an extender fails and is not ignorable."""
    by_node = {v.node: v for v in result.verdicts}
    fitting = [info for info in cache.node_infos if by_node[info.name].fits]
    try:
        passed, verdicts = filter_through(fwk.extenders, pod, fitting)
    except ExtenderError as err:
        return str(err)
    refused = set()
    for verdict in verdicts:
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if verdict.unresolvable else Code.UNSCHEDULABLE
        if verdict.node in by_node:
            by_node[verdict.node].failures.append({"plugin": EXTENDER_NAME, "extender": verdict.extender,
                                                   "code": code.name, "reason": verdict.reason, "hints": []})
            refused.add(verdict.node)
    kept = {info.name for info in passed}
    for info in fitting:
        if info.name not in kept and info.name not in refused:
            by_node[info.name].failures.append({"plugin": EXTENDER_NAME, "code": Code.UNSCHEDULABLE.name,
                                                "reason": "left out by an extender that gave no reason", "hints": []})
    apply_verdicts(statuses, verdicts)
    return None


def diagnose(scheduler: Scheduler, namespace: str, name: str, *, detail: bool = True) -> PodDiagnosis:
    """Diagnose a pod against the scheduler's current cache (no side effects on the cluster).
    Without ``detail``, only what kube-scheduler would report is worked out (``upstream_message``,
    ``pre_filter``, ``preemption``): the filters run over all nodes at once, as a scheduling cycle
    runs them, instead of node by node with every failing filter and its hints."""
    obj = scheduler.cluster.get("Pod", namespace, name)
    if obj is None:
        raise KeyError(f"pod {namespace}/{name} not found")
    pod = PodInfo.from_pod(obj)
    status = obj.get("status") or {}
    result = PodDiagnosis(
        pod=pod.key,
        phase=status.get("phase") or "Pending",
        node=pod.node_name or None,
        nominated_node=pod.nominated_node_name or None,
        priority=pod.priority,
    )
    if status.get("reason"):
        result.failed = {"reason": str(status["reason"]), "message": str(status.get("message") or "")}
    fwk = scheduler.framework_for(pod)
    if fwk is None:
        result.pre_filter = f"no profile for schedulerName {pod.scheduler_name!r}"
        return result
    cache = scheduler.cache
    cache.update_snapshot()
    state = CycleState()

    def ns_labels(namespace: str) -> dict[str, str]:
        ns = scheduler.cluster.get("Namespace", "", namespace)
        return dict(((ns or {}).get("metadata") or {}).get("labels") or {})

    lookup = scheduler.cluster.get
    _, pre_status = fwk.run_pre_filter(state, pod)
    first_failures: dict[str, Status] = {}
    fits: bool | None = None  # whether some node passes the filters, when worked out without verdicts
    if pre_status is not None:
        result.pre_filter = f"{pre_status.plugin}: {pre_status.message()}"
        result.pre_filter_hints = claim_hints(pod, lookup)
        first_failures = {n.name: pre_status for n in cache.node_infos}
    elif not detail and not fwk.extenders:
        nodes = cache.node_infos
        alive, first_fail, known = fwk.filter_all(state, pod, cache)
        failed = np.flatnonzero(~alive)
        found = fwk.statuses_for(state, pod, cache, failed, first_fail, known)
        first_failures = {nodes[j].name: st for j, st in zip(failed.tolist(), found)}
        fits = bool(alive.any())
    else:
        volumes = scheduler.cluster.list("PersistentVolume") if pod.spec.get("volumes") else []
        for info in cache.node_infos:
            verdict = NodeVerdict(info.name)
            with_nominated = info.clone()
            for other in fwk.nominated_pods_to_add(pod, info.name):
                with_nominated.add_pod(other)
            for pl in fwk.filter_plugins:
                if pl.name in state.skip_filter_plugins:
                    continue
                st = pl.filter(state, pod, with_nominated) or pl.filter(state, pod, info)
                if st is not None and not st.is_success():
                    hints = plugin_hints(pl.name, pod, with_nominated, cache.node_infos, ns_labels, lookup, volumes)
                    verdict.failures.append({"plugin": pl.name, "code": st.code.name, "reason": st.message(),
                                             "hints": hints})
                    verdict.hints.extend(hints)
                    first_failures.setdefault(info.name, st.with_plugin(pl.name))
            result.verdicts.append(verdict)
        if fwk.extenders:
            error = _extender_verdicts(fwk, pod, cache, result, first_failures)
            if error is not None:  # upstream fails the attempt with the extender's error
                result.upstream_message = error
                return result
    pending = pre_status is not None or not (fits if fits is not None else any(v.fits for v in result.verdicts))
    if first_failures and pending:
        result.upstream_message = fit_error_message(
            cache.num_nodes(), pre_status.message() if pre_status else "", first_failures.values(), ""
        )  # (the preemption clause is added below when the PostFilter would fail)
        for post_filter in fwk.post_filter_plugins:
            dry_run = getattr(post_filter, "dry_run", None)
            if dry_run is None:
                continue
            saved = scheduler.rng.bit_generator.state
            try:
                record = dry_run(state, pod, first_failures)
                if pod.preemption_policy == "Never":
                    # what preemption would cost were the pod allowed to preempt
                    allowed = PodInfo.from_pod({**obj, "spec": {**obj["spec"], "preemptionPolicy": "PreemptLowerPriority"}})
                    allowed_state = CycleState()
                    fwk.run_pre_filter(allowed_state, allowed)
                    result.preemption_if_allowed = dry_run(allowed_state, allowed, first_failures).to_dict()
                    scheduler.rng.bit_generator.state = saved
            finally:
                scheduler.rng.bit_generator.state = saved
            result.preemption = record.to_dict()
            if record.outcome != "would preempt" and record.message:
                # upstream FitError: the PostFilter's message follows the filters' ("preemption: ...")
                result.upstream_message = fit_error_message(
                    cache.num_nodes(), pre_status.message() if pre_status else "", first_failures.values(),
                    f"preemption: {record.message}")
            break
    return result
