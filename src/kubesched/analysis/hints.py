"""What would have to change for a filter to let a pod onto a node, in words that name the object in
the way: the missing label, the taint, the pod that conflicts, the skew of a spread constraint.

These are explanations, not decisions: each filter's verdict comes from the plugin itself (see
:mod:`kubesched.analysis.diagnose`); a hint only says why, reading the same objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesched.analysis.volume_hints import (
    Lookup,
    volume_binding_hints,
    volume_limit_hints,
    volume_restriction_hints,
    volume_zone_hints,
)
from kubesched.api.quantity import format_quantity
from kubesched.api.selectors import LabelSelector
from kubesched.api.tolerations import find_untolerated_taint
from kubesched.k8s.objects import Obj
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.affinityterms import parse_pod_terms
from kubesched.scheduler.plugins.fit import TOO_MANY_PODS, fits

NamespaceLabels = Callable[[str], Mapping[str, str]]


def resource_hints(pod: PodInfo, node: NodeInfo) -> list[str]:
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


def _expression_miss(expr: Mapping[str, Any], labels: Mapping[str, str]) -> str | None:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), list(expr.get("values") or [])
    have = labels.get(key)
    wanted = f"{key} {op}" + (f" [{', '.join(map(str, values))}]" if values else "")
    if op in ("In", "Gt", "Lt", "Exists") and have is None:
        return f"node has no label {key} (pod needs {wanted})"
    if op == "In" and have not in values:
        return f"node has {key}={have}, pod needs {wanted}"
    if op == "NotIn" and have in values:
        return f"node has {key}={have}, pod needs {wanted}"
    if op == "DoesNotExist" and have is not None:
        return f"node has label {key}={have}, pod needs it absent"
    if op in ("Gt", "Lt") and have is not None:
        try:
            ok = int(have) > int(values[0]) if op == "Gt" else int(have) < int(values[0])
        except (ValueError, IndexError):
            ok = False
        if not ok:
            return f"node has {key}={have}, pod needs {wanted}"
    return None


def node_affinity_hints(pod: PodInfo, node: NodeInfo) -> list[str]:
    """Which label the node lacks or has wrong, for the nodeSelector and the required terms."""
    labels = node.labels
    hints = []
    for key, value in sorted((pod.spec.get("nodeSelector") or {}).items()):
        if labels.get(key) != value:
            have = f"has {key}={labels[key]}" if key in labels else f"has no label {key}"
            hints.append(f"node {have}, pod's nodeSelector wants {key}={value}")
    required = (((pod.spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    misses = []
    for term in terms:
        for expr in term.get("matchExpressions") or []:
            miss = _expression_miss(expr, labels)
            if miss is not None:
                misses.append(miss)
                break
        else:
            for field in term.get("matchFields") or []:
                if field.get("key") == "metadata.name" and node.name not in (field.get("values") or []):
                    misses.append(f"node is not {' or '.join(field.get('values') or [])} (matchFields metadata.name)")
                    break
            else:
                misses = []  # this term matches
                break
    if misses:
        hints.append("required node affinity: " + ("; or ".join(misses) if len(misses) > 1 else misses[0]))
    return hints or ["node labels do not satisfy the pod's nodeSelector / required node affinity"]


def taint_hints(pod: PodInfo, node: NodeInfo) -> list[str]:
    taint = find_untolerated_taint(node.taints, pod.tolerations, ("NoSchedule", "NoExecute"))
    if not taint:
        return []
    value = f"={taint['value']}" if taint.get("value") else ""
    return [f"add a toleration for taint {taint.get('key')}{value}:{taint.get('effect')}"]


def _domain_nodes(nodes: list[NodeInfo], key: str, value: str) -> list[NodeInfo]:
    return [n for n in nodes if n.labels.get(key) == value]


def inter_pod_affinity_hints(pod: PodInfo, node: NodeInfo, nodes: list[NodeInfo],
                             ns_labels: NamespaceLabels) -> list[str]:
    """The pods that make the node wrong for ``pod``: those its anti-affinity refuses in the node's
    domain, those whose anti-affinity refuses it, and the affinity terms nothing satisfies there."""
    hints = []
    terms = parse_pod_terms(pod)
    for term in terms.required_anti_affinity:
        value = node.labels.get(term.topology_key)
        if value is None:
            continue
        for other_node in _domain_nodes(nodes, term.topology_key, value):
            for other in other_node.pods:
                if other.uid != pod.uid and term.matches(other, ns_labels):
                    hints.append(f"pod {other.key} on {other_node.name} matches the pod's anti-affinity "
                                 f"({term.topology_key}={value})")
    value_of = node.labels.get
    for other_node in nodes:
        for other in other_node.pods_with_required_anti_affinity:
            for term in parse_pod_terms(other).required_anti_affinity:
                value = other_node.labels.get(term.topology_key)
                if value is not None and value_of(term.topology_key) == value and term.matches(pod, ns_labels):
                    hints.append(f"pod {other.key} on {other_node.name} refuses pods like this one "
                                 f"({term.topology_key}={value}, its anti-affinity)")
    for term in terms.required_affinity:
        value = node.labels.get(term.topology_key)
        if value is None:
            hints.append(f"node has no label {term.topology_key} (the topologyKey of the pod's affinity)")
            continue
        found = any(term.matches(other, ns_labels) for n in _domain_nodes(nodes, term.topology_key, value)
                    for other in n.pods)
        if not found:
            hints.append(f"no pod matching the pod's affinity runs where {term.topology_key}={value}")
    return hints[:10]


def spread_hints(pod: PodInfo, node: NodeInfo, nodes: list[NodeInfo]) -> list[str]:
    """For each of the pod's own DoNotSchedule constraints: the node's domain count, the fewest
    matching pods in a domain, and the skew the pod would make (nodes with the topology key only)."""
    hints = []
    for constraint in pod.spec.get("topologySpreadConstraints") or []:
        if constraint.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
            continue
        key = constraint.get("topologyKey", "")
        value = node.labels.get(key)
        if value is None:
            hints.append(f"node has no label {key} (a topologySpreadConstraint's topologyKey)")
            continue
        selector = LabelSelector.from_dict(constraint.get("labelSelector"))
        counts: dict[str, int] = {}
        for n in nodes:
            domain = n.labels.get(key)
            if domain is None:
                continue
            counts.setdefault(domain, 0)
            counts[domain] += sum(1 for p in n.pods if p.namespace == pod.namespace and not p.deleting
                                  and selector.matches(p.labels))
        fewest_domain = min(sorted(counts), key=lambda d: counts[d])
        max_skew = int(constraint.get("maxSkew") or 1)
        skew = counts.get(value, 0) + 1 - counts[fewest_domain]
        if skew > max_skew:
            hints.append(f"{key}={value} has {counts.get(value, 0)} matching pods, the fewest is "
                         f"{counts[fewest_domain]} ({key}={fewest_domain}): one more here makes a skew of {skew} "
                         f"> maxSkew {max_skew}")
    return hints


def plugin_hints(plugin: str, pod: PodInfo, node: NodeInfo, nodes: list[NodeInfo],
                 ns_labels: NamespaceLabels, lookup: Lookup | None = None,
                 volumes: list[Obj] | None = None) -> list[str]:
    """The hints for one rejecting filter (``lookup`` and ``volumes``, the cluster's objects and its
    PersistentVolumes, for the volume plugins)."""
    if lookup is not None:
        if plugin == "VolumeBinding":
            return volume_binding_hints(pod, node, lookup, volumes or [])
        if plugin == "VolumeZone":
            return volume_zone_hints(pod, node, lookup)
        if plugin == "VolumeRestrictions":
            return volume_restriction_hints(pod, node, nodes, lookup)
        if plugin == "NodeVolumeLimits":
            return volume_limit_hints(pod, node, lookup)
    if plugin == "NodeResourcesFit":
        return resource_hints(pod, node)
    if plugin == "TaintToleration":
        return taint_hints(pod, node)
    if plugin == "NodeUnschedulable":
        return ["node is cordoned (spec.unschedulable); uncordon it or tolerate node.kubernetes.io/unschedulable"]
    if plugin == "NodeAffinity":
        return node_affinity_hints(pod, node)
    if plugin == "NodePorts":
        used = {port[-1] for port in node.used_ports}
        wanted = sorted({port[-1] for port in pod.host_ports if port[-1] in used})
        return [f"hostPort {', '.join(map(str, wanted))} is already in use on this node" if wanted
                else "a requested hostPort is already in use on this node"]
    if plugin == "NodeName":
        return [f"pod asks for node {pod.spec.get('nodeName')!r}"]
    if plugin == "InterPodAffinity":
        return inter_pod_affinity_hints(pod, node, nodes, ns_labels)
    if plugin == "PodTopologySpread":
        return spread_hints(pod, node, nodes)
    return []
