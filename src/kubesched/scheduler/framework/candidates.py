"""What a preemption dry run finds and how one candidate is picked: the candidate nodes with their
victims, the criteria of upstream's ``pickOneNodeForPreemption``, and the record of a decision.

A batched dry run (many nodes at once) finds hundreds of candidates whose victims mostly nobody
looks at: only the chosen one's are acted on. Such a :class:`Candidate` carries its criteria,
computed for all nodes together, and lists its victims only when asked.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kubesched.scheduler.framework.types import PodInfo

if TYPE_CHECKING:
    from kubesched.scheduler.framework.interface import Status

CRITERIA = (
    "fewest PDB violations",
    "lowest priority of the most important victim",
    "smallest sum of victim priorities",
    "fewest victims",
    "latest start time of the most important victims",
)
#: upstream sums victims' priorities as int64 after adding MaxInt32 + 1 to each
INT32_OFFSET = 2**31

#: a candidate node's victims (most important first) and the keys of those violating a PDB
NodeVictims = tuple[list[PodInfo], list[str]]
#: a candidate's scores on :data:`CRITERIA`, in order (higher wins)
CriteriaKey = tuple[float, ...]


def start_time(pod: PodInfo, now: float) -> float:
    """Upstream ``util.GetPodStartTime`` as the scheduler sees it: ``status.startTime`` is a
    ``metav1.Time``, which the API carries with whole-second precision (JSON and protobuf), so a
    start at 12.7 s reads as 12 s; a pod that has not started counts as starting now."""
    return float(math.floor(pod.start_time)) if pod.start_time is not None else now


def importance_key(pod: PodInfo, now: float) -> tuple[int, float]:
    """Sort key, most important first (upstream ``util.MoreImportantPod``): higher priority, then
    the earlier (whole-second) start time."""
    started = pod.start_time  # start_time(pod, now), inline: this key sorts every dry run's pods
    return (-pod.priority, float(math.floor(started)) if started is not None else now)


def criteria_key(victims: list[PodInfo], pdb_violations: int, now: float) -> CriteriaKey:
    """A candidate's scores on :data:`CRITERIA` (``victims`` most important first): fewest PDB
    violations; the lowest priority of the first victim; the smallest sum of the victims'
    priorities (each offset as upstream's int64 sum); fewest victims; the latest earliest start
    among the victims of the highest priority."""
    top = victims[0].priority
    total = 0
    for p in victims:
        priority = p.priority
        total += priority
        if priority > top:
            top = priority
    earliest = math.inf
    for p in victims:
        if p.priority == top:
            started = start_time(p, now)
            if started < earliest:
                earliest = started
    return (-pdb_violations, -victims[0].priority, -(total + INT32_OFFSET * len(victims)), -len(victims), earliest)


def criteria_rows(lengths: np.ndarray, ranks: np.ndarray, violating: np.ndarray | None,
                  victim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node of a batched reprieve (its pods' ``lengths``; per pod laid end to end: ``ranks``,
    its priority and whole-second start time, whether it is ``violating`` a budget and a ``victim``),
    the number of its victims and the :func:`~kubesched.scheduler.framework.candidates.criteria_key` of them as a row
    (meaningless where it has none); for all nodes at once. The keys' integers stay below 2**53,
    exact as float64."""
    count = len(lengths)
    priority, started = ranks[:, 0].astype(np.int64), ranks[:, 1]
    owner = np.repeat(np.arange(count, dtype=np.int64), lengths)
    victims = np.bincount(owner[victim], minlength=count)
    priority_sum = np.zeros(count, dtype=np.int64)
    np.add.at(priority_sum, owner[victim], priority[victim])
    top = np.full(count, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(top, owner[victim], priority[victim])
    of_top = victim & (priority == top[owner])
    earliest = np.full(count, np.inf)
    np.minimum.at(earliest, owner[of_top], started[of_top])
    violations = np.zeros(count, dtype=np.int64) if violating is None else \
        np.bincount(owner[victim & violating], minlength=count)
    keys = np.empty((count, 5), dtype=np.float64)
    keys[:, 0] = -violations
    keys[:, 1] = -np.where(victims > 0, top, 0)
    keys[:, 2] = -(priority_sum + INT32_OFFSET * victims)
    keys[:, 3] = -victims
    keys[:, 4] = earliest
    return victims, keys


class VictimSource(Protocol):
    """Where a batched dry run's candidates get their victims from when asked."""

    def listed(self, k: int) -> NodeVictims:
        """The ``k``-th node's victims (most important first) and the keys of the PDB-violating ones."""


class Candidate:
    """A node where preemption would let the pod fit, with the pods it would evict. A batched dry
    run's candidate comes with its :func:`criteria_key` and lists its victims only when asked
    (``source.listed(index)``)."""

    __slots__ = ("node", "pdb_violations", "key", "_victims", "_violating", "_source", "_index")

    def __init__(self, node: str, victims: list[PodInfo] | None, pdb_violations: int,
                 violating: list[str] | None = None, key: CriteriaKey | None = None,
                 source: VictimSource | None = None, index: int = 0) -> None:
        self.node = node
        self.pdb_violations = pdb_violations
        #: the candidate's :func:`criteria_key`, when known already
        self.key = key
        self._victims = victims
        self._violating: list[str] = violating if violating is not None else []
        self._source = source
        self._index = index

    def _list(self) -> None:
        assert self._source is not None
        self._victims, self._violating = self._source.listed(self._index)
        self._source = None

    @property
    def victims(self) -> list[PodInfo]:
        if self._source is not None:
            self._list()
        assert self._victims is not None
        return self._victims

    @property
    def violating(self) -> list[str]:
        """The keys of the victims whose eviction violates a PDB."""
        if self._source is not None:
            self._list()
        return self._violating

    def criteria(self, now: float) -> CriteriaKey:
        if self.key is None:
            self.key = criteria_key(self.victims, self.pdb_violations, now)
        return self.key

    def __repr__(self) -> str:
        return f"Candidate({self.node!r}, {[p.key for p in self.victims]!r}, {self.pdb_violations})"


class BatchAnswers(Sequence[object]):
    """A batched dry run's answers for some nodes as arrays: per node its kind (:data:`FOUND` a
    candidate, :data:`RULED_OUT` rejected with its status not computed, :data:`ASK` to be asked node
    by node, :data:`KNOWN` a status in ``statuses``), and for candidates their :func:`criteria_key`
    rows and PDB violations. Read as a sequence it gives each node's Candidate, Status or None, as a
    policy's list answer does; the evaluator reads the arrays and makes Candidate objects only for
    the candidates it keeps."""

    FOUND, RULED_OUT, ASK, KNOWN = 0, 1, 2, 3
    __slots__ = ("names", "kinds", "keys", "violations", "statuses", "source", "ruled_out")

    def __init__(self, names: list[str], kinds: np.ndarray, keys: np.ndarray, violations: np.ndarray,
                 statuses: dict[int, object], source: VictimSource, ruled_out: object) -> None:
        self.names, self.kinds, self.keys, self.violations = names, kinds, keys, violations
        self.statuses, self.source, self.ruled_out = statuses, source, ruled_out

    def __len__(self) -> int:
        return len(self.names)

    def candidate(self, k: int) -> Candidate:
        key = tuple(self.keys[k].tolist())
        return Candidate(self.names[k], None, int(self.violations[k]), None, key, self.source, k)

    def __getitem__(self, k):  # type: ignore[no-untyped-def, override]
        kind = int(self.kinds[k])
        if kind == self.FOUND:
            return self.candidate(k)
        if kind == self.RULED_OUT:
            return self.ruled_out
        return self.statuses.get(k)

    def __iter__(self) -> Iterator[object]:
        return (self[k] for k in range(len(self.names)))


class Candidates(Sequence[Candidate]):
    """The candidates a dry run keeps, in order: Candidate objects and runs of a
    :class:`BatchAnswers`' candidates (made into objects when looked at), with all their criteria as
    one array (:meth:`keys`) for choosing among them without making the objects."""

    def __init__(self) -> None:
        self._parts: list[Candidate | tuple[BatchAnswers, np.ndarray]] = []
        self._made: list[Candidate] | None = None
        self._count = 0

    def add(self, candidate: Candidate) -> None:
        self._parts.append(candidate)
        self._count += 1
        self._made = None

    def add_run(self, answers: BatchAnswers, positions: np.ndarray) -> None:
        if len(positions):
            self._parts.append((answers, positions))
            self._count += len(positions)
            self._made = None

    def extend(self, other: Candidates) -> None:
        self._parts.extend(other._parts)
        self._count += other._count
        self._made = None

    def __len__(self) -> int:
        return self._count

    def _all(self) -> list[Candidate]:
        if self._made is None:
            made: list[Candidate] = []
            for part in self._parts:
                if isinstance(part, Candidate):
                    made.append(part)
                else:
                    answers, positions = part
                    made.extend(answers.candidate(k) for k in positions.tolist())
            self._parts = list(made)  # keep the objects made: looked at again, they are the same
            self._made = made
        return self._made

    def __getitem__(self, i):  # type: ignore[no-untyped-def, override]
        return self._all()[i]

    def __iter__(self) -> Iterator[Candidate]:
        return iter(self._all())

    def pick(self, i: int) -> Candidate:
        """The ``i``-th candidate, made alone."""
        for part in self._parts:
            size = 1 if isinstance(part, Candidate) else len(part[1])
            if i < size:
                return part if isinstance(part, Candidate) else part[0].candidate(int(part[1][i]))
            i -= size
        raise IndexError(i)

    def keys(self, now: float) -> np.ndarray:
        """Every candidate's :func:`criteria_key`, a row each."""
        rows: list[np.ndarray] = []
        for part in self._parts:
            if isinstance(part, Candidate):
                rows.append(np.asarray([part.criteria(now)], dtype=np.float64))
            else:
                rows.append(part[0].keys[part[1]])
        return np.concatenate(rows) if rows else np.zeros((0, len(CRITERIA)))


def take_run(
    ks: list[int], answers: BatchAnswers, non_violating: Candidates, violating: Candidates, num_candidates: int,
    deferred: list[int], node_statuses: dict[str, Any],
) -> bool:
    """The dry run's loop over a batch's answers (nodes ``ks``) at once: candidates kept until
    there are enough and one violates no PDB; the nodes ruled out before that point deferred,
    the known statuses noted, in the nodes' order. True when enough were found."""
    kinds = answers.kinds
    found = np.flatnonzero(kinds == BatchAnswers.FOUND)
    violates = answers.violations[found] > 0
    total = len(non_violating) + len(violating) + np.arange(1, len(found) + 1)
    clean = len(non_violating) + np.cumsum(~violates)
    stops = np.flatnonzero((clean >= 1) & (total >= num_candidates))
    end = int(found[stops[0]]) + 1 if len(stops) else len(ks)
    if len(stops):
        found, violates = found[:stops[0] + 1], violates[:stops[0] + 1]
    head = kinds[:end]
    deferred.extend(ks[j] for j in np.flatnonzero(head == BatchAnswers.RULED_OUT).tolist())
    for j in np.flatnonzero(head == BatchAnswers.KNOWN).tolist():
        node_statuses[answers.names[j]] = answers.statuses[j]
    non_violating.add_run(answers, found[~violates])
    violating.add_run(answers, found[violates])
    return bool(len(stops))


@dataclass(slots=True)
class Victims:
    """A candidate's victims as the node-picking functions see them (upstream ``extenderv1.Victims``)."""

    pods: list[PodInfo]
    num_pdb_violations: int


@dataclass
class PreemptionRecord:
    """What one PostFilter call considered and decided."""

    time: float
    pod: str
    priority: int
    outcome: str = ""
    message: str = ""
    candidates: Sequence[Candidate] = field(default_factory=list)
    #: the nodes ruled out when no candidate was found, with their statuses (messages made when
    #: asked: :attr:`rejected_nodes`)
    rejected: Mapping[str, Status] = field(default_factory=dict)
    chosen: str | None = None
    criterion: str = ""
    #: per candidate node, what the preemption plugin adds to its account of the candidate
    #: (kubesched's opt-in plugins: why victims on other nodes were named, which pods were kept)
    notes: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def rejected_nodes(self) -> dict[str, str]:
        """Each ruled-out node's status message."""
        return {name: status.message() for name, status in self.rejected.items()}

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
                    # each victim's own node: another than the candidate's for CrossNodePreemption's
                    "victims": [{"pod": v.key, "priority": v.priority, "node": v.node_name or c.node}
                                for v in c.victims],
                    "pdbViolatingVictims": list(c.violating),
                    **self.notes.get(c.node, {}),
                }
                for c in self.candidates
            ],
            "rejectedNodes": dict(sorted(self.rejected_nodes.items())),
            "chosen": self.chosen,
            "criterion": self.criterion,
        }
