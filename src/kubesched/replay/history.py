"""What a history reader hands back: the scenario to replay, the recorded outcome of every pod, and
an account of what was read and what was skipped (and why)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.errors import KubeschedError
from kubesched.api.loader import Scenario
from kubesched.k8s.objects import Obj

if TYPE_CHECKING:
    from kubesched.replay.owners import IdentityStep

#: the user kube-scheduler writes as: its pod deletions in an audit log are its preemptions
SCHEDULER_USER = "system:kube-scheduler"
#: how many line numbers (or rows) each kind of skipped input names in the report
EXAMPLES_KEPT = 5


class ReplayError(KubeschedError):
    """A history that cannot be replayed: unreadable, of no known format, or empty in the window."""


@dataclass
class Recorded:
    """One pod as the history shows it (one incarnation: a name created again after its deletion
    is a second one). Times are seconds of the replay's clock (0: the window's start)."""

    pod: str  # namespace/name
    created: float
    priority_class: str | None = None
    #: when and where the real scheduler bound it (node None: the history does not say where)
    bound: float | None = None
    node: str | None = None
    deleted: float | None = None
    #: who deleted it (the audit log's user): the scheduler's own deletions are its preemptions
    deleted_by: str | None = None
    evicted: float | None = None
    #: the phase the history ends it in, when it says (openb's ``pod_phase``)
    phase: str | None = None
    #: the pod's identity (:mod:`kubesched.sim.identity`) when a replayed controller makes it: the
    #: replay's pod of that identity is its counterpart (None: the pod of the same name)
    identity: str | None = None


@dataclass(slots=True)
class Followed:
    """One action of the recorded scheduler that a replay following the recording
    (:mod:`kubesched.replay.follow`) applies as recorded, at ``at`` (seconds of the replay's clock:
    when the API server received the request, the order of the scheduler's decisions): ``bind``
    ``pod`` to ``node``; ``nominate`` it (``node`` None: the nomination cleared); ``preempt`` it (the
    scheduler's deletion, with its ``grace`` period)."""

    at: float
    action: str
    pod: str
    node: str | None = None
    grace: int | None = None


@dataclass
class ReadReport:
    """What a reader read: ``counts`` of what it used and of what it skipped, each skip reason with
    up to :data:`EXAMPLES_KEPT` examples (line numbers, rows), and notes for people."""

    source: str
    format: str
    counts: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    #: mutating requests on resources a replay does not play, by resource
    unknown_resources: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] += 1
        kept = self.examples.setdefault(reason, [])
        if len(kept) < EXAMPLES_KEPT:
            kept.append(where)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "format": self.format, "counts": dict(sorted(self.counts.items())),
                "skipped": dict(sorted(self.skipped.items())),
                "examples": {k: v for k, v in sorted(self.examples.items())},
                "unknownResources": dict(sorted(self.unknown_resources.items())), "notes": list(self.notes)}

    def lines(self) -> list[str]:
        """The report in words, one line per skip reason (what the command writes on stderr)."""
        used = ", ".join(f"{n} {what}" for what, n in sorted(self.counts.items()) if n)
        out = [f"read {self.source} ({self.format}): {used or 'nothing used'}"]
        for reason, n in sorted(self.skipped.items()):
            where = ", ".join(self.examples.get(reason, []))
            out.append(f"skipped {n} {reason}" + (f" (e.g. {where})" if where else ""))
        if self.unknown_resources:
            top = ", ".join(f"{r} {n}" for r, n in self.unknown_resources.most_common(8))
            more = len(self.unknown_resources) - 8
            out.append(f"not replayed: writes to {len(self.unknown_resources)} other resource(s): {top}"
                       + (f" and {more} more" if more > 0 else ""))
        out.extend(f"note: {n}" for n in self.notes)
        return out


@dataclass
class History:
    """A recorded history ready to replay: ``scenario`` (objects at the window's start, steps after
    it, ``until`` the window's end), ``recorded`` (every pod created in the window, plus those
    created before it and not yet bound at its start), ``nodes`` (every node object the history
    shows, for node pools) and the read ``report``. ``start``: the recording's own time of the
    replay's 0 (RFC 3339 for an audit log, seconds for openb)."""

    scenario: Scenario
    recorded: list[Recorded]
    report: ReadReport
    start: str
    nodes: dict[str, Obj] = field(default_factory=dict)
    #: writes to pods the replay's controllers make, told by identity (played at run time)
    identity_steps: list[IdentityStep] = field(default_factory=list)
    #: the recorded scheduler's bindings, nominations and preemptions, in order (for a replay that
    #: follows the recording; empty for a history that has none, as openb's)
    followed: list[Followed] = field(default_factory=list)
    #: each pod's recorded ``status.startTime`` (seconds of the replay's clock), when the history has it
    started: dict[str, float] = field(default_factory=dict)
