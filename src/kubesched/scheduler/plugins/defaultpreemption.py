"""DefaultPreemption: the PostFilter plugin that preempts lower-priority pods
(upstream ``framework/preemption`` + ``plugins/defaultpreemption``, v1.28 with the #128307 fix).

Every decision is recorded in a :class:`PreemptionRecord` (candidates, victims, PDB violations and the
criterion that picked the node) that ``explain`` and the simulation result can show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.selectors import LabelSelector
from kubesched.scheduler.framework.interface import (
    Code,
    CycleState,
    Handle,
    PostFilterResult,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.messages import fit_error_message

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
CRITERIA = (
    "fewest PDB violations",
    "lowest priority of the most important victim",
    "smallest sum of victim priorities",
    "fewest victims",
    "latest start time of the most important victims",
)
INT32_OFFSET = 2**31


@dataclass(slots=True)
class Candidate:
    node: str
    victims: list[PodInfo]
    pdb_violations: int
    violating: list[str] = field(default_factory=list)  # keys of victims whose eviction violates a PDB


@dataclass
class PreemptionRecord:
    """What one PostFilter call considered and decided."""

    time: float
    pod: str
    priority: int
    outcome: str = ""
    message: str = ""
    candidates: list[Candidate] = field(default_factory=list)
    rejected_nodes: dict[str, str] = field(default_factory=dict)
    chosen: str | None = None
    criterion: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "pod": self.pod,
            "priority": self.priority,
            "outcome": self.outcome,
            "message": self.message,
            "candidates": [
                {
                    "node": c.node,
                    "pdbViolations": c.pdb_violations,
                    "victims": [{"pod": v.key, "priority": v.priority} for v in c.victims],
                    "pdbViolatingVictims": list(c.violating),
                }
                for c in self.candidates
            ],
            "rejectedNodes": dict(sorted(self.rejected_nodes.items())),
            "chosen": self.chosen,
            "criterion": self.criterion,
        }


class _NodeView:
    """The parts of a NodeInfo NodeResourcesFit reads, with pods added or removed by arithmetic."""

    __slots__ = ("allocatable", "requested", "allowed_pods", "pods")

    def __init__(self, node: NodeInfo) -> None:
        self.allocatable = node.allocatable
        self.requested = dict(node.requested)
        self.allowed_pods = node.allowed_pods
        self.pods: list[None] = [None] * len(node.pods)

    def account(self, pod: PodInfo, sign: int) -> None:
        for resource, amount in pod.requests.items():
            self.requested[resource] = self.requested.get(resource, 0) + sign * amount
        if sign > 0:
            self.pods.append(None)
        else:
            self.pods.pop()


def _start_time(pod: PodInfo, now: float) -> float:
    """Upstream ``util.GetPodStartTime`` as the scheduler sees it: ``status.startTime`` is a
    ``metav1.Time``, which the API carries with whole-second precision (JSON and protobuf), so a
    start at 12.7 s reads as 12 s; a pod that has not started counts as starting now."""
    return float(math.floor(pod.start_time)) if pod.start_time is not None else now


def _importance_key(pod: PodInfo, now: float) -> tuple[int, float]:
    """Sort key, most important first (upstream ``util.MoreImportantPod``): higher priority, then
    the earlier (whole-second) start time."""
    return (-pod.priority, _start_time(pod, now))


def _int_arg(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name}: must be an integer in {low}..{high}, got {value!r}")
    return value


def _pdb_selector(pdb: dict[str, Any]) -> LabelSelector | None:
    """The PDB's selector; None (matches nothing) when it is invalid, as upstream skips it."""
    try:
        return LabelSelector.from_dict((pdb.get("spec") or {}).get("selector"))
    except ValueError:
        return None


def pdb_violations(victims: list[PodInfo], pdbs: list[dict[str, Any]]) -> tuple[list[PodInfo], list[PodInfo]]:
    """Upstream filterPodsWithPDBViolation: split (importance-ordered) pods into violating and
    non-violating, consuming each PDB's disruptionsAllowed in order."""
    allowed = [int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) for pdb in pdbs]
    selectors = [_pdb_selector(pdb) for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in victims:
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                meta = pdb.get("metadata") or {}
                if (meta.get("namespace") or "default") != pod.namespace:
                    continue
                selector = selectors[i]
                if selector is None or selector.is_empty or not selector.matches(pod.labels):
                    continue
                if pod.name in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


class DefaultPreemption:
    name = "DefaultPreemption"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        args = args or {}
        self.handle: Any = handle
        self.min_candidate_nodes_percentage = _int_arg(args, "minCandidateNodesPercentage", 10, 0, 100)
        self.min_candidate_nodes_absolute = _int_arg(args, "minCandidateNodesAbsolute", 100, 0, 2**31 - 1)
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError("minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero")
        self._dry_run = False

    # -- hooks a variant (PreemptionToleration, strict PDBs) may override ------------------------
    def can_be_victim(self, victim: PodInfo, preemptor: PodInfo) -> bool:
        return victim.priority < preemptor.priority

    def candidate_allowed(self, candidate: Candidate) -> bool:
        return True

    # -- PostFilter ---------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        handle = self.handle
        handle.metrics.preemption_attempts += 1
        record = PreemptionRecord(time=handle.now(), pod=pod.key, priority=pod.priority)
        handle.record_preemption(record)
        result, status = self._preempt(state, pod, statuses, record)
        msg = status.message()
        record.message = msg
        if msg:
            return result, Status(status.code, (f"preemption: {msg}",))
        return result, status

    def _preempt(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status], record: PreemptionRecord
    ) -> tuple[PostFilterResult | None, Status]:
        handle = self.handle
        current = handle.current_pod(pod)
        if current is None:  # the pod lister's NotFound error
            record.outcome = "error"
            return None, Status.error(f'pod "{pod.name}" not found')
        pod = current
        ok, msg = self._eligible(pod, statuses.get(pod.nominated_node_name))
        if not ok:
            record.outcome = "not eligible"
            return None, Status.unschedulable(msg)
        candidates, node_statuses = self._find_candidates(state, pod, statuses, record)
        if not candidates:
            for name, st in node_statuses.items():
                record.rejected_nodes[name] = st.message()
            errors = list(dict.fromkeys(st.message() for st in node_statuses.values() if st.code == Code.ERROR))
            if errors:
                # upstream Preempt: a dry-run error with no candidate fails the PostFilter with that
                # error (utilerrors.NewAggregate text: distinct messages, bracketed if several);
                # the nomination is left as it is
                record.outcome = "error"
                return None, Status.error(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
            record.outcome = "no candidates"
            return PostFilterResult(""), Status.unschedulable(
                fit_error_message(len(node_statuses), "", node_statuses.values(), "")
            )
        best = self._select_candidate(candidates, record)
        record.chosen = best.node
        if not self.handle.keep_all_candidates:
            record.candidates = [best]  # the others only matter to explanations, and cost memory
        error = self._prepare_candidate(best, pod)
        if error is not None:
            record.outcome = "error"
            return None, error
        record.outcome = "preempted"
        return PostFilterResult(best.node), Status(Code.SUCCESS)

    def dry_run(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]) -> PreemptionRecord:
        """What preemption would do for ``pod`` now, without acting (for ``explain``/what-if)."""
        record = PreemptionRecord(time=self.handle.now(), pod=pod.key, priority=pod.priority)
        ok, msg = self._eligible(pod, statuses.get(pod.nominated_node_name))
        if not ok:
            record.outcome, record.message = "not eligible", msg
            return record
        self._dry_run = True
        try:
            candidates, node_statuses = self._find_candidates(state, pod, statuses, record)
            if not candidates:
                record.outcome = "no candidates"
                record.rejected_nodes = {n: st.message() for n, st in node_statuses.items()}
                record.message = fit_error_message(len(node_statuses), "", node_statuses.values(), "")
                return record
            record.chosen = self._select_candidate(candidates, record).node
            record.outcome = "would preempt"
            return record
        finally:
            self._dry_run = False

    def _eligible(self, pod: PodInfo, nominated_status: Status | None) -> tuple[bool, str]:
        if pod.preemption_policy == "Never":
            return False, NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if nominated_status is not None and nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            info = self.handle.snapshot().get(nominated)
            if info is not None:
                for other in info.pods:
                    if other.priority < pod.priority and other.deleting and other.preempted_by_scheduler():
                        return False, TERMINATING
        return True, ""

    def _find_candidates(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status], record: PreemptionRecord
    ) -> tuple[list[Candidate], dict[str, Status]]:
        handle = self.handle
        all_nodes: list[NodeInfo] = handle.snapshot().node_infos
        potential: list[NodeInfo] = []
        node_statuses: dict[str, Status] = {}
        for info in all_nodes:
            st = statuses.get(info.name)
            if st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                node_statuses[info.name] = Status.unresolvable(NOT_HELPFUL)
            else:
                potential.append(info)
        if not potential:
            if pod.nominated_node_name and not self._dry_run:
                handle.clear_nominated_node_name(pod)
            return [], node_statuses
        pdbs = handle.list("PodDisruptionBudget")
        n = len(potential)
        num_candidates = max(n * self.min_candidate_nodes_percentage // 100, self.min_candidate_nodes_absolute)
        num_candidates = min(num_candidates, n)
        offset = int(handle.rng.integers(n))
        non_violating: list[Candidate] = []
        violating_candidates: list[Candidate] = []
        fit = self._resource_only_check(state)
        known_fail = self._known_resource_failures(state, pod, potential, statuses) if fit is not None else None
        deferred: list[NodeInfo] = []  # nodes known to fail; their status is only needed without candidates
        for i in range(n):
            k = (offset + i) % n
            info = potential[k]
            if known_fail is not None and known_fail[k]:
                deferred.append(info)
                continue
            if fit is not None:
                victims, violating, status = self._select_victims_resource_only(state, pod, info, pdbs, fit)
            else:
                victims, violating, status = self.select_victims_on_node(state.clone(), pod, info.clone(), pdbs)
            if status is None and victims:
                candidate = Candidate(info.name, victims, len(violating), violating)
                if not self.candidate_allowed(candidate):
                    node_statuses[info.name] = Status.unschedulable("preemption would violate a PodDisruptionBudget")
                    continue
                (violating_candidates if violating else non_violating).append(candidate)
                if non_violating and len(non_violating) + len(violating_candidates) >= num_candidates:
                    break
                continue
            if status is None:
                status = Status.error(f'expected at least one victim pod on node "{info.name}"')
            node_statuses[info.name] = status
        candidates = non_violating + violating_candidates
        if not candidates and fit is not None:
            for info in deferred:  # known to fail the first check, so a status comes back
                rejected = self._select_victims_resource_only(state, pod, info, [], fit)[2]
                assert rejected is not None
                node_statuses[info.name] = rejected
        record.candidates = candidates
        return candidates, node_statuses

    def _resource_only_check(self, state: CycleState) -> Any:
        """NodeResourcesFit if it is the only filter depending on the node's pods this cycle (then
        dry runs are exact arithmetic, see :meth:`_select_victims_resource_only`), else None."""
        dependent = [pl for pl in self.handle.framework._pod_dependent_filters
                     if pl.name not in state.skip_filter_plugins]
        if len(dependent) != 1 or dependent[0].name != "NodeResourcesFit":
            return None
        return dependent[0]

    def _known_resource_failures(
        self, state: CycleState, pod: PodInfo, potential: list[NodeInfo], statuses: dict[str, Status]
    ) -> np.ndarray | None:
        """For big clusters: which potential nodes the resource-only first check would reject, for all of
        them at once from the node table's per-priority sums. A node is marked only when the answer
        is certain — it has lower-priority pods, was rejected by NodeResourcesFit
        itself (so the node-only filters, which all precede it, passed) and does not fit with every
        lower-priority pod gone; every other node takes the per-node path. Returns None when this
        does not apply (e.g. a variant restricts who may be a victim)."""
        fwk = self.handle.framework
        if type(self).can_be_victim is not DefaultPreemption.can_be_victim:
            return None
        order = [pl for pl in fwk.filter_plugins if pl.name not in state.skip_filter_plugins]
        names = [pl.name for pl in order]
        if "NodeResourcesFit" not in names or any(
            getattr(pl, "depends_on_pods", True) is False and i > names.index("NodeResourcesFit")
            for i, pl in enumerate(order)
        ):
            return None
        fit = order[names.index("NodeResourcesFit")]
        checked = fit.checked_resources(state, pod)
        snapshot = self.handle.snapshot()
        table = snapshot.table
        for resource, _ in checked:
            table.ensure_resource(resource)  # before taking any array: it may add a row
        idx = np.fromiter((info.index for info in potential), dtype=np.int64, count=len(potential))
        lower_requested, lower_count = table.below_priority(pod.priority)
        lower_requested, lower_count = lower_requested[:, idx], lower_count[idx]
        pods_after = table.pod_count[idx] - lower_count
        used_after = {
            resource: table.requested[table.row[resource], idx] - lower_requested[table.row[resource]]
            for resource, _ in checked
        }
        # pass 1 counts the pods nominated to the node with priority >= the preemptor's
        position = {info.name: k for k, info in enumerate(potential)}
        for node_name in fwk.nominator.nodes():
            k = position.get(node_name)
            if k is None:
                continue
            for other in fwk.nominated_pods_to_add(pod, node_name):
                pods_after[k] += 1
                for resource in used_after:
                    used_after[resource][k] += other.requests.get(resource, 0)
        fails = pods_after + 1 > table.allowed_pods[idx]
        for resource, amount in checked:
            fails |= amount > table.alloc[table.row[resource], idx] - used_after[resource]
        certain = lower_count > 0
        for k, info in enumerate(potential):
            status = statuses.get(info.name)
            if status is None or status.plugin != fit.name:
                certain[k] = False
        result: np.ndarray = fails & certain
        return result

    def _select_victims_resource_only(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: list[dict[str, Any]], fit: Any
    ) -> tuple[list[PodInfo], list[str], Status | None]:
        """SelectVictimsOnNode by arithmetic, exact when ``fit`` (NodeResourcesFit) is the only
        filter depending on the node's pods: the same first check (pass 1 in plugin order — the
        node-only filters on the node, Fit with every potential victim gone and the higher-or-equal
        nominated pods added) and the same victims in the same order, without cloning the node.
        With only resources at stake, passing pass 1 implies passing pass 2."""
        fwk = self.handle.framework
        potential = [p for p in node.pods if self.can_be_victim(p, pod)]
        if not potential:
            return [], [], Status.unresolvable(NO_VICTIMS)
        view = _NodeView(node)
        for victim in potential:
            view.account(victim, -1)
        for other in fwk.nominated_pods_to_add(pod, node.name):
            view.account(other, 1)
        for pl in fwk.filter_plugins:
            if pl.name in state.skip_filter_plugins:
                continue
            if pl is fit:
                reasons = fit.insufficient(state, pod, view)
                if reasons:
                    return [], [], Status(Code.UNSCHEDULABLE, tuple(reasons), fit.name)
                break
            status = pl.filter(state, pod, node)  # depends on the node only
            if status is not None and not status.is_success():
                return [], [], status.with_plugin(pl.name)
        now = self.handle.now()
        potential.sort(key=lambda p: _importance_key(p, now))
        violating, non_violating = pdb_violations(potential, pdbs)
        victims: list[PodInfo] = []
        violating_keys: list[str] = []
        for group, counts_as_violation in ((violating, True), (non_violating, False)):
            for candidate in group:
                view.account(candidate, 1)
                if fit.insufficient(state, pod, view):
                    view.account(candidate, -1)
                    victims.append(candidate)
                    if counts_as_violation:
                        violating_keys.append(candidate.key)
        victims.sort(key=lambda p: _importance_key(p, now))
        return victims, violating_keys, None

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: list[dict[str, Any]]
    ) -> tuple[list[PodInfo], list[str], Status | None]:
        """Upstream SelectVictimsOnNode: (victims, keys of the PDB-violating victims, failure)."""
        fwk = self.handle.framework
        potential = [p for p in node.pods if self.can_be_victim(p, pod)]
        for victim in potential:
            node.remove_pod(victim)
            fwk.run_remove_pod(state, pod, victim, node)
        if not potential:
            return [], [], Status.unresolvable(NO_VICTIMS)
        status = fwk.run_filter_with_nominated(state, pod, node)
        if status is not None:
            return [], [], status
        now = self.handle.now()
        potential.sort(key=lambda p: _importance_key(p, now))
        violating, non_violating = pdb_violations(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(p: PodInfo) -> bool:
            node.add_pod(p)
            fwk.run_add_pod(state, pod, p, node)
            if fwk.run_filter_with_nominated(state, pod, node, pods_only=True) is None:
                return True
            node.remove_pod(p)
            fwk.run_remove_pod(state, pod, p, node)
            victims.append(p)
            return False

        violating_keys: list[str] = []
        for p in violating:
            if not reprieve(p):
                violating_keys.append(p.key)
        for p in non_violating:
            reprieve(p)
        # upstream #128307 (v1.32): victims re-sorted by importance so victims[0] is the most important
        victims.sort(key=lambda p: _importance_key(p, now))
        return victims, violating_keys, None

    def _select_candidate(self, candidates: list[Candidate], record: PreemptionRecord) -> Candidate:
        if len(candidates) == 1:
            record.criterion = "only candidate"
            return candidates[0]
        now = self.handle.now()

        def earliest_start(c: Candidate) -> float:
            top = max(v.priority for v in c.victims)
            return min(_start_time(v, now) for v in c.victims if v.priority == top)

        score_funcs = (
            lambda c: -c.pdb_violations,
            lambda c: -c.victims[0].priority,
            lambda c: -sum(v.priority + INT32_OFFSET for v in c.victims),
            lambda c: -len(c.victims),
            earliest_start,
        )
        remaining = candidates
        for criterion, func in zip(CRITERIA, score_funcs):
            scores = [func(c) for c in remaining]
            best = max(scores)
            remaining = [c for c, s in zip(remaining, scores) if s == best]
            if len(remaining) == 1:
                record.criterion = criterion
                return remaining[0]
        record.criterion = "random tie-break"
        return remaining[int(self.handle.rng.integers(len(remaining)))]

    def _prepare_candidate(self, candidate: Candidate, pod: PodInfo) -> Status | None:
        handle = self.handle
        for victim in candidate.victims:
            err = handle.preempt_victim(victim, pod, candidate.node)
            if err is not None:
                return Status.error(err)
        handle.metrics.observe_victims(len(candidate.victims))
        for nominated in handle.nominator.pods_for_node(candidate.node):
            if nominated.priority < pod.priority:
                handle.clear_nominated_node_name(nominated)
        return None
