"""CrossNodePreemption (kubesched's, opt-in): DefaultPreemption whose victims may include pods on
other nodes of the chosen node's topology domain (the Pod Preemption design's open problem
"cross-node preemption").

The problem: P may not fit on a node N even with every lower-priority pod of N gone, because of
pods on *other* nodes that the filters count in N's domain:

- a lower-priority pod on another node of N's zone that P has required anti-affinity against (or
  whose own required anti-affinity is against P), with the zone as topology key: P cannot land in
  the zone while it runs;
- a hard (DoNotSchedule) topology spread constraint of P counted over zones, where lower-priority
  pods on other nodes of N's zone make the zone's count, hence the skew, too large.

The pods searched are only those the failing constraints name: lower-priority pods on other nodes
that InterPodAffinity counts under an anti-affinity topology key (either direction), or that
PodTopologySpread counts under a hard constraint's key, where that key's value is N's. Removing a
pod of *another* domain never helps: anti-affinity only counts N's domain, and a spread
constraint's skew is N's domain's count minus the smallest count, which removing pods elsewhere
can only lower.

Per node N (dry-run on a cloned node and cycle state): every lower-priority pod of N and every
named pod elsewhere is removed (the pods elsewhere through the PreFilter extensions' RemovePod
with their own node, so InterPodAffinity's and PodTopologySpread's counts follow); if P then
passes the filters, all of them are reprieved as DefaultPreemption reprieves a node's pods (the
PodDisruptionBudget-violating ones first, each part most important first), and those without
which P no longer fits are the victims, on N and elsewhere. The candidates are compared by
DefaultPreemption's node-choice criteria over the whole victim set; acting deletes every victim
wherever it runs; P is nominated to N.

Where no pod elsewhere is named, a node's dry run is DefaultPreemption's; a pod that neither has
required pod anti-affinity nor hard spreading, nor is concerned by an existing pod's anti-affinity,
is handled exactly as DefaultPreemption handles it (batched dry run included). See
docs/preemption.md for what the rule guarantees and where it is greedy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.candidates import importance_key
from kubesched.scheduler.framework.capabilities import DryRunBatch, DryRunNode
from kubesched.scheduler.framework.dryrun import ClonedNode
from kubesched.scheduler.framework.interface import Code, CycleState, Handle, PostFilterResult, Status
from kubesched.scheduler.framework.preemption import NodeAnswers
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.affinityterms import parse_pod_terms
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption, PreemptionRecord
from kubesched.scheduler.plugins.interpodaffinity import PRE_FILTER_STATE_KEY as AFFINITY_STATE_KEY
from kubesched.scheduler.plugins.interpodaffinity import PreFilterState as AffinityState
from kubesched.scheduler.plugins.podtopologyspread import PRE_FILTER_STATE_KEY as SPREAD_STATE_KEY
from kubesched.scheduler.plugins.podtopologyspread import PreFilterState as SpreadState

TERMINATING_IN_DOMAIN = "not eligible due to a terminating pod in the nominated node's topology domain."


@dataclass(slots=True)
class _Counted:
    """A lower-priority pod on some node that a failing constraint may name: the topology keys
    under which the filters count it, with its node's values."""

    pod: PodInfo
    node: NodeInfo
    domains: tuple[tuple[str, str], ...]


class CrossNodePreemption(DefaultPreemption):
    """DefaultPreemption whose victims may include pods on other nodes of the node's topology
    domains (see the module's documentation for the rule)."""

    name = "CrossNodePreemption"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        super().__init__(args, handle)
        #: for the preemption attempt under way: (preemptor uid, the counted lower-priority pods)
        self._counted: tuple[str, list[_Counted]] | None = None

    # -- one preemption attempt ------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        self._counted = None
        try:
            return super().post_filter(state, pod, statuses)
        finally:
            self._counted = None

    def dry_run(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]) -> PreemptionRecord:
        self._counted = None
        try:
            return super().dry_run(state, pod, statuses)
        finally:
            self._counted = None

    def select_victims_on_nodes(
        self, pod: PodInfo, nodes: Sequence[NodeInfo], batch: DryRunBatch, budgets: DisruptionBudgets
    ) -> NodeAnswers | None:
        """DefaultPreemption's batched form unless pods elsewhere may matter: P has required pod
        anti-affinity or hard spreading, or some existing pod has required anti-affinity (node by
        node then)."""
        if _spreads_or_repels(pod) or self.handle.snapshot().have_pods_with_required_anti_affinity:
            return None
        return self._batched_victims(pod, nodes, batch, budgets)

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_node_status: Status | None) -> tuple[bool, str]:
        """DefaultPreemption's rule, and also not while a lower-priority pod preempted by the
        scheduler is terminating on another node sharing a topology value, under one of the keys
        P's anti-affinity, hard spreading or that pod's own anti-affinity names, with P's
        nominated node: a victim elsewhere of P's last preemption counts until it is gone."""
        ok, message = super().pod_eligible_to_preempt_others(pod, nominated_node_status)
        if not ok or not pod.nominated_node_name:
            return ok, message
        snapshot = self.handle.snapshot()
        nominated = snapshot.get(pod.nominated_node_name)
        if nominated is None or (nominated_node_status is not None and
                                 nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
            return ok, message
        keys = set(_topology_keys(pod))
        labels = nominated.labels or {}
        for info in snapshot.node_infos:
            if info.name == nominated.name:
                continue
            other = info.labels or {}
            for victim in info.pods:
                if victim.priority >= pod.priority or not victim.deleting or not victim.preempted_by_scheduler():
                    continue
                own = {t.topology_key for t in parse_pod_terms(victim).required_anti_affinity}
                if any(k in labels and other.get(k) == labels[k] for k in keys | own):
                    return False, TERMINATING_IN_DOMAIN
        return ok, message

    # -- one node ----------------------------------------------------------------------------
    def select_victims_on_node(
        self, pod: PodInfo, node: DryRunNode, budgets: DisruptionBudgets
    ) -> tuple[list[PodInfo], list[str], Status | None]:
        if not isinstance(node, ClonedNode):  # by arithmetic: no filter counts pods elsewhere
            return super().select_victims_on_node(pod, node, budgets)
        elsewhere = self._named_elsewhere(pod, node)
        if not elsewhere:
            victims, violating_keys, status = super().select_victims_on_node(pod, node, budgets)
            return victims, _violating(victims, violating_keys, budgets), status
        priority = pod.priority
        local = [p for p in node.pods if p.priority < priority]
        status = node.remove_pods(local)
        if status is not None:
            return [], [], status
        on: dict[str, NodeInfo] = {}
        for counted in elsewhere:
            status = node.remove_pod_elsewhere(counted.pod, counted.node)
            if status is not None:
                return [], [], status
            on[counted.pod.uid] = counted.node
        status = node.run_filters(pods_only=False)
        if status is not None:
            return [], [], status
        now = self.handle.now()
        potential = sorted(local + [c.pod for c in elsewhere], key=lambda p: importance_key(p, now))
        violating, non_violating = budgets.split(potential)
        kept: list[bool] = []
        for p in violating + non_violating:
            where = on.get(p.uid)
            status = node.add_pod(p) if where is None else node.add_pod_elsewhere(p, where)
            if status is not None:
                return [], [], status
            if node.run_filters(pods_only=True) is None:
                kept.append(True)
                continue
            status = node.remove_pod(p) if where is None else node.remove_pod_elsewhere(p, where)
            if status is not None:
                return [], [], status
            kept.append(False)
        victims = [p for p, stays in zip(violating + non_violating, kept) if not stays]
        violating_keys = [p.key for p, stays in zip(violating, kept) if not stays]
        victims.sort(key=lambda p: importance_key(p, now))  # most important first
        return victims, _violating(victims, violating_keys, budgets), None

    def _named_elsewhere(self, pod: PodInfo, node: ClonedNode) -> list[_Counted]:
        """The lower-priority pods on other nodes that a filter counts in one of ``node``'s
        domains (anti-affinity either way, hard spreading), in the snapshot's order."""
        if self._counted is None or self._counted[0] != pod.uid:
            self._counted = (pod.uid, self._all_counted(pod, node.state))
        labels = self.handle.snapshot().get(node.name)
        values = (labels.labels or {}) if labels is not None else {}
        return [c for c in self._counted[1] if c.node.name != node.name
                and any(values.get(key) == value for key, value in c.domains)]

    def _all_counted(self, pod: PodInfo, state: CycleState) -> list[_Counted]:
        """Every lower-priority pod that InterPodAffinity counts under an anti-affinity key or
        PodTopologySpread under a hard constraint's key, with those keys' values on its node."""
        skip = state.skip_filter_plugins
        affinity = None if "InterPodAffinity" in skip else state.read(AFFINITY_STATE_KEY)
        spread = None if "PodTopologySpread" in skip else state.read(SPREAD_STATE_KEY)
        affinity = affinity if isinstance(affinity, AffinityState) else None
        spread = spread if isinstance(spread, SpreadState) else None
        if affinity is None and spread is None:
            return []
        found: list[_Counted] = []
        priority = pod.priority
        for info in self.handle.snapshot().node_infos:
            labels = info.labels or {}
            for p in info.pods:
                if p.priority >= priority:
                    continue
                keys: set[str] = set()
                if affinity is not None:
                    keys.update(affinity.keys_counting(p)[0])
                if spread is not None:
                    keys.update(spread.constraints[i].topology_key for i in spread.counted(p, pod, info))
                domains = tuple((k, labels[k]) for k in sorted(keys) if k in labels)
                if domains:
                    found.append(_Counted(p, info, domains))
        return found


def _violating(victims: list[PodInfo], violating_keys: list[str], budgets: DisruptionBudgets) -> list[str]:
    """The keys of the victims whose eviction violates a budget, counted over the victim set itself
    (most important first): the reprieve's split is over every pod it considered, so a victim it
    labelled violating may be within its budget once the pods that stayed are left out."""
    if not violating_keys:
        return violating_keys
    return [p.key for p in budgets.split(victims)[0]]


def _topology_keys(pod: PodInfo) -> list[str]:
    """The topology keys of ``pod``'s required anti-affinity terms and hard spread constraints."""
    keys = [t.topology_key for t in parse_pod_terms(pod).required_anti_affinity]
    for c in pod.spec.get("topologySpreadConstraints") or []:
        if isinstance(c, dict) and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule":
            keys.append(str(c.get("topologyKey") or ""))
    return keys


def _spreads_or_repels(pod: PodInfo) -> bool:
    """Whether ``pod`` has required pod anti-affinity or a hard spread constraint."""
    return bool(_topology_keys(pod))
