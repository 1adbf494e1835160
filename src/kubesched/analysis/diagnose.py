"""Why is a pod pending? Every filter verdict on every node (upstream shows only the first failing
plugin per node), what would have to change, and what preemption would do and cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.quantity import format_quantity
from kubesched.api.tolerations import find_untolerated_taint
from kubesched.scheduler.framework.interface import CycleState, Status
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.messages import fit_error_message
from kubesched.scheduler.plugins.fit import TOO_MANY_PODS, fits
from kubesched.scheduler.scheduler import Scheduler


@dataclass
class NodeVerdict:
    node: str
    failures: list[dict[str, str]] = field(default_factory=list)  # plugin, code, reason
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
    verdicts: list[NodeVerdict] = field(default_factory=list)
    preemption: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "phase": self.phase,
            "node": self.node,
            "nominatedNodeName": self.nominated_node,
            "priority": self.priority,
            "upstreamMessage": self.upstream_message,
            "preFilter": self.pre_filter,
            "nodes": [v.to_dict() for v in self.verdicts],
            "preemption": self.preemption,
        }


def _resource_hints(pod: PodInfo, node: NodeInfo) -> list[str]:
    hints = []
    checked = sorted((resource, amount) for resource, amount in pod.requests.items() if amount > 0)
    for short in fits(checked, allocatable=node.allocatable, requested=node.requested, pods=len(node.pods),
                      allowed_pods=node.allowed_pods):
        if short.reason == TOO_MANY_PODS:
            hints.append(f"node already runs {short.used} of {short.capacity} allowed pods")
            continue
        resource, amount = short.resource_name, short.requested
        free = short.capacity - short.used
        hints.append(
            f"needs {format_quantity(resource, amount)} {resource}, "
            f"{format_quantity(resource, max(free, 0))} free of {format_quantity(resource, short.capacity)}"
            f" (short by {format_quantity(resource, amount - max(free, 0))})"
        )
    return hints


def _hints(plugin: str, pod: PodInfo, node: NodeInfo) -> list[str]:
    if plugin == "NodeResourcesFit":
        return _resource_hints(pod, node)
    if plugin == "TaintToleration":
        taint = find_untolerated_taint(node.taints, pod.tolerations, ("NoSchedule", "NoExecute"))
        if taint:
            value = f"={taint['value']}" if taint.get("value") else ""
            return [f"add a toleration for taint {taint.get('key')}{value}:{taint.get('effect')}"]
    if plugin == "NodeUnschedulable":
        return ["node is cordoned (spec.unschedulable); uncordon it or tolerate node.kubernetes.io/unschedulable"]
    if plugin == "NodeAffinity":
        return ["node labels do not satisfy the pod's nodeSelector / required node affinity"]
    if plugin == "NodePorts":
        return ["a requested hostPort is already in use on this node"]
    if plugin == "NodeName":
        return [f"pod asks for node {pod.spec.get('nodeName')!r}"]
    return []


def diagnose(scheduler: Scheduler, namespace: str, name: str) -> PodDiagnosis:
    """Diagnose a pod against the scheduler's current cache (no side effects on the cluster)."""
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
    fwk = scheduler.framework_for(pod)
    if fwk is None:
        result.pre_filter = f"no profile for schedulerName {pod.scheduler_name!r}"
        return result
    cache = scheduler.cache
    cache.update_snapshot()
    state = CycleState()
    _, pre_status = fwk.run_pre_filter(state, pod)
    first_failures: dict[str, Status] = {}
    if pre_status is not None:
        result.pre_filter = f"{pre_status.plugin}: {pre_status.message()}"
        first_failures = {n.name: pre_status for n in cache.node_infos}
    else:
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
                    verdict.failures.append({"plugin": pl.name, "code": st.code.name, "reason": st.message()})
                    verdict.hints.extend(_hints(pl.name, pod, with_nominated))
                    first_failures.setdefault(info.name, st.with_plugin(pl.name))
            result.verdicts.append(verdict)
    if first_failures and len(first_failures) == cache.num_nodes():
        result.upstream_message = fit_error_message(
            cache.num_nodes(), pre_status.message() if pre_status else "", first_failures.values(), ""
        )
        for post_filter in fwk.post_filter_plugins:
            dry_run = getattr(post_filter, "dry_run", None)
            if dry_run is None:
                continue
            saved = scheduler.rng.bit_generator.state
            try:
                record = dry_run(state, pod, first_failures)
            finally:
                scheduler.rng.bit_generator.state = saved
            result.preemption = record.to_dict()
            break
    return result
