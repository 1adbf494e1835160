"""DefaultPreemption: the PostFilter plugin that preempts lower-priority pods, as a policy on the
generic :class:`~kubesched.scheduler.framework.preemption.Evaluator` (upstream
``plugins/defaultpreemption``: the plugin implements ``preemption.Interface``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.candidates import (
    BatchAnswers,
    Candidate,
    NodeVictims,
    PreemptionRecord,
    Victims,
    criteria_rows,
    importance_key,
)
from kubesched.scheduler.framework.capabilities import DryRunBatch, DryRunNode
from kubesched.scheduler.framework.interface import (
    DELETE,
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    Status,
)
from kubesched.scheduler.framework.preemption import (
    REJECTED,
    Evaluator,
    NodeAnswers,
    PostFilterDryRun,
    PreemptionPolicy,
    ScoreFunc,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot
from kubesched.scheduler.plugins.victim_order import NodeOrder, Part, PartTable, Split

__all__ = ["Candidate", "DefaultPreemption", "PreemptionRecord"]

NO_VICTIMS = "No preemption victims found for incoming pod"
#: upstream's defaults of DefaultPreemptionArgs
DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"


def _int_arg(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name}: must be an integer in {low}..{high}, got {value!r}")
    return value


def _victims(violating: list[PodInfo], non_violating: list[PodInfo], kept: Sequence[bool],
             now: float) -> tuple[list[PodInfo], list[str]]:
    """The victims of a reprieve of ``violating + non_violating`` (``kept``: which pods stayed),
    most important first, and the keys of the PDB-violating ones."""
    if not violating:  # the victims are a subsequence of an importance-ordered list
        return [p for p, stays in zip(non_violating, kept) if not stays], []
    victims = [p for p, stays in zip(violating + non_violating, kept) if not stays]
    violating_keys = [p.key for p, stays in zip(violating, kept) if not stays]
    # upstream #128307 (v1.32): victims re-sorted by importance so victims[0] is the most important
    victims.sort(key=lambda p: importance_key(p, now))
    return victims, violating_keys


class _Reprieved:
    """The victims of a batched reprieve, listed node by node when a candidate is asked for them
    (``order``: each node's pods in reprieve order, ``kept``: which stayed, laid end to end)."""

    __slots__ = ("order", "splits", "kept", "starts", "now")

    def __init__(self, order: list[list[PodInfo]], splits: Sequence[Split | None], kept: np.ndarray,
                 starts: list[int], now: float) -> None:
        self.order, self.splits, self.kept, self.starts, self.now = order, splits, kept, starts, now

    def listed(self, k: int) -> NodeVictims:
        pods, split = self.order[k], self.splits[k]
        stays = self.kept[self.starts[k]:self.starts[k] + len(pods)].tolist()
        if split is None:
            return [p for p, s in zip(pods, stays) if not s], []
        return _victims(split.violating, split.non_violating, stays, self.now)


class DefaultPreemption(PreEnqueuePlugin, EnqueueExtensions, PostFilterPlugin, PostFilterDryRun, PreemptionPolicy):
    name = "DefaultPreemption"
    victims_are_lower_priority_pods = True
    custom_node_choice = False
    #: the Evaluator the plugin runs its steps with (a variant may hand over its own)
    evaluator_class: type[Evaluator] = Evaluator

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        args = args or {}
        self.handle = handle
        self.min_candidate_nodes_percentage = _int_arg(args, "minCandidateNodesPercentage",
                                                       DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE, 0, 100)
        self.min_candidate_nodes_absolute = _int_arg(args, "minCandidateNodesAbsolute",
                                                     DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE, 0, 2**31 - 1)
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError("minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero")
        self.evaluator = self.evaluator_class(self.name, handle, self)
        # per node: its pods most important first, for the generation and instant they are of
        self._by_importance: dict[str, NodeOrder] = {}
        # per node: its part for the priority, budgets and instant of _parts_key
        self._parts_memo: dict[str, Part] = {}
        self._parts_key: tuple[int, object, int, float] | None = None
        # the same parts as padded rows by node index, for the node list they are indexed in
        self._parts_nodes: list[NodeInfo] | None = None
        self._part_table = PartTable(0)

    def can_be_victim(self, victim: PodInfo, preemptor: PodInfo) -> bool:
        """Whether ``victim`` may be preempted for ``preemptor`` at all (a variant narrowing this
        sets ``victims_are_lower_priority_pods`` to False)."""
        return victim.priority < preemptor.priority

    # -- PreEnqueue (SchedulerAsyncPreemption) -------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """Upstream's (1.32+): with SchedulerAsyncPreemption, a pod whose victims are still being
        preempted stays out of activeQ; without it, never a verdict."""
        if self.evaluator.async_preemption and self.evaluator.is_pod_running_preemption(pod.uid):
            return Status.unresolvable(WAITING_FOR_PREEMPTION)
        return None

    def events_to_register(self) -> list[ClusterEvent]:
        """A pod kept out of activeQ above may go once a pod is deleted (its last victim's deletion
        comes after its preemption stopped counting); no event otherwise: nothing else is ever
        rejected by this plugin."""
        return [ClusterEvent("Pod", DELETE, "PodDelete")] if self.evaluator.async_preemption else []

    # -- PostFilter ---------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        self.handle.metrics.preemption_attempts += 1
        result, status = self.evaluator.preempt(state, pod, statuses)
        msg = status.message()
        if msg:
            return result, Status(status.code, (f"preemption: {msg}",))
        return result, status

    def dry_run(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]) -> PreemptionRecord:
        return self.evaluator.dry_run(state, pod, statuses)

    # -- preemption.Interface -----------------------------------------------------------------
    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random offset, and ``calculateNumCandidates``: the percentage of the nodes, at least
        the absolute minimum, at most all of them."""
        offset = int(self.handle.rng.integers(num_nodes))
        count = max(num_nodes * self.min_candidate_nodes_percentage // 100, self.min_candidate_nodes_absolute)
        return offset, min(count, num_nodes)

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]:
        return {c.node: Victims(c.victims, c.pdb_violations) for c in candidates}

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_node_status: Status | None) -> tuple[bool, str]:
        """Not with ``preemptionPolicy: Never``; not while a lower-priority pod preempted for it is
        still terminating on its nominated node (unless that node became unresolvable)."""
        if pod.preemption_policy == "Never":
            return False, NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if nominated_node_status is not None and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            info = self.handle.snapshot().get(nominated)
            if info is not None:
                for other in info.pods:
                    if other.priority < pod.priority and other.deleting and other.preempted_by_scheduler():
                        return False, TERMINATING
        return True, ""

    def select_victims_on_node(
        self, pod: PodInfo, node: DryRunNode, budgets: DisruptionBudgets
    ) -> tuple[list[PodInfo], list[str], Status | None]:
        """Remove every potential victim; if the pod then fits, add them back one by one, most
        important first (PDB-violating ones before the others), keeping as victims those without
        which it no longer fits. Returns (victims, keys of the PDB-violating victims, failure)."""
        if self.victims_are_lower_priority_pods:
            priority = pod.priority
            potential = [p for p in node.pods if p.priority < priority]
        else:
            potential = [p for p in node.pods if self.can_be_victim(p, pod)]
        status = node.remove_pods(potential)
        if status is not None:
            return [], [], status
        if not potential:
            return [], [], Status.unresolvable(NO_VICTIMS)
        status = node.run_filters(pods_only=False)
        if status is not None:
            return [], [], status
        now = self.handle.now()
        potential.sort(key=lambda p: importance_key(p, now))
        violating, non_violating = budgets.split(potential)
        # the PDB-violating pods are reprieved first
        kept, status = node.reprieve(violating + non_violating)
        if status is not None:
            return [], [], status
        victims, violating_keys = _victims(violating, non_violating, kept, now)
        return victims, violating_keys, None

    def _node_order(self, info: NodeInfo, now: float) -> NodeOrder:
        """The node's pods by importance, kept until the node's pods change or time moves on (pods
        without a start time count as starting now)."""
        hit = self._by_importance.get(info.name)
        if hit is not None and hit.info is info and hit.generation == info.generation and hit.now == now:
            return hit
        order = self._by_importance[info.name] = NodeOrder(info, now)
        return order

    def _parts(self, nodes: Sequence[NodeInfo], priority: int, budgets: DisruptionBudgets, now: float) -> list[Part]:
        """Each node's part a preemptor of ``priority`` may evict (:meth:`NodeOrder.part`), looked up
        by node name among those of the same priority, budgets and instant, while the node's pods
        stay."""
        memo_key = (priority, budgets.selection, budgets.version, now) if budgets else (priority, None, -1, now)
        infos = self.handle.snapshot().node_infos
        if self._parts_key != memo_key or self._parts_nodes is not infos:
            self._parts_memo, self._parts_key = {}, memo_key
            self._parts_nodes, self._part_table = infos, PartTable(len(infos))
        memo = self._parts_memo
        table = self._part_table
        get = memo.get
        parts: list[Part] = []
        for info in nodes:
            part = get(info.name)
            if part is None or part.info is not info or part.generation != info.generation:
                part = memo[info.name] = self._node_order(info, now).part(priority, budgets)
                table.put(info.index, part)
            parts.append(part)
        return parts

    def select_victims_on_nodes(
        self, pod: PodInfo, nodes: Sequence[NodeInfo], batch: DryRunBatch, budgets: DisruptionBudgets
    ) -> NodeAnswers | None:
        """:meth:`select_victims_on_node` for many nodes at once: every lower-priority pod removed
        and reprieved on all nodes together, on each node in the order the per-node form uses (the
        PDB-violating pods first, each part most important first)."""
        if not self.victims_are_lower_priority_pods or (
                type(self).select_victims_on_node is not DefaultPreemption.select_victims_on_node):
            return None  # a variant choosing victims its own way
        return self._batched_victims(pod, nodes, batch, budgets)

    def _batched_victims(
        self, pod: PodInfo, nodes: Sequence[NodeInfo], batch: DryRunBatch, budgets: DisruptionBudgets
    ) -> NodeAnswers:
        """DefaultPreemption's victims on ``nodes`` by ``batch`` (see :meth:`select_victims_on_nodes`):
        the candidates' criteria computed for all nodes together, their victims listed on demand."""
        now = self.handle.now()
        priority = pod.priority
        parts = self._parts(nodes, priority, budgets, now)
        order = [part.pods for part in parts]
        table = self._part_table
        idx = np.fromiter((info.index for info in nodes), dtype=np.int64, count=len(nodes))
        lengths, valid, ranks = table.gather(idx)

        def requests(names: tuple[str, ...]) -> np.ndarray:
            return table.requests(names, idx, valid, parts)

        answer = batch.reprieve(nodes, order, requests)
        if answer is None:
            return [None] * len(nodes)
        fits, kept, decided = answer
        if not nodes:
            return []
        violating = None
        if any(part.violating is not None for part in parts):
            violating = np.concatenate([np.zeros(len(part.pods), dtype=bool) if part.violating is None
                                        else part.violating for part in parts])
        victims, keys = criteria_rows(lengths, ranks, violating, ~kept)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).tolist()
        source = _Reprieved(order, [part.split for part in parts], kept, starts, now)
        # the kinds in the per-node form's order of questions: undecided by the batch, no victims
        # to take, ruled out, no victims after all (asked node by node: it says why), a candidate
        kinds = np.full(len(nodes), BatchAnswers.FOUND, dtype=np.int8)
        kinds[victims == 0] = BatchAnswers.ASK
        kinds[~fits] = BatchAnswers.RULED_OUT
        empty = np.flatnonzero(lengths == 0)
        kinds[empty] = BatchAnswers.KNOWN
        if decided is not None:
            kinds[~decided] = BatchAnswers.ASK
        statuses: dict[int, object] = {}
        if len(empty):
            no_victims = Status.unresolvable(NO_VICTIMS)
            statuses = {j: no_victims for j in empty.tolist() if kinds[j] == BatchAnswers.KNOWN}
        return BatchAnswers([info.name for info in nodes], kinds, keys, -keys[:, 0].astype(np.int64), statuses,
                            source, REJECTED)

    def ordered_score_funcs(self, victims: dict[str, Victims]) -> list[ScoreFunc] | None:
        return None

    @property
    def removes_every_lower_priority_pod(self) -> bool:
        """Not for a variant choosing victims its own way."""
        return self.victims_are_lower_priority_pods and \
            type(self).select_victims_on_node is DefaultPreemption.select_victims_on_node

    def without_victims(self, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray) -> tuple[np.ndarray, Status] | None:
        """Nodes holding no pod of lower priority than ``pod`` (from the node table's per-priority
        counts): :meth:`select_victims_on_node` finds no victims there. Not for a variant choosing
        victims its own way."""
        if not self.removes_every_lower_priority_pod:
            return None
        _, lower = snapshot.table.below_priority(pod.priority)
        return lower[idx] == 0, Status.unresolvable(NO_VICTIMS)
