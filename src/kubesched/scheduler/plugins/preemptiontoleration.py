"""Preemption variants beyond upstream kube-scheduler (opt-in through KubeSchedulerConfiguration):
policies on the same preemption Evaluator as DefaultPreemption.

- ``PreemptionToleration`` (kubernetes-sigs/scheduler-plugins): a PriorityClass can protect its pods
  from preemptors below a minimum priority, for a toleration period after they were scheduled.
  Annotations on the *victim's* PriorityClass:
  ``preemption-toleration.scheduling.sigs.k8s.io/minimum-preemptable-priority`` (default: the class
  value + 1) and ``preemption-toleration.scheduling.sigs.k8s.io/toleration-seconds`` (default 0;
  negative: forever). Pods without a PriorityClass are never exempt.
- ``StrictPDBPreemption`` (KEP-3280's idea, kubesched's name): like DefaultPreemption but a candidate
  node whose victims would violate a PodDisruptionBudget is not a candidate at all; a preemptor that
  can only be placed by violating a budget stays pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.k8s.timefmt import parse_rfc3339
from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.candidates import BatchAnswers, Candidate
from kubesched.scheduler.framework.capabilities import DryRunBatch, DryRunNode
from kubesched.scheduler.framework.interface import Handle, Status
from kubesched.scheduler.framework.preemption import NodeAnswers
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption

PDB_VIOLATION = "preemption would violate a PodDisruptionBudget"

MIN_PREEMPTABLE = "preemption-toleration.scheduling.sigs.k8s.io/minimum-preemptable-priority"
TOLERATION_SECONDS = "preemption-toleration.scheduling.sigs.k8s.io/toleration-seconds"


def toleration_policy(priority_class: dict[str, Any]) -> tuple[int, int]:
    """(minimum preemptable priority, toleration seconds) of a PriorityClass; raises ValueError."""
    annotations = (priority_class.get("metadata") or {}).get("annotations") or {}
    value = int(priority_class.get("value") or 0)
    minimum = int(annotations.get(MIN_PREEMPTABLE, value + 1))
    seconds = int(annotations.get(TOLERATION_SECONDS, 0))
    return minimum, seconds


def exempted_from_preemption(victim: PodInfo, preemptor: PodInfo, priority_class: dict[str, Any] | None,
                             now: float) -> bool:
    if priority_class is None:
        return False
    try:
        minimum, seconds = toleration_policy(priority_class)
    except ValueError:
        return False
    if preemptor.priority >= minimum:
        return False
    if seconds < 0:
        return True
    scheduled = victim.condition("PodScheduled")
    if scheduled is None or scheduled.get("status") != "True":
        return True
    since = scheduled.get("lastTransitionTime")
    scheduled_at = parse_rfc3339(since) if since else now
    return scheduled_at + seconds > now


class PreemptionToleration(DefaultPreemption):
    """DefaultPreemption whose victims exclude the pods their PriorityClass protects."""

    name = "PreemptionToleration"
    victims_are_lower_priority_pods = False

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        super().__init__(args, handle)

    def can_be_victim(self, victim: PodInfo, preemptor: PodInfo) -> bool:
        if victim.priority >= preemptor.priority:
            return False
        class_name = victim.spec.get("priorityClassName")
        if not class_name:
            return True
        pc = self.handle.get("PriorityClass", "", class_name)
        return not exempted_from_preemption(victim, preemptor, pc, self.handle.now())


class StrictPDBPreemption(DefaultPreemption):
    """DefaultPreemption where a node whose victims would violate a PDB is no candidate."""

    name = "StrictPDBPreemption"

    def select_victims_on_node(
        self, pod: PodInfo, node: DryRunNode, budgets: DisruptionBudgets
    ) -> tuple[list[PodInfo], list[str], Status | None]:
        victims, violating, status = super().select_victims_on_node(pod, node, budgets)
        if status is None and violating:
            return [], [], Status.unschedulable(PDB_VIOLATION)
        return victims, violating, status

    def select_victims_on_nodes(
        self, pod: PodInfo, nodes: Sequence[NodeInfo], batch: DryRunBatch, budgets: DisruptionBudgets
    ) -> NodeAnswers | None:
        """DefaultPreemption's batched victims, a node whose victims violate a PDB ruled out."""
        answers = self._batched_victims(pod, nodes, batch, budgets)
        if isinstance(answers, BatchAnswers):  # the violating candidates become known statuses
            violating = np.flatnonzero((answers.kinds == BatchAnswers.FOUND) & (answers.violations > 0))
            answers.kinds[violating] = BatchAnswers.KNOWN
            answers.statuses.update(dict.fromkeys(violating.tolist(), Status.unschedulable(PDB_VIOLATION)))
            return answers
        return [Status.unschedulable(PDB_VIOLATION) if isinstance(answer, Candidate) and answer.pdb_violations
                else answer for answer in answers]
