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

Each candidate's record lists its victims elsewhere with what named them (``victimsElsewhere``);
the metrics count the attempts that searched pods elsewhere and the preemptions that evicted some
(see preemptionaccount.py).

Where no pod elsewhere is named, a node's dry run is DefaultPreemption's; a pod that neither has
required pod anti-affinity nor hard spreading, nor is concerned by an existing pod's anti-affinity,
is handled exactly as DefaultPreemption handles it (batched dry run included). See
docs/preemption.md for what the rule guarantees and where it is greedy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.candidates import Candidate, PreemptionRecord, importance_key
from kubesched.scheduler.framework.capabilities import DryRunBatch, DryRunNode
from kubesched.scheduler.framework.dryrun import ClonedNode
from kubesched.scheduler.framework.interface import Code, CycleState, Handle, Status
from kubesched.scheduler.framework.preemption import NodeAnswers
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.affinityterms import parse_pod_terms
from kubesched.scheduler.plugins.crossnodesurvey import Counted, Survey
from kubesched.scheduler.plugins.preemptionaccount import AccountedPreemption

TERMINATING_IN_DOMAIN = "not eligible due to a terminating pod in the nominated node's topology domain."


class CrossNodePreemption(AccountedPreemption):
    """DefaultPreemption whose victims may include pods on other nodes of the node's topology
    domains (see the module's documentation for the rule)."""

    name = "CrossNodePreemption"
    #: dry-run the nodes whose dry run names no pod elsewhere by DefaultPreemption's batched form
    #: (False: every node on its own once P has anti-affinity or hard spreading, the reference the
    #: differential test holds the batched form against)
    batch_where_nothing_crosses = True

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        super().__init__(args, handle)
        #: for the preemption attempt under way: its cycle state, what may be named across nodes
        #: (worked out when first needed), and whether some node's dry run named pods elsewhere
        self._state: CycleState | None = None
        self._survey: Survey | None = None
        self._searched = False

    # -- one preemption attempt (see AccountedPreemption) -------------------------------------
    def begin(self, pod: PodInfo, state: CycleState) -> None:
        self._state, self._survey, self._searched = state, None, False

    def end(self) -> None:
        self._state, self._survey = None, None

    def survey(self, pod: PodInfo, state: CycleState | None = None) -> Survey:
        """What the attempt for ``pod`` may name across nodes (see crossnodesurvey.py), worked
        out once per attempt from its cycle state (``state`` when the attempt's is not known)."""
        if self._survey is None or self._survey.uid != pod.uid:
            known = self._state if self._state is not None else state
            assert known is not None, "a dry run outside an attempt needs the cycle state"
            snapshot = self.handle.snapshot()
            table = getattr(snapshot, "table", None)
            nodes = snapshot.node_infos
            if table is not None and getattr(table, "n", -1) != len(nodes):
                table = None
            self._survey = Survey(pod, known, nodes, table)
        return self._survey

    def annotate(self, pod: PodInfo, record: PreemptionRecord) -> None:
        """Per candidate with victims on other nodes: ``victimsElsewhere``, each such victim with
        its node and what names it (the filter, the topology key and the value it shares with the
        candidate node, and whose constraint it is)."""
        if self._survey is None:
            return
        counted = {c.pod.uid: c for c in self._survey.counted}
        snapshot = self.handle.snapshot()
        for candidate in record.candidates:
            info = snapshot.get(candidate.node)
            labels = (info.labels or {}) if info is not None else {}
            elsewhere = [{"pod": v.key, "priority": v.priority, "node": v.node_name,
                          "namedBy": self._named_by(pod, counted[v.uid], labels)}
                         for v in candidate.victims if v.node_name != candidate.node and v.uid in counted]
            if elsewhere:
                record.notes.setdefault(candidate.node, {})["victimsElsewhere"] = elsewhere

    def _named_by(self, pod: PodInfo, counted: Counted, labels: dict[str, str]) -> list[dict[str, str]]:
        """Why ``counted`` (a victim elsewhere) was searched for a candidate node with ``labels``."""
        out: list[dict[str, str]] = []
        for key, value in counted.domains:
            if labels.get(key) != value:
                continue
            if key in counted.anti:
                affinity = self._survey.affinity if self._survey is not None else None
                mine = affinity is not None and any(
                    t.topology_key == key and t.matches(counted.pod, affinity.lookup)
                    for t in affinity.terms.required_anti_affinity)
                out.append({"plugin": "InterPodAffinity", "topologyKey": key, "value": value,
                            "constraint": "the pod's required anti-affinity" if mine
                            else "the victim's required anti-affinity to the pod"})
            if key in counted.spread:
                out.append({"plugin": "PodTopologySpread", "topologyKey": key, "value": value,
                            "constraint": "the pod's hard topology spread constraint"})
        return out

    def count(self, pod: PodInfo, chosen: Candidate | None) -> None:
        """``crossNodeAttempts`` when some node's dry run named pods elsewhere;
        ``crossNodePreemptions`` and ``victimsElsewhere`` when the preemption made has victims on
        other nodes than the nominated one."""
        metrics = self.handle.metrics
        if self._searched:
            metrics.count_policy(self.name, "crossNodeAttempts")
        if chosen is None:
            return
        elsewhere = sum(1 for v in chosen.victims if v.node_name and v.node_name != chosen.node)
        if elsewhere:
            metrics.count_policy(self.name, "crossNodePreemptions")
            metrics.count_policy(self.name, "victimsElsewhere", elsewhere)

    def select_victims_on_nodes(
        self, pod: PodInfo, nodes: Sequence[NodeInfo], batch: DryRunBatch, budgets: DisruptionBudgets
    ) -> NodeAnswers | None:
        """DefaultPreemption's batched form on the nodes whose dry run names no pod elsewhere (all of
        them when P has neither required pod anti-affinity nor hard spreading and no existing pod
        has required anti-affinity; else as the attempt's :class:`Survey` finds); the others, and
        the batch's candidates violating a budget (whose violations are counted over the victim
        set, see :func:`_violating`), node by node."""
        if not _spreads_or_repels(pod) and not self.handle.snapshot().have_pods_with_required_anti_affinity:
            return self._batched_victims(pod, nodes, batch, budgets)
        if self._state is None or not self.batch_where_nothing_crosses:
            return None
        crossing = self.survey(pod).crossing
        if crossing is None:
            return None
        answers = self._batched_victims(pod, nodes, batch, budgets)
        return [None if crossing[info.index] or (isinstance(answer, Candidate) and answer.pdb_violations)
                else cast("Candidate | Status | None", answer) for info, answer in zip(nodes, answers)]

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
        if terminating_in_domain(pod, nominated, snapshot.node_infos):
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
        self._searched = True
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

    def _named_elsewhere(self, pod: PodInfo, node: ClonedNode) -> list[Counted]:
        """The lower-priority pods on other nodes that a filter counts in one of ``node``'s
        domains (anti-affinity either way, hard spreading), in the snapshot's order."""
        return self.survey(pod, node.state).named_elsewhere(self.handle.snapshot().get(node.name), node.name)


def terminating_in_domain(pod: PodInfo, nominated: NodeInfo, nodes: Sequence[NodeInfo]) -> list[PodInfo]:
    """The lower-priority pods preempted by the scheduler that are still terminating on another
    node of ``nodes`` sharing a topology value with ``nominated`` (``pod``'s nominated node) under a
    key of ``pod``'s anti-affinity, of its hard spreading or of that pod's own anti-affinity: what
    keeps ``pod`` from preempting again (``explain`` lists them too)."""
    keys = set(_topology_keys(pod))
    labels = nominated.labels or {}
    found: list[PodInfo] = []
    for info in nodes:
        if info.name == nominated.name:
            continue
        other = info.labels or {}
        for victim in info.pods:
            if victim.priority >= pod.priority or not victim.deleting or not victim.preempted_by_scheduler():
                continue
            own = {t.topology_key for t in parse_pod_terms(victim).required_anti_affinity}
            if any(k in labels and other.get(k) == labels[k] for k in keys | own):
                found.append(victim)
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
