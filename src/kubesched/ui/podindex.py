"""Every pod of a run, findable: the pods list's rows (filtered, sorted and paged on the server), who
preempted whom, and what the result knows of a pod that is gone at the end of the run.

A :class:`PodIndex` is worked out once from a finished run (``SimulationOutcome``), from the
SimulationResult's ``pods``, ``events``, ``preemptionDecisions`` and ``attempts`` and, for each pod's
owner, the workloads the CLI's tables group by (a ReplicaSet's pods under their Deployment, a Job's
under its CronJob). On a 20 000-pod run that is one pass over the pods and one over the events; a
page of the list is then a filter and a sort of the rows, with no simulation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.analysis.grouping import Workload, cluster_facts

#: how the list may be sorted; a leading ``-`` sorts the other way (``-priority``: highest first)
POD_SORTS = ("name", "priority", "node", "pending", "created")
#: the events that end a pod (it is gone afterwards), as the timeline's counts read them
GONE_REASONS = ("Deleted", "Completed", "Evicted", "Failed")


@dataclass
class PodRow:
    """One pod as the list shows it."""

    key: str
    phase: str
    node: str | None
    priority: int
    priority_class: str
    owner: Workload
    #: when the run created it (None: it was there from the start, as a snapshot's pods are)
    created: float | None
    #: when it was first scheduled (bound), if it was
    scheduled: float | None
    #: when it went, and why (the event that ended it), if it is gone
    gone: float | None
    gone_reason: str | None
    #: how long it waited to be scheduled: until it was, until it went, or until the end of the run
    pending: float
    #: the pod that preempted it, and how many pods it preempted
    preempted_by: str | None = None
    victims: int = 0

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    def to_dict(self) -> dict[str, Any]:
        return {"pod": self.key, "namespace": self.namespace, "phase": self.phase, "node": self.node,
                "priority": self.priority, "priorityClassName": self.priority_class or None,
                "owner": {"kind": self.owner.kind, "name": self.owner.name},
                "created": self.created, "scheduled": self.scheduled, "gone": self.gone,
                "goneReason": self.gone_reason, "pendingSeconds": self.pending,
                "preemptedBy": self.preempted_by, "victims": self.victims}


@dataclass(frozen=True)
class Preemption:
    """One victim of one preemption: ``preemptor`` took ``node`` from ``victim`` at ``time``."""

    time: float
    preemptor: str
    victim: str
    node: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "preemptor": self.preemptor, "victim": self.victim, "node": self.node}


def _preemptions(result: dict[str, Any]) -> list[Preemption]:
    """Each victim of each preemption, in time order: the ``Preempted`` events (which name the
    preemptor), and the victims of the node chosen by a ``preempted`` decision that no event names
    (a run whose events were cut short)."""
    found: dict[tuple[str, str], Preemption] = {}
    for event in result["events"]:
        if event["reason"] == "Preempted" and event.get("preemptor"):
            found.setdefault((event["preemptor"], event["pod"]),
                             Preemption(event["time"], event["preemptor"], event["pod"], event.get("node")))
    for decision in result.get("preemptionDecisions") or ():
        if decision.get("outcome") != "preempted" or not decision.get("chosen"):
            continue
        chosen = next((c for c in decision.get("candidates") or () if c["node"] == decision["chosen"]), None)
        for victim in (chosen or {}).get("victims") or ():
            found.setdefault((decision["pod"], victim["pod"]),
                             Preemption(decision["time"], decision["pod"], victim["pod"], decision["chosen"]))
    return sorted(found.values(), key=lambda p: (p.time, p.preemptor, p.victim))


@dataclass
class PodIndex:
    rows: list[PodRow]
    #: pod -> the indices of its events in the result's ``events``
    events_of: dict[str, list[int]]
    victims_of: dict[str, list[Preemption]] = field(default_factory=dict)
    preempted_by: dict[str, Preemption] = field(default_factory=dict)
    by_key: dict[str, PodRow] = field(init=False)
    _facets: dict[str, list[str]] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.by_key = {row.key: row for row in self.rows}

    @classmethod
    def of(cls, outcome: Any) -> PodIndex:
        """The index of a finished run (a ``SimulationOutcome``)."""
        result = outcome.result
        workloads = cluster_facts(outcome).workloads
        events_of: dict[str, list[int]] = {}
        created: dict[str, float] = {}
        scheduled: dict[str, float] = {}
        gone: dict[str, tuple[float, str]] = {}
        for i, event in enumerate(result["events"]):
            pod, reason = event["pod"], event["reason"]
            events_of.setdefault(pod, []).append(i)
            if reason == "Created":
                created.setdefault(pod, event["time"])
            elif reason == "Scheduled":
                scheduled.setdefault(pod, event["time"])
            elif reason in GONE_REASONS or event.get("phase") == "Failed":
                gone[pod] = (event["time"], reason)
        end = float(result["endTime"])
        rows = []
        for key, pod in result["pods"].items():
            start = created.get(key)
            went = gone.get(key)
            waited_until = scheduled.get(key, went[0] if went else end)
            rows.append(PodRow(key, pod["phase"], pod["node"], pod["priority"], pod.get("priorityClassName") or "",
                               workloads.get(key) or Workload("", key), start, scheduled.get(key),
                               went[0] if went else None, went[1] if went else None,
                               0.0 if start is None else max(0.0, waited_until - start)))
        index = cls(rows, events_of)
        for preemption in _preemptions(result):
            index.victims_of.setdefault(preemption.preemptor, []).append(preemption)
            index.preempted_by.setdefault(preemption.victim, preemption)
        for row in rows:
            if row.key in index.preempted_by:
                row.preempted_by = index.preempted_by[row.key].preemptor
            row.victims = len(index.victims_of.get(row.key, ()))
        return index

    # -- the list ---------------------------------------------------------------------------------
    def facets(self) -> dict[str, list[str]]:
        """The values the list's filters offer: namespaces, phases, priority classes, owners, nodes."""
        if self._facets is None:
            self._facets = self._distinct()
        return self._facets

    def _distinct(self) -> dict[str, list[str]]:
        return {"namespace": sorted({r.namespace for r in self.rows}),
                "phase": sorted({r.phase for r in self.rows}),
                "priorityClass": sorted({r.priority_class for r in self.rows if r.priority_class}),
                "owner": sorted({r.owner.name for r in self.rows}),
                "node": sorted({r.node for r in self.rows if r.node})}

    def select(self, *, namespace: str = "", phase: str = "", node: str = "", priority_class: str = "",
               owner: str = "", q: str = "", sort: str = "name", offset: int = 0,
               limit: int = 100) -> dict[str, Any]:
        """A page of the pods that pass every filter given (each an exact value but ``q``, part of
        the pod's ``namespace/name`` in any case; ``owner``: the workload's ``namespace/name``),
        sorted by ``sort`` (:data:`POD_SORTS`, ``-`` first for the other way; ties by name), with how
        many pass in all. ValueError for a sort it does not know."""
        field_ = sort.removeprefix("-")
        if field_ not in POD_SORTS:
            raise ValueError(f"sort {sort!r}: expected one of {', '.join(POD_SORTS)}, or one of them after '-'")
        wanted = q.strip().lower()
        found = [r for r in self.rows
                 if (not namespace or r.namespace == namespace) and (not phase or r.phase == phase)
                 and (not node or r.node == node) and (not priority_class or r.priority_class == priority_class)
                 and (not owner or r.owner.name == owner) and (not wanted or wanted in r.key.lower())]
        found.sort(key=lambda r: r.key)
        if field_ != "name" or sort.startswith("-"):
            found.sort(key=_sort_key(field_), reverse=sort.startswith("-"))  # stable: ties stay by name
        return {"total": len(found), "offset": offset, "limit": limit, "sort": sort,
                "pods": [r.to_dict() for r in found[offset:offset + limit]]}

    # -- one pod ----------------------------------------------------------------------------------
    def preemptions(self, key: str) -> dict[str, Any]:
        """Whom the pod preempted (each victim, its node and when) and who preempted it."""
        by = self.preempted_by.get(key)
        return {"victims": [p.to_dict() for p in self.victims_of.get(key, ())],
                "preemptedBy": by.to_dict() if by else None}

    def history(self, key: str, result: dict[str, Any]) -> dict[str, Any]:
        """What the run knows of a pod, there or gone at the end: its row, its preemptions, its
        events and its scheduling attempts (KeyError for a pod the run never had)."""
        row = self.by_key.get(key)
        if row is None:
            raise KeyError(f'the run has no pod {key}')
        events = [result["events"][i] for i in self.events_of.get(key, ())]
        attempts = [{k: a[k] for k in ("time", "outcome", "node", "message") if k in a}
                    for a in result.get("attempts") or () if a["pod"] == key]
        return {**row.to_dict(), **self.preemptions(key), "events": events, "attempts": attempts}


def _sort_key(field_: str) -> Any:
    if field_ == "name":
        return lambda r: r.key
    if field_ == "priority":
        return lambda r: r.priority
    if field_ == "node":
        return lambda r: (r.node is None, r.node or "")
    if field_ == "pending":
        return lambda r: r.pending
    return lambda r: -1.0 if r.created is None else r.created

