"""What the scheduler would decide for a pending pod on the cluster as it is now, without acting,
with every equally good answer: the node(s) of the best score, or, when no node fits, the preemption
candidate(s) its criteria rank first. Built on :func:`~kubesched.analysis.diagnose.diagnose` (the
filters and the preemption dry run, as ``explain`` runs them) and
:func:`~kubesched.analysis.scores.node_scores` (the scores).

kube-scheduler picks at random among nodes of the same best score (``selectHost``) and among
preemption candidates equal on every criterion of ``pickOneNodeForPreemption``; a decision
compared with a recorded one is therefore a set of equally good nodes, not one node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.analysis.diagnose import diagnose
from kubesched.analysis.scores import node_scores
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.scheduler import Scheduler


@dataclass
class WouldDecide:
    """``kind``: ``score`` (some node fits: ``best`` the nodes of the top total, ``scores`` every
    feasible node's total), ``nominated`` (the pod's nominated node fits: a cycle takes it without
    scoring), ``preemption`` (no node fits, preemption would free one: ``best`` the candidates
    equal to the chosen one on every criterion, ``criteria`` each candidate's), or
    ``unschedulable`` (no node fits and preemption finds no candidate: ``message`` says why).
    ``rejected``: why each node that does not fit fails (its first failing filter)."""

    kind: str
    best: list[str] = field(default_factory=list)
    scores: dict[str, int] = field(default_factory=dict)
    criteria: dict[str, list[float]] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    message: str = ""


def _lexicographic_best(keys: dict[str, tuple[float, ...]]) -> list[str]:
    """The candidates best on the first criterion, of those the best on the second, and so on (each
    criterion scores higher as better), as ``pickOneNodeForPreemption`` narrows them."""
    left = list(keys)
    width = len(next(iter(keys.values()))) if keys else 0
    for i in range(width):
        top = max(keys[n][i] for n in left)
        left = [n for n in left if keys[n][i] == top]
    return left


def would_decide(scheduler: Scheduler, namespace: str, name: str) -> WouldDecide:
    """What ``scheduler`` would decide now for the pending pod ``namespace/name`` (see
    :class:`WouldDecide`). Raises KeyError for a pod that is not there."""
    found = diagnose(scheduler, namespace, name, detail=False)
    obj = scheduler.cluster.get("Pod", namespace, name)
    assert obj is not None  # diagnose found it
    pod = PodInfo.from_pod(obj)
    if found.feasible:
        nominated = pod.nominated_node_name
        if nominated and nominated in found.feasible:
            return WouldDecide("nominated", best=[nominated], rejected=found.rejected)
        fwk = scheduler.framework_for(pod)
        assert fwk is not None  # a pod of no profile has no feasible node
        rows = node_scores(scheduler, fwk, obj, found.feasible)
        scores = {r["node"]: r["total"] for r in rows}
        top = max(scores.values())
        return WouldDecide("score", best=[n for n, s in scores.items() if s == top], scores=scores,
                           rejected=found.rejected)
    record = found.preemption_record
    if record is None or record.chosen is None:
        message = (found.preemption or {}).get("message") or found.upstream_message or found.pre_filter
        return WouldDecide("unschedulable", rejected=found.rejected, message=message)
    now = scheduler.clock()
    keys = {c.node: tuple(c.criteria(now)) for c in record.candidates}
    best = _lexicographic_best(keys) if record.criterion != "only candidate" else [record.chosen]
    if record.chosen not in best:  # a policy of its own criteria chose: its choice alone
        best = [record.chosen]
    return WouldDecide("preemption", best=best, criteria={n: list(k) for n, k in keys.items()},
                       rejected=found.rejected)
