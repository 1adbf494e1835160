"""PodTopologySpread's constraints: the plugin args (default constraints, defaulting type), a
pod's ``topologySpreadConstraints`` parsed per ``whenUnsatisfiable``, and which nodes and pods they
count (nodeAffinityPolicy, nodeTaintsPolicy, the selector in the pod's namespace)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.selectors import LabelSelector, Requirement, pod_matches_node_selector_and_affinity
from kubesched.api.tolerations import find_untolerated_taint
from kubesched.scheduler.framework.types import NodeInfo, PodInfo

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
_DO_NOT_SCHEDULE_TAINT_EFFECTS = ("NoSchedule", "NoExecute")
_ARG_KEYS = frozenset({"defaultConstraints", "defaultingType", "apiVersion", "kind"})

SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


@dataclass(frozen=True, slots=True)
class Constraint:
    """A parsed ``TopologySpreadConstraint`` of one action (upstream ``topologySpreadConstraint``)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


def count_pods_matching(pods: Sequence[PodInfo], selector: LabelSelector, namespace: str) -> int:
    """Matching pods of ``namespace``, not terminating. An empty (or nil) selector counts 0."""
    if selector.is_empty:
        return 0
    return sum(1 for p in pods if not p.deleting and p.namespace == namespace and selector.matches(p.labels))


def has_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


class NodeInclusion:
    """Evaluates nodeAffinityPolicy / nodeTaintsPolicy for one incoming pod, memoised per node (the
    vector form narrows whole columns with it)."""

    __slots__ = ("pod", "trivial_affinity", "_affinity", "_taints")

    def __init__(self, pod: PodInfo) -> None:
        spec = pod.spec
        self.pod = pod
        node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        self.trivial_affinity = not spec.get("nodeSelector") and node_affinity.get(
            "requiredDuringSchedulingIgnoredDuringExecution") is None
        self._affinity: dict[str, bool] = {}
        self._taints: dict[str, bool] = {}

    def affinity_ok(self, node: NodeInfo) -> bool:
        """The pod's nodeSelector and required node affinity accept the node."""
        ok = self._affinity.get(node.name)
        if ok is None:
            ok = pod_matches_node_selector_and_affinity(self.pod.obj, node.node or {})
            self._affinity[node.name] = ok
        return ok

    def taints_ok(self, node: NodeInfo) -> bool:
        """The pod tolerates the node's NoSchedule and NoExecute taints."""
        tolerated = self._taints.get(node.name)
        if tolerated is None:
            tolerated = find_untolerated_taint(
                node.taints, self.pod.tolerations, _DO_NOT_SCHEDULE_TAINT_EFFECTS) is None
            self._taints[node.name] = tolerated
        return tolerated

    def matches(self, c: Constraint, node: NodeInfo) -> bool:
        if c.node_affinity_policy == HONOR and not self.trivial_affinity and not self.affinity_ok(node):
            return False
        if c.node_taints_policy == HONOR and node.taints and not self.taints_ok(node):
            return False
        return True


def parse_args(args: Mapping[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    unknown = sorted(set(args) - _ARG_KEYS)
    if unknown:
        raise ValueError(f"PodTopologySpreadArgs: unknown field(s) {', '.join(map(repr, unknown))}")
    defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
    constraints = args.get("defaultConstraints") or []
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ValueError(f'PodTopologySpreadArgs.defaultingType: Unsupported value: "{defaulting}": '
                         'supported values: "System", "List"')
    if not isinstance(constraints, list) or not all(isinstance(c, Mapping) for c in constraints):
        raise ValueError("PodTopologySpreadArgs.defaultConstraints: must be a list of constraints")
    if defaulting == SYSTEM_DEFAULTING and constraints:
        raise ValueError('PodTopologySpreadArgs.defaultingType: Invalid value: "System": '
                         "when .defaultConstraints are not empty")
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        path = f"PodTopologySpreadArgs.defaultConstraints[{i}]"
        skew = c.get("maxSkew")
        if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
            raise ValueError(f"{path}.maxSkew: Invalid value: {skew!r}: not in valid range (0, inf)")
        if not c.get("topologyKey") or not isinstance(c.get("topologyKey"), str):
            raise ValueError(f"{path}.topologyKey: Required value: can not be empty")
        action = c.get("whenUnsatisfiable")
        if action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ValueError(f'{path}.whenUnsatisfiable: Unsupported value: "{action}": '
                             'supported values: "DoNotSchedule", "ScheduleAnyway"')
        min_domains = c.get("minDomains")
        if min_domains is not None and (isinstance(min_domains, bool) or not isinstance(min_domains, int)):
            raise ValueError(f"{path}.minDomains: Invalid value: {min_domains!r}: must be an integer")
        if c.get("labelSelector") is not None:
            raise ValueError(f"{path}.labelSelector: Forbidden: constraint must not define a selector, "
                             "as they deduced for each pod")
        pair = (c["topologyKey"], action)
        if pair in seen:
            raise ValueError(f"PodTopologySpreadArgs.defaultConstraints[{i}]: Duplicate value: "
                             f'{{{pair[0]}, {pair[1]}}}')
        seen.add(pair)
    if defaulting == SYSTEM_DEFAULTING:
        return [dict(c) for c in SYSTEM_DEFAULT_CONSTRAINTS], True
    return [dict(c) for c in constraints], False


def parse_constraints(raw: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str],
                       action: str) -> list[Constraint]:
    """Upstream ``filterTopologySpreadConstraints``: the constraints of ``action``, with
    matchLabelKeys merged into the selector and unset fields defaulted."""
    out: list[Constraint] = []
    for c in raw:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = LabelSelector.from_dict(c.get("labelSelector"))
        extra = [Requirement(k, "In", frozenset([pod_labels[k]]))
                 for k in c.get("matchLabelKeys") or () if k in pod_labels]
        if extra and not selector.is_nil:
            selector = LabelSelector(selector.match_labels, tuple(extra) + selector.requirements)
        min_domains = c.get("minDomains")
        out.append(Constraint(
            max_skew=int(c.get("maxSkew") or 0),
            topology_key=str(c.get("topologyKey") or ""),
            selector=selector,
            min_domains=1 if min_domains is None else int(min_domains),
            node_affinity_policy=c.get("nodeAffinityPolicy") or HONOR,
            node_taints_policy=c.get("nodeTaintsPolicy") or IGNORE,
        ))
    return out
