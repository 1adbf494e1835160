"""What the scheduler keeps of its decisions: one recorder for attempts and preemptions.

A simulation keeps every preemption decision for its report, and every scheduling attempt (its
outcome, message, each node's filter verdict and the best scores) when explanations are asked for
(``explain``, the ui). A long-running scheduler (``kubesched run``) keeps no attempts and only the
latest preemption decisions, for its status page: :class:`Recorder` with a ``limit``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.scheduler.framework.candidates import PreemptionRecord


@dataclass
class AttemptRecord:
    """One scheduling attempt, kept when explanations are requested."""

    time: float
    pod: str
    outcome: str
    node: str | None = None
    message: str = ""
    node_statuses: dict[str, str] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "pod": self.pod,
            "outcome": self.outcome,
            "node": self.node,
            "message": self.message,
            "nodeStatuses": dict(sorted(self.node_statuses.items())),
            "scores": self.scores,
        }


class Recorder:
    """Attempts (only when ``keep_attempts``) and preemption decisions, in the order they were made;
    with a ``limit``, the latest ``limit`` of each at least (trimmed in batches, so that keeping
    one costs nothing on average)."""

    def __init__(self, *, keep_attempts: bool = False, limit: int | None = None) -> None:
        self.keep_attempts = keep_attempts
        self.limit = limit
        #: whether a preemption decision keeps the statuses of the nodes it ruled out (thousands of
        #: nodes per decision without a candidate; only the decisions' report shows them)
        self.keep_rejected = True
        self.attempts: list[AttemptRecord] = []
        self.preemptions: list[PreemptionRecord] = []

    def attempt(self, record: AttemptRecord) -> None:
        if self.keep_attempts:
            self._keep(self.attempts, record)

    def preemption(self, record: PreemptionRecord) -> None:
        self._keep(self.preemptions, record)

    def _keep(self, records: list[Any], record: Any) -> None:
        records.append(record)
        if self.limit is not None and len(records) > 2 * self.limit:
            del records[:-self.limit]
