"""Preemption as a generic Evaluator plus a policy (upstream ``pkg/scheduler/framework/preemption``,
v1.28 with the #128307 fix).

The :class:`Evaluator` runs the steps every preemption plugin shares: fetch the pod again, ask the
policy whether it may preempt, find the nodes where preemption might help, dry-run the policy's
``SelectVictimsOnNode`` on them from a seeded offset until enough candidates are found, pick one
node, and prepare it (mark the victims DisruptionTarget, delete them, clear lower nominations). A
:class:`PreemptionPolicy` (DefaultPreemption and its variants) decides who may preempt and which pods
are victims.

Every decision is recorded in a :class:`PreemptionRecord` (candidates, victims, PDB violations and
the criterion that picked the node) that ``explain`` and the simulation result can show.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from kubesched.scheduler.features import ASYNC_PREEMPTION
from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.candidates import (
    CRITERIA,
    BatchAnswers,
    Candidate,
    Candidates,
    PreemptionRecord,
    Victims,
    take_run,
)
from kubesched.scheduler.framework.capabilities import DryRunBatch, DryRunNode, PreemptionArithmetic
from kubesched.scheduler.framework.extenders import narrow_victims, preempting
from kubesched.scheduler.framework.found import LazyNodeStatuses
from kubesched.scheduler.framework.interface import Code, CycleState, Handle, PostFilterResult, Status
from kubesched.scheduler.framework.nominated import NominatedLoad
from kubesched.scheduler.framework.types import (
    NodeInfo,
    NodeStatuses,
    PodInfo,
    alike_statuses,
    fit_error_message,
)
from kubesched.scheduler.framework.victims import VictimPreemption, clear_nominated_node_name
from kubesched.scheduler.framework.views import NodeTableSnapshot

NOT_HELPFUL = "Preemption is not helpful for scheduling"
#: a node :meth:`PreemptionPolicy.select_victims_on_nodes` rules out, its status not computed
REJECTED = Status(Code.UNSCHEDULABLE, ("rejected by the batched dry run",))


#: a batched dry run's answers for some nodes: per node a Candidate, a Status or None, or as arrays
NodeAnswers = list[Candidate | Status | None] | BatchAnswers
#: a node-picking criterion: its name (for explanations) and a score per candidate node, higher wins
ScoreFunc = tuple[str, Callable[[str], float]]


@runtime_checkable
class PreemptionPolicy(Protocol):
    """What a preemption plugin decides (upstream ``preemption.Interface``)."""

    #: True when the potential victims are exactly the node's pods of lower priority than the
    #: preemptor; lets the evaluator rule nodes out for all nodes at once from per-priority sums
    victims_are_lower_priority_pods: bool
    #: False when :meth:`ordered_score_funcs` always answers None (the default criteria): the
    #: candidates are then compared without listing their victims
    custom_node_choice: bool

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Where the dry run starts among the potential nodes, and how many candidates suffice."""

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]: ...

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_node_status: Status | None) -> tuple[bool, str]:
        """May ``pod`` preempt at all; if not, why (the message of the Unschedulable status)."""

    def select_victims_on_node(
        self, pod: PodInfo, node: DryRunNode, budgets: DisruptionBudgets
    ) -> tuple[list[PodInfo], list[str], Status | None]:
        """The victims on ``node`` (most important first), the keys of those whose eviction violates
        a PodDisruptionBudget, or the status saying why the node is no candidate."""

    def select_victims_on_nodes(
        self, pod: PodInfo, nodes: Sequence[NodeInfo], batch: DryRunBatch, budgets: DisruptionBudgets
    ) -> NodeAnswers | None:
        """:meth:`select_victims_on_node` for many nodes at once where the policy can answer so:
        per node a :class:`Candidate` (with its criteria), a Status (no candidate; :data:`REJECTED`
        when the status itself is to be asked node by node, if it is wanted) or None (ask node by
        node), as a list or as :class:`BatchAnswers`. None altogether when the policy has no such
        form."""

    def ordered_score_funcs(self, victims: dict[str, Victims]) -> list[ScoreFunc] | None:
        """The criteria picking the node, in order; None for the default ones (:data:`CRITERIA`)."""

    #: True when :meth:`select_victims_on_node` removes every pod of lower priority and then asks
    #: the filters, answering with their status when they reject the node (DefaultPreemption's):
    #: the statuses of nodes known to fail so may be found for many nodes at once
    @property
    def removes_every_lower_priority_pod(self) -> bool: ...

    def without_victims(self, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray) -> tuple[np.ndarray, Status] | None:
        """Which nodes ``idx[k]`` (by index) hold no pod the policy could evict for ``pod``, and the
        status :meth:`select_victims_on_node` gives every such node, for all of them at once; None
        when the policy cannot tell so."""


@runtime_checkable
class PostFilterDryRun(Protocol):
    def dry_run(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]) -> PreemptionRecord:
        """What preemption would do for ``pod`` now, without acting (for ``explain``/what-if)."""


class Evaluator:
    """Upstream ``preemption.Evaluator``: the steps of preemption, with ``policy`` deciding."""

    def __init__(self, plugin_name: str, handle: Handle, policy: PreemptionPolicy) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.policy = policy
        #: what is done to the chosen candidate's victims (at once, or in the background with
        #: SchedulerAsyncPreemption)
        self.victims = VictimPreemption(handle, asynchronous=handle.feature_enabled(ASYNC_PREEMPTION))
        #: the cluster's PodDisruptionBudgets, compiled (brought up to date by each dry run)
        self.budgets = DisruptionBudgets(handle)

    @property
    def async_preemption(self) -> bool:
        return self.victims.asynchronous

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Upstream ``IsPodRunningPreemption``: whether the pod's victims are still being preempted."""
        return self.victims.is_running(uid)

    def prepare_candidate(self, candidate: Candidate, pod: PodInfo) -> Status | None:
        """Upstream ``prepareCandidate``: see :meth:`VictimPreemption.prepare`."""
        return self.victims.prepare(candidate.node, candidate.victims, pod)

    # -- Preempt --------------------------------------------------------------------------------
    def preempt(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream ``Evaluator.Preempt``; the decision is recorded through the handle."""
        record = PreemptionRecord(time=self.handle.now(), pod=pod.key, priority=pod.priority)
        self.handle.record_preemption(record)
        result, status = self._preempt(state, pod, statuses, record)
        record.message = status.message()
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
        ok, msg = self.policy.pod_eligible_to_preempt_others(pod, statuses.get(pod.nominated_node_name))
        if not ok:
            record.outcome = "not eligible"
            return None, Status.unschedulable(msg)
        best, result, status = self.find_candidate(state, pod, statuses, record)
        if best is None:
            return result, status
        if self.async_preemption:
            self.victims.prepare_async(best.node, best.victims, pod)
        else:
            error = self.prepare_candidate(best, pod)
            if error is not None:
                record.outcome = "error"
                return None, error
        record.outcome = "preempted"
        return PostFilterResult(best.node), Status(Code.SUCCESS)

    def find_candidate(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status], record: PreemptionRecord,
        exclude: frozenset[str] | set[str] = frozenset(),
    ) -> tuple[Candidate | None, PostFilterResult | None, Status]:
        """The node and victims :meth:`preempt` would choose for an eligible ``pod`` (the steps
        between eligibility and acting), recorded in ``record``; nodes in ``exclude`` are left out.
        Without a candidate: None, with the PostFilter's result and status."""
        handle = self.handle
        potential, node_statuses = self._nodes_where_preemption_might_help(statuses, exclude)
        candidates: Sequence[Candidate] = []
        if potential:
            candidates = self._dry_run_preemption(state, pod, potential, node_statuses)
            record.candidates = candidates
        else:
            if pod.nominated_node_name:
                clear_nominated_node_name(handle.cluster, pod)
        if not candidates:
            if handle.keep_rejected_nodes:
                record.rejected = node_statuses  # not changed from here on
            # the distinct messages in the nodes' order: each shared Status once, as first met
            errors = list(dict.fromkeys(st.message() for st, _ in node_statuses.alike() if st.code == Code.ERROR))
            if errors:
                # a dry-run error with no candidate fails the PostFilter with that error
                # (utilerrors.NewAggregate text: distinct messages, bracketed if several); the
                # nomination is left as it is
                record.outcome = "error"
                return None, None, Status.error(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
            record.outcome = "no candidates"
            return None, PostFilterResult(""), Status.unschedulable(
                fit_error_message(len(node_statuses), "", node_statuses, "")
            )
        best = self._pick(pod, candidates, record)
        if isinstance(best, Status):
            return None, None, best
        if not handle.keep_all_candidates:
            record.candidates = [best]  # the others only matter to explanations, and cost memory
        return best, PostFilterResult(best.node), Status(Code.SUCCESS)

    def dry_run(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]) -> PreemptionRecord:
        """The decision :meth:`preempt` would take now, without acting or recording it."""
        record = PreemptionRecord(time=self.handle.now(), pod=pod.key, priority=pod.priority)
        ok, msg = self.policy.pod_eligible_to_preempt_others(pod, statuses.get(pod.nominated_node_name))
        if not ok:
            record.outcome, record.message = "not eligible", msg
            return record
        potential, node_statuses = self._nodes_where_preemption_might_help(statuses)
        candidates: Sequence[Candidate] = self._dry_run_preemption(state, pod, potential, node_statuses) \
            if potential else []
        record.candidates = candidates
        if not candidates:
            record.outcome = "no candidates"
            record.rejected = node_statuses
            record.message = fit_error_message(len(node_statuses), "", node_statuses, "")
            return record
        best = self._pick(pod, candidates, record)
        if isinstance(best, Status):
            record.message = best.message()
            return record
        record.outcome = "would preempt"
        return record

    def _pick(self, pod: PodInfo, candidates: Sequence[Candidate], record: PreemptionRecord) -> Candidate | Status:
        """Upstream's ``callExtenders`` then ``SelectCandidate``: the chosen candidate (recorded),
        or why there is none (the outcome recorded)."""
        candidates, error = self._call_extenders(pod, candidates)
        if error is not None:
            record.outcome = "error"
            return error
        record.candidates = candidates
        if not candidates:
            record.outcome = "no candidates"
            return Status.unschedulable("no candidate node for preemption")
        best = self._select_candidate(candidates, record)
        record.chosen = best.node
        return best

    # -- extenders --------------------------------------------------------------------------------
    def _call_extenders(self, pod: PodInfo, candidates: Sequence[Candidate]) -> tuple[Sequence[Candidate], Status | None]:
        """Upstream ``callExtenders`` (see :func:`~kubesched.scheduler.framework.extenders.narrow_victims`)
        on the candidates. They keep their order; nodes an extender added come after them, by name."""
        extenders = preempting(self.handle.extenders(), pod)
        if not extenders or not candidates:
            return candidates, None
        # upstream hands the extenders the policy's CandidatesToVictimsMap
        asked = {node: (list(v.pods), v.num_pdb_violations)
                 for node, v in self.policy.candidates_to_victims_map(candidates).items()}
        victims = narrow_victims(extenders, pod, asked, self.handle.snapshot().get)
        if isinstance(victims, Status):
            return [], victims
        by_node = {c.node: c for c in candidates}
        names = [c.node for c in candidates if c.node in victims] + sorted(set(victims) - set(by_node))
        kept: list[Candidate] = []
        for name in names:
            pods, violations = victims[name]
            previous = by_node.get(name)
            same = previous is not None and [p.uid for p in previous.victims] == [p.uid for p in pods]
            kept.append(Candidate(name, pods, violations, list(previous.violating) if same and previous else []))
        return kept, None

    # -- finding candidates ------------------------------------------------------------------------
    def _nodes_where_preemption_might_help(
        self, statuses: dict[str, Status], exclude: frozenset[str] | set[str] = frozenset()
    ) -> tuple[list[NodeInfo], NodeStatuses]:
        """Upstream ``nodesWherePreemptionMightHelp``: every node but those rejected as
        UnschedulableAndUnresolvable (which get "not helpful"); nodes in ``exclude`` are left out."""
        node_infos = self.handle.snapshot().node_infos
        # nodes rejected alike share one Status object: look at each once
        unresolvable = any(st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                           for st, _ in alike_statuses(statuses if isinstance(statuses, NodeStatuses)
                                                       else statuses.values()))
        if not unresolvable and not exclude:
            return list(node_infos), NodeStatuses()
        potential: list[NodeInfo] = []
        node_statuses = NodeStatuses()
        not_helpful = Status.unresolvable(NOT_HELPFUL)  # one object for all: counted once
        unresolvable_code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        names: list[str] | None = getattr(self.handle.snapshot(), "node_names", None)  # the cache's, in order
        ruled_out = statuses.matching(names, lambda st: st.code == unresolvable_code) \
            if isinstance(statuses, LazyNodeStatuses) and names is not None and not exclude else None
        if ruled_out is not None and names is not None:
            # the scan's statuses by node, without making the map: nodes rejected alike share a
            # Status, each asked once
            node_statuses.update(dict.fromkeys([names[j] for j in np.flatnonzero(ruled_out).tolist()], not_helpful))
            return [node_infos[j] for j in np.flatnonzero(~ruled_out).tolist()], node_statuses
        get = statuses.get
        for info in node_infos:
            name = info.name
            if name in exclude:
                continue
            st = get(name)
            if st is not None and st.code == unresolvable_code:
                node_statuses[name] = not_helpful
            else:
                potential.append(info)
        return potential, node_statuses

    def _dry_run_preemption(
        self, state: CycleState, pod: PodInfo, potential: list[NodeInfo], node_statuses: dict[str, Status],
    ) -> Candidates:
        """Upstream ``DryRunPreemption``: the policy's victims on each potential node from the
        offset on, until there are enough candidates and one of them violates no PDB. The nodes'
        failures go to ``node_statuses``; the candidates come back, non-violating first."""
        handle, policy = self.handle, self.policy
        fwk = handle.framework
        budgets = self.budgets.refresh()
        n = len(potential)
        offset, num_candidates = policy.get_offset_and_num_candidates(n)
        arithmetic = fwk.preemption_arithmetic(state)  # the dry run by arithmetic is exact on every node
        fit = arithmetic or fwk.preemption_fit(state)
        order = np.roll(np.arange(n), -offset)
        deferred: list[int] = []  # nodes known to fail; their status is only needed without candidates
        no_victims: list[int] = []  # nodes with nothing to evict, all of one status
        no_victims_status = REJECTED
        outcomes = None
        snapshot = handle.snapshot()
        nominated: NominatedLoad | None = None  # the nominated pods' load, when a filter judges by arithmetic
        if fit is not None:
            nominated = fwk.nominated_load(pod, snapshot)
            if policy.victims_are_lower_priority_pods and not fwk.rejections_noted_before(state, fit):
                # nodes that fail even with every lower-priority pod gone and the nominated pods
                # added are no candidates (pass 1 rejects them, whatever the other filters say):
                # ruled out for all nodes at once from per-priority sums (not when a filter before
                # ``fit`` acts on its rejections: upstream calls it on those nodes too)
                # ``potential`` keeps the snapshot's order: all of it, or fewer nodes
                idx = np.arange(n, dtype=np.int64) if n == len(snapshot.node_infos) else \
                    np.fromiter((info.index for info in potential), dtype=np.int64, count=n)
                known_fail = fit.preemption_failures(state, pod, snapshot, idx, nominated)[order]
                deferred = order[known_fail].tolist()
                order = order[~known_fail]
                # nodes without a pod to evict are no candidates, whatever the filters say: ruled
                # out at once, their (one) status noted should no candidate be found
                empty = policy.without_victims(pod, snapshot, idx)
                if empty is not None:
                    nothing = empty[0][order]
                    no_victims, no_victims_status = order[nothing].tolist(), empty[1]
                    order = order[~nothing]
            outcomes = self._batched(state, pod, potential, order.tolist(), fit, arithmetic, nominated,
                                     budgets, num_candidates)
        if outcomes is None:
            outcomes = (([k], [None]) for k in order.tolist())  # None: asked node by node
        non_violating, violating_candidates = Candidates(), Candidates()
        enough = False
        for ks, answers in outcomes:
            if isinstance(answers, BatchAnswers) and not (answers.kinds == BatchAnswers.ASK).any():
                enough = take_run(ks, answers, non_violating, violating_candidates, num_candidates, deferred,
                                  node_statuses)
            else:
                for k, answer in zip(ks, answers):
                    candidate: Candidate | None
                    if isinstance(answer, Candidate):
                        candidate, status = answer, None
                    elif answer is None:
                        _, candidate, status = self._on_node(state, pod, potential[k], arithmetic, budgets, k)
                    else:
                        assert isinstance(answer, Status)
                        candidate, status = None, answer
                    info = potential[k]
                    if candidate is not None:
                        (violating_candidates if candidate.pdb_violations else non_violating).add(candidate)
                        if non_violating and len(non_violating) + len(violating_candidates) >= num_candidates:
                            enough = True
                            break
                        continue
                    if status is REJECTED:
                        deferred.append(k)
                        continue
                    if status is None:
                        status = Status.error(f'expected at least one victim pod on node "{info.name}"')
                    node_statuses[info.name] = status
            if enough:
                break
        candidates = non_violating
        candidates.extend(violating_candidates)
        if not candidates:
            for k in no_victims:
                node_statuses[potential[k].name] = no_victims_status
            if deferred and arithmetic is not None and nominated is not None and policy.removes_every_lower_priority_pod:
                # every lower-priority pod removed, the filters asked: for all those nodes at once
                idx = np.fromiter((potential[k].index for k in deferred), dtype=np.int64, count=len(deferred))
                found = fwk.removal_statuses(state, pod, snapshot, idx, arithmetic, nominated)
                rest = []  # none, the filters failing them all: else node by node below
                for k, status in zip(deferred, found):
                    if status is None:
                        rest.append(k)
                    else:
                        node_statuses[potential[k].name] = status
                deferred = rest
            for k in deferred:  # known to fail the first check, so a status comes back
                info = potential[k]
                rejected = policy.select_victims_on_node(pod, fwk.dry_run_node(state, pod, info, arithmetic),
                                                         budgets)[2]
                assert rejected is not None
                node_statuses[info.name] = rejected
        return candidates

    def _on_node(
        self, state: CycleState, pod: PodInfo, info: NodeInfo, arithmetic: PreemptionArithmetic | None,
        budgets: DisruptionBudgets, k: int,
    ) -> tuple[int, Candidate | None, Status | None]:
        """The policy's ``SelectVictimsOnNode`` on one node: (``k``, the candidate, None), or (``k``,
        None, why not; None when it found no victims and no failure)."""
        dry = self.handle.framework.dry_run_node(state, pod, info, arithmetic)
        victims, violating, status = self.policy.select_victims_on_node(pod, dry, budgets)
        if status is None and victims:
            return k, Candidate(info.name, victims, len(violating), violating), None
        return k, None, status

    def _batched(
        self, state: CycleState, pod: PodInfo, potential: list[NodeInfo], todo: list[int],
        fit: PreemptionArithmetic, arithmetic: PreemptionArithmetic | None, nominated: NominatedLoad,
        budgets: DisruptionBudgets, chunk: int,
    ) -> Iterator[tuple[list[int], Sequence[object]]] | None:
        """The dry run's answers for the nodes of ``todo`` in their order, a batch at a time as (node
        positions, the policy's answers for them), found by the policy's batched form (with ``fit``
        moving the pods) for about ``chunk`` nodes at a time (fewer once most candidates are
        found); None when the policy or the framework has none. A None answer is asked node by node
        (by ``arithmetic`` when it is exact on every node, else on cloned nodes)."""
        policy, fwk = self.policy, self.handle.framework
        batch = fwk.dry_run_batch(state, pod, self.handle.snapshot(), fit, nominated)
        if batch is None:
            return None
        first = policy.select_victims_on_nodes(pod, [potential[k] for k in todo[:chunk]], batch, budgets)
        if first is None:
            return None

        def batches() -> Iterator[tuple[list[int], Sequence[object]]]:
            answers: Sequence[object] = first
            done = found = 0
            while True:
                yield todo[done:done + len(answers)], answers
                found += int(np.count_nonzero(answers.kinds == BatchAnswers.FOUND)) \
                    if isinstance(answers, BatchAnswers) else sum(isinstance(a, Candidate) for a in answers)
                done += len(answers)
                if done >= len(todo):
                    return
                # about as many nodes as candidates are still wanted, at the rate found so far
                size = min(max(max(chunk - found, 1) * done // max(found, 1), 16), chunk)
                more = policy.select_victims_on_nodes(pod, [potential[j] for j in todo[done:done + size]], batch,
                                                      budgets)
                assert more is not None
                answers = more

        return batches()

    # -- picking one ------------------------------------------------------------------------------
    def _select_candidate(self, candidates: Sequence[Candidate], record: PreemptionRecord) -> Candidate:
        """Upstream ``SelectCandidate`` / ``pickOneNodeForPreemption``: each criterion keeps the
        best-scoring candidates until one is left; ties after all of them are broken at random
        (upstream iterates a Go map)."""
        if len(candidates) == 1:
            record.criterion = "only candidate"
            return candidates[0]
        funcs = None
        if self.policy.custom_node_choice:
            funcs = self.policy.ordered_score_funcs(self.policy.candidates_to_victims_map(candidates))
        if funcs is None:
            now = self.handle.now()
            # the criteria's values are integers below 2**53 and start times: exact as float64
            keys = candidates.keys(now) if isinstance(candidates, Candidates) else \
                np.array([c.criteria(now) for c in candidates], dtype=np.float64)
            pick = candidates.pick if isinstance(candidates, Candidates) else candidates.__getitem__
            left = np.arange(len(candidates))
            for i, criterion in enumerate(CRITERIA):
                column = keys[left, i]
                left = left[column == column.max()]
                if len(left) == 1:
                    record.criterion = criterion
                    return pick(int(left[0]))
            record.criterion = "random tie-break"
            return pick(int(left[int(self.handle.rng.integers(len(left)))]))
        by_node = {c.node: c for c in candidates}
        remaining = list(by_node)
        for criterion, func in funcs:
            scores = [func(node) for node in remaining]
            best = max(scores)
            remaining = [node for node, s in zip(remaining, scores) if s == best]
            if len(remaining) == 1:
                record.criterion = criterion
                return by_node[remaining[0]]
        record.criterion = "random tie-break"
        return by_node[remaining[int(self.handle.rng.integers(len(remaining)))]]
