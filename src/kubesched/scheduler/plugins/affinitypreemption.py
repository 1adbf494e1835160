"""AffinityAwarePreemption (kubesched's, opt-in): DefaultPreemption that keeps the pods the preemptor
has required pod affinity to.

The problem (the Pod Preemption design leaves it open): a pod P with required pod affinity to pods
that, on a node, are all of lower priority than P. Upstream's dry run removes every lower-priority
pod before asking whether P fits; with them gone P's affinity is no longer satisfied, the node is no
candidate, and P may stay pending although evicting *some* of those pods would have made room.

The rule, per node, when P has required pod affinity terms and some lower-priority pod on the node
matches all of them (InterPodAffinity counts an existing pod for P's affinity only when it matches
every term, and a pod on the node is in the node's domain of every topology key the node has, so one
such pod kept on the node satisfies every term):

1. *options*: keep nothing (DefaultPreemption's own dry run), or keep exactly one matching
   lower-priority pod, each of them in turn, most important first;
2. for each option, remove every other lower-priority pod; if P then passes the filters, reprieve
   the removed pods as DefaultPreemption does (the PodDisruptionBudget-violating ones first, each
   part most important first), keeping those without which P still fits;
3. keep the option whose victims are best by the node-choice criteria (fewest PDB violations, lowest
   priority of the most important victim, smallest sum of priorities, fewest victims, latest start
   of the most important victims); on a tie the earlier option (so DefaultPreemption's answer, then
   keeping the more important pod).

Keeping more than one matching pod never helps: a kept pod adds to the node's requests and can only
add to spreading skew and anti-affinity counts. Where no option lets P fit, the node's status is
DefaultPreemption's. Pods without required pod affinity are handled exactly as DefaultPreemption
handles them (batched dry run included). The node choice, eligibility and acting are
DefaultPreemption's; the options are weighed by the batched dry run where it answers for the node
(affinitybatch.py). Each candidate's record says which pod was kept (``keptForAffinity``); the
metrics count the attempts that weighed keeping one and the preemptions that kept one (see
preemptionaccount.py). See docs/preemption.md for what the rule guarantees and where it is greedy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.candidates import (
    Candidate,
    CriteriaKey,
    PreemptionRecord,
    criteria_key,
    importance_key,
)
from kubesched.scheduler.framework.capabilities import DryRunBatch, DryRunNode
from kubesched.scheduler.framework.interface import Code, CycleState, Handle, Status
from kubesched.scheduler.framework.preemption import NodeAnswers
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.affinitybatch import weigh_options
from kubesched.scheduler.plugins.affinityterms import (
    AffinityTerm,
    namespace_labels_lookup,
    parse_pod_terms,
    pod_matches_all_terms,
)
from kubesched.scheduler.plugins.preemptionaccount import AccountedPreemption

#: what one option of the dry run gives: (victims most important first, keys of the PDB-violating
#: ones), or the status saying why P does not fit with it; and whether that status ends the node's
#: dry run (a pod that could not be moved, a filter's error)
Outcome = tuple[tuple[list[PodInfo], list[str]] | Status, bool]


def required_affinity(pod: PodInfo) -> tuple[AffinityTerm, ...]:
    """The pod's required pod affinity terms; none when they do not parse (the PreFilter then
    rejects the pod before preemption is asked)."""
    terms = parse_pod_terms(pod)
    return () if terms.errors else terms.required_affinity


class AffinityAwarePreemption(AccountedPreemption):
    """DefaultPreemption that may keep one lower-priority pod the preemptor has required affinity
    to (see the module's documentation for the rule)."""

    name = "AffinityAwarePreemption"
    #: weigh the options by the batched dry run where it answers (False: every node of a pod with
    #: required affinity on its own, the reference the differential test holds it against)
    batch_options = True

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        super().__init__(args, handle)
        #: for the attempt under way: per node, the matching pods its dry run weighed keeping and
        #: the one kept (None: DefaultPreemption's answer won)
        self._weighed: dict[str, tuple[list[PodInfo], PodInfo | None]] = {}

    # -- one preemption attempt (see AccountedPreemption) -------------------------------------
    def begin(self, pod: PodInfo, state: CycleState) -> None:
        self._weighed = {}

    def end(self) -> None:
        self._weighed = {}

    def annotate(self, pod: PodInfo, record: PreemptionRecord) -> None:
        """Per candidate whose dry run weighed keeping a pod the preemptor has affinity to:
        ``keptForAffinity`` (the pod kept, or none when DefaultPreemption's answer won) and
        ``affinityOptions`` (the matching lower-priority pods it weighed, most important first)."""
        for candidate in record.candidates:
            weighed = self._weighed.get(candidate.node)
            if weighed is None:
                continue
            matching, kept = weighed
            record.notes.setdefault(candidate.node, {}).update({
                "keptForAffinity": None if kept is None else {"pod": kept.key, "priority": kept.priority},
                "affinityOptions": [p.key for p in matching],
            })

    def count(self, pod: PodInfo, chosen: Candidate | None) -> None:
        """``affinityAttempts`` when some node weighed keeping a matching pod; ``affinityKept`` when
        the preemption made kept one on its node."""
        metrics = self.handle.metrics
        if self._weighed:
            metrics.count_policy(self.name, "affinityAttempts")
        if chosen is not None and (weighed := self._weighed.get(chosen.node)) is not None and weighed[1] is not None:
            metrics.count_policy(self.name, "affinityKept")

    def select_victims_on_nodes(
        self, pod: PodInfo, nodes: Sequence[NodeInfo], batch: DryRunBatch, budgets: DisruptionBudgets
    ) -> NodeAnswers | None:
        """DefaultPreemption's batched form for a pod without required pod affinity, and on the
        nodes without a lower-priority pod its terms match; on the others, the options weighed by
        the batched dry run where it answers (affinitybatch.py), node by node where not."""
        terms = required_affinity(pod)
        if not terms:
            return self._batched_victims(pod, nodes, batch, budgets)
        if not self.batch_options:
            return None
        lookup = namespace_labels_lookup(self.handle)
        answers, weighed = weigh_options(
            pod, nodes, batch, budgets, self.handle.now(), lambda p: pod_matches_all_terms(terms, p, lookup),
            lambda plain: self._batched_victims(pod, plain, batch, budgets))
        self._weighed.update(weighed)
        return answers

    def select_victims_on_node(
        self, pod: PodInfo, node: DryRunNode, budgets: DisruptionBudgets
    ) -> tuple[list[PodInfo], list[str], Status | None]:
        terms = required_affinity(pod)
        if not terms:
            return super().select_victims_on_node(pod, node, budgets)
        priority = pod.priority
        potential = [p for p in node.pods if p.priority < priority]
        lookup = namespace_labels_lookup(self.handle)
        now = self.handle.now()
        matching = sorted((p for p in potential if pod_matches_all_terms(terms, p, lookup)),
                          key=lambda p: importance_key(p, now))
        if not matching:
            return super().select_victims_on_node(pod, node, budgets)
        potential.sort(key=lambda p: importance_key(p, now))
        violating, non_violating = budgets.split(potential)
        best: tuple[CriteriaKey, list[PodInfo], list[str], PodInfo | None] | None = None
        first_failure: Status | None = None
        for kept in [None, *matching]:
            outcome, final = self._option(node, violating, non_violating, kept, now)
            if isinstance(outcome, Status):
                if final:
                    return [], [], outcome
                first_failure = first_failure or outcome
                continue
            victims, violating_keys = outcome
            if not victims:  # P fits without evicting anyone: as DefaultPreemption answers
                return victims, violating_keys, None
            key = criteria_key(victims, len(violating_keys), now)
            if best is None or key > best[0]:
                best = (key, victims, violating_keys, kept)
        if best is None:
            assert first_failure is not None
            return [], [], first_failure
        self._weighed[node.name] = (matching, best[3])
        return best[1], best[2], None

    @staticmethod
    def _option(node: DryRunNode, violating: list[PodInfo], non_violating: list[PodInfo],
                kept: PodInfo | None, now: float) -> Outcome:
        """The victims with ``kept`` (or nothing) kept: every other lower-priority pod removed, P's
        filters run, the removed pods reprieved violating first. The node is left as it was found
        unless the outcome is final."""
        removed_violating = [p for p in violating if p is not kept]
        removed_other = [p for p in non_violating if p is not kept]
        removed = removed_violating + removed_other
        status = node.remove_pods(removed)
        if status is not None:
            return status, True
        failure = node.run_filters(pods_only=False)
        if failure is not None:
            if failure.code == Code.ERROR:
                return failure, True
            error = _restored(node, removed)
            return (failure, False) if error is None else (error, True)
        stays, status = node.reprieve(removed)
        if status is not None:
            return status, True
        victims = [p for p, stay in zip(removed, stays) if not stay]
        violating_keys = [p.key for p, stay in zip(removed_violating, stays) if not stay]
        victims.sort(key=lambda p: importance_key(p, now))  # most important first
        error = _restored(node, victims)
        return ((victims, violating_keys), False) if error is None else (error, True)


def _restored(node: DryRunNode, pods: list[PodInfo]) -> Status | None:
    """Put ``pods`` back on ``node``; the failure adding one gave, if any."""
    for p in pods:
        status = node.add_pod(p)
        if status is not None:
            return status
    return None
