"""The cluster autoscaler's what-if machinery: a snapshot of nodes, the predicates it checks, the
template node a group would add, the binpacking estimator used for scale-up and the "can every pod
go elsewhere" check for scale-down.

Like the real autoscaler this works on *requests*, never on usage. Predicates: node
``unschedulable``, NoSchedule/NoExecute taints vs tolerations, ``nodeSelector`` and required node
affinity, and every requested resource (including the pod count) against allocatable. Inter-pod
(anti-)affinity, topology spread and host ports are not simulated here (the scheduler still applies
them when the pods are actually placed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.cluster_settings.autoscaler import NodeGroup
from kubesched.api.resources import node_allocatable, pod_requests
from kubesched.api.selectors import pod_matches_node_selector_and_affinity
from kubesched.api.tolerations import find_untolerated_taint
from kubesched.cluster.embedded.controllers.util import controller_kind, is_daemonset_pod, is_mirror_pod
from kubesched.k8s.objects import Obj, key_of
from kubesched.scheduler.plugins.fit import fits

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"


#: tolerations every DaemonSet pod gets (used to decide which DaemonSets run on a template node)
_DAEMONSET_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": NOT_READY_TAINT, "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    *({"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoSchedule"}
      for k in ("disk-pressure", "memory-pressure", "pid-pressure", "unschedulable")),
)


def priority_of(pod: Obj) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


@dataclass
class SimNode:
    """A node in the autoscaler's snapshot: what it offers and what is already requested on it."""

    name: str
    node: Obj
    group: str | None
    allocatable: dict[str, int]
    requested: dict[str, int] = field(default_factory=dict)
    pods: int = 0
    upcoming: bool = False

    @classmethod
    def of(cls, node: Obj, group: str | None, upcoming: bool = False) -> SimNode:
        return cls(node["metadata"]["name"], node, group, node_allocatable(node), upcoming=upcoming)

    def copy(self) -> SimNode:
        return SimNode(self.name, self.node, self.group, self.allocatable, dict(self.requested), self.pods,
                       self.upcoming)

    def add(self, requests: dict[str, int]) -> None:
        for name, value in requests.items():
            self.requested[name] = self.requested.get(name, 0) + value
        self.pods += 1

    def remove(self, requests: dict[str, int]) -> None:
        for name, value in requests.items():
            self.requested[name] = self.requested.get(name, 0) - value
        self.pods -= 1

    def fits(self, pod: Obj, requests: dict[str, int]) -> bool:
        spec = self.node.get("spec") or {}
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        if spec.get("unschedulable") and find_untolerated_taint(
                [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}], tolerations) is not None:
            return False
        taints = [t for t in spec.get("taints") or [] if not (self.upcoming and t.get("key") == NOT_READY_TAINT)]
        if find_untolerated_taint(taints, tolerations) is not None:
            return False
        if not pod_matches_node_selector_and_affinity(pod, self.node):
            return False
        checked = [(name, value) for name, value in requests.items() if value > 0]
        return not fits(checked, allocatable=self.allocatable, requested=self.requested, pods=self.pods,
                        allowed_pods=self.allocatable.get("pods"))

    def utilization(self) -> float:
        """max(cpu, memory) requested / allocatable (the autoscaler's node utilization)."""
        ratios = [self.requested.get(r, 0) / self.allocatable[r] for r in ("cpu", "memory")
                  if self.allocatable.get(r)]
        return max(ratios, default=0.0)


class RequestCache:
    """``pod_requests`` by pod uid (requests never change in the simulation)."""

    def __init__(self) -> None:
        self._by_uid: dict[str, dict[str, int]] = {}

    def __call__(self, pod: Obj) -> dict[str, int]:
        uid = pod["metadata"].get("uid", "")
        found = self._by_uid.get(uid)
        if found is None:
            found = pod_requests(pod)
            self._by_uid[uid] = found
        return found

    def forget(self, uid: str) -> None:
        self._by_uid.pop(uid, None)


def first_fit(nodes: Iterable[SimNode], pod: Obj, requests: dict[str, int]) -> SimNode | None:
    for node in nodes:
        if node.fits(pod, requests):
            node.add(requests)
            return node
    return None


def template_node(group: NodeGroup, name: str, daemonsets: Iterable[Obj]) -> SimNode:
    """A new node of ``group`` as the autoscaler pictures it: the group's template, with the
    requests of the pods of the DaemonSets that would run on it."""
    node = group.node_object(name)
    sim = SimNode.of(node, group.name, upcoming=True)
    for ds in sorted(daemonsets, key=key_of):
        template = {"metadata": {}, **((ds.get("spec") or {}).get("template") or {})}
        spec = template.get("spec") or {}
        tolerations = [*(spec.get("tolerations") or []), *_DAEMONSET_TOLERATIONS]
        if pod_matches_node_selector_and_affinity(template, node) and \
                find_untolerated_taint((node.get("spec") or {}).get("taints"), tolerations) is None:
            sim.add(pod_requests(template))
    return sim


# -- scale-up ------------------------------------------------------------------------------------
@dataclass
class Estimate:
    """What adding nodes to one group would achieve."""

    group: str
    nodes: int
    pods: list[Obj]
    waste: float = 0.0
    priority: int = 0


def estimate(group: str, template: SimNode, pods: list[Obj], requests: RequestCache, headroom: int,
             priority: int = 0) -> Estimate:
    """Binpacking estimator: pods (largest first, relative to the template) go first-fit onto new
    template nodes; a new node is opened while ``headroom`` allows."""
    fitting = [p for p in pods if template.copy().fits(p, requests(p))]

    def size(p: Obj) -> tuple[float, str]:
        req = requests(p)
        score = sum(req.get(r, 0) / template.allocatable[r] for r in ("cpu", "memory") if template.allocatable.get(r))
        return (-score, key_of(p))

    opened: list[SimNode] = []
    helped: list[Obj] = []
    for pod in sorted(fitting, key=size):
        req = requests(pod)
        if first_fit(opened, pod, req) is None:
            if len(opened) >= headroom:
                continue
            fresh = template.copy()
            fresh.name = f"{template.name}-new-{len(opened)}"
            fresh.add(req)
            opened.append(fresh)
        helped.append(pod)
    waste = 0.0
    if opened:
        parts = []
        for r in ("cpu", "memory"):
            total = sum(n.allocatable.get(r, 0) for n in opened)
            if total:
                parts.append((total - sum(n.requested.get(r, 0) for n in opened)) / total)
        waste = sum(parts) / len(parts) if parts else 0.0
    return Estimate(group, len(opened), helped, waste, priority)


# -- scale-down ----------------------------------------------------------------------------------
@dataclass
class Removal:
    """The verdict on one scale-down candidate."""

    node: str
    movable: list[Obj]
    blocker: str | None = None


def check_removal(node: SimNode, pods: list[Obj], destinations: list[SimNode], requests: RequestCache, *,
                  cutoff: int, pdbs: list[tuple[Any, Obj]], pdb_budget: dict[str, int],
                  skip_system_pods: bool) -> Removal:
    """Can every pod that matters leave ``node``? On success the pods stay placed on
    ``destinations`` (so the next candidate sees the space taken) and the PDB budgets are charged;
    on failure both are left as they were."""
    movable: list[Obj] = []
    for pod in sorted(pods, key=key_of):
        if is_daemonset_pod(pod) or is_mirror_pod(pod) or priority_of(pod) < cutoff:
            continue
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        safe = annotations.get(SAFE_TO_EVICT)
        if safe == "false":
            return Removal(node.name, [], f"pod {key_of(pod)} is annotated {SAFE_TO_EVICT}=false")
        if controller_kind(pod) is None and safe != "true":
            return Removal(node.name, [], f"pod {key_of(pod)} is not replicated")
        movable.append(pod)
    budget = dict(pdb_budget)
    for pod in movable:
        meta = pod["metadata"]
        covering = [(sel, pdb) for sel, pdb in pdbs
                    if pdb["metadata"].get("namespace") == meta.get("namespace") and sel.matches(meta.get("labels"))]
        if not covering and skip_system_pods and meta.get("namespace") == "kube-system" \
                and (meta.get("annotations") or {}).get(SAFE_TO_EVICT) != "true":
            return Removal(node.name, [], f"non-daemonset kube-system pod {key_of(pod)} without a PodDisruptionBudget")
        for _, pdb in covering:
            pkey = key_of(pdb)
            budget[pkey] = budget.get(pkey, 0) - 1
            if budget[pkey] < 0:
                return Removal(node.name, [], f"not enough pod disruption budget to move {key_of(pod)}")
    placed: list[tuple[SimNode, dict[str, int]]] = []
    for pod in movable:
        req = requests(pod)
        target = first_fit(destinations, pod, req)
        if target is None:
            for where, amounts in placed:  # roll back: this node stays
                where.remove(amounts)
            return Removal(node.name, [], f"no place to move pod {key_of(pod)}")
        placed.append((target, req))
    pdb_budget.update(budget)
    return Removal(node.name, movable)
