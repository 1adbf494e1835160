"""What kubesched's opt-in preemption plugins (CrossNodePreemption, AffinityAwarePreemption) add to
DefaultPreemption's account of a preemption: notes on each candidate in the decision's record (which
``explain``, ``simulate --explain`` and the simulation result's ``preemptionDecisions`` show), and
their own counters in the scheduler's metrics (see
:data:`kubesched.scheduler.metrics.POLICY_COUNTERS`).

A plugin built on :class:`AccountedPreemption` learns of each attempt's start and end and of the
candidate the attempt chose, through an Evaluator whose only change is to hand over the record of
the decision once the candidate is found (before acting). Dry runs (``explain``, what-if) are
annotated the same way but never counted: the metrics are what the scheduler did.
"""

from __future__ import annotations

from typing import Any

from kubesched.scheduler.framework.candidates import Candidate, PreemptionRecord
from kubesched.scheduler.framework.interface import Code, CycleState, Handle, PostFilterResult, Status
from kubesched.scheduler.framework.preemption import Evaluator
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption


class _AccountingEvaluator(Evaluator):
    """The Evaluator of an :class:`AccountedPreemption`: it has the plugin annotate each decision's
    record once the candidates are found, and keeps the candidate the attempt under way chose."""

    def __init__(self, plugin_name: str, handle: Handle, policy: AccountedPreemption) -> None:
        super().__init__(plugin_name, handle, policy)
        self.accounted = policy
        #: the candidate chosen by the PostFilter call under way (None: none yet, or none found)
        self.chosen: Candidate | None = None

    def find_candidate(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status], record: PreemptionRecord,
        exclude: frozenset[str] | set[str] = frozenset(),
    ) -> tuple[Candidate | None, PostFilterResult | None, Status]:
        best, result, status = super().find_candidate(state, pod, statuses, record, exclude)
        self.chosen = best
        self.accounted.annotate(pod, record)
        return best, result, status


class AccountedPreemption(DefaultPreemption):
    """DefaultPreemption with an account of what a variant did: :meth:`begin` and :meth:`end` around
    each attempt (PostFilter or dry run), :meth:`annotate` on its record, :meth:`count` on the
    preemption an attempt made."""

    evaluator_class = _AccountingEvaluator

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        super().__init__(args, handle)
        assert isinstance(self.evaluator, _AccountingEvaluator)
        self._accounting = self.evaluator

    # -- hooks of a variant ---------------------------------------------------------------------
    def begin(self, pod: PodInfo, state: CycleState) -> None:
        """An attempt for ``pod`` (its cycle ``state``) starts: forget the last one's findings."""

    def end(self) -> None:
        """The attempt is over (whatever its outcome)."""

    def annotate(self, pod: PodInfo, record: PreemptionRecord) -> None:
        """Add the variant's notes on ``record``'s candidates (``record.notes``)."""

    def count(self, pod: PodInfo, chosen: Candidate | None) -> None:
        """Count what the attempt for ``pod`` did in the metrics; ``chosen``: the candidate whose
        victims it preempted (None: it preempted nobody)."""

    # -- around DefaultPreemption's --------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        self._accounting.chosen = None
        self.begin(pod, state)
        try:
            result, status = super().post_filter(state, pod, statuses)
            self.count(pod, self._accounting.chosen if status.code == Code.SUCCESS else None)
            return result, status
        finally:
            self._accounting.chosen = None
            self.end()

    def dry_run(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]) -> PreemptionRecord:
        self.begin(pod, state)
        try:
            record = super().dry_run(state, pod, statuses)
            self.annotate(pod, record)
            return record
        finally:
            self.end()
