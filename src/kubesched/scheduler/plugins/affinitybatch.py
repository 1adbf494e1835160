"""AffinityAwarePreemption's options weighed for many nodes at once, by the batched dry run.

On a node where P's required pod affinity terms match some lower-priority pods, the plugin weighs
keeping nothing (DefaultPreemption's answer) or keeping one matching pod X, each in turn. Where the
batched dry run answers for a node (only the arithmetic filter's verdict depends on which victims
are there: InterPodAffinity's verdict provably holds with every one of them gone, as when pods
elsewhere in the zone satisfy P's affinity), an option is one batched reprieve:

- keeping nothing: every lower-priority pod removed and reprieved, the budget-violating ones first,
  each part most important first (DefaultPreemption's order);
- keeping X: the same order with X moved to the front. With every pod removed and X added back
  first, X stays exactly when P fits with X and without the others, which is the option's own
  test; from there the reprieve goes on as the option's does (X present, the others in order).

The options' victims are then compared by the node-choice criteria as the node-by-node form
compares them (the earlier option on a tie), their criteria computed for all nodes of an option
at once; only the winning option's victims are listed. A node the batch does not answer for under some
option, or where an option evicts nobody, is left to the node-by-node form.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import cast

import numpy as np

from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.candidates import (
    Candidate,
    CriteriaKey,
    NodeVictims,
    criteria_rows,
    importance_key,
)
from kubesched.scheduler.framework.capabilities import DryRunBatch
from kubesched.scheduler.framework.interface import Status
from kubesched.scheduler.framework.preemption import REJECTED
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.podgroups import labels_key


class _Pods:
    """The lower-priority pods of the nodes weighed, numbered once: their ranks (priority and
    whole-second start), whether each violates a budget, and their requests by resource names, as
    arrays an option's reprieve order indexes."""

    __slots__ = ("pods", "ranks", "violating", "_requests")

    def __init__(self, pods: list[PodInfo], violating: list[bool], now: float) -> None:
        floor = math.floor
        self.pods = pods
        self.ranks = np.fromiter(chain.from_iterable(
            (p.priority, float(floor(p.start_time)) if p.start_time is not None else now) for p in pods),
            dtype=np.float64, count=2 * len(pods)).reshape(len(pods), 2)
        self.violating = np.array(violating, dtype=bool)
        self._requests: dict[tuple[str, ...], np.ndarray] = {}

    def requests(self, names: tuple[str, ...]) -> np.ndarray:
        """A row per pod, a column per resource of ``names``."""
        found = self._requests.get(names)
        if found is None:
            flat = np.fromiter(chain.from_iterable(tuple(p.requests.get(n, 0) for n in names) for p in self.pods),
                               dtype=np.int64, count=len(self.pods) * len(names))
            found = self._requests[names] = flat.reshape(len(self.pods), len(names))
        return found


@dataclass(slots=True)
class _Plan:
    """One node's options: its lower-priority pods split by the budgets, the matching ones (most
    important first), the best option so far (its criteria, the pods in its reprieve order and
    which stayed, the pod it keeps) and whether the batch leaves the node undecided."""

    k: int
    violating: list[PodInfo]
    non_violating: list[PodInfo]
    matching: list[PodInfo]
    #: the numbers (in :class:`_Pods`) of ``violating + non_violating``, and of ``matching``
    numbers: list[int]
    matching_numbers: list[int]
    best: tuple[CriteriaKey, list[PodInfo], list[bool], PodInfo | None] | None = None
    undecided: bool = False


class _Listed:
    """The victims of the candidates :func:`weigh_options` found, listed when someone looks at them
    (the chosen node, explain): the best option's pods not kept, most important first."""

    __slots__ = ("plans", "now")

    def __init__(self, now: float) -> None:
        self.plans: list[_Plan] = []
        self.now = now

    def listed(self, k: int) -> NodeVictims:
        plan = self.plans[k]
        assert plan.best is not None
        _, order, stays, kept = plan.best
        removed, stays = (order, stays) if kept is None else (order[1:], stays[1:])
        violating_uids = {p.uid for p in plan.violating}
        victims = [p for p, stay in zip(removed, stays) if not stay]
        violating_keys = [p.key for p in victims if p.uid in violating_uids]
        now = self.now
        victims.sort(key=lambda p: importance_key(p, now))  # most important first
        return victims, violating_keys


def _criteria(lengths: np.ndarray, ranks: np.ndarray, violating: np.ndarray,
              victim: np.ndarray) -> list[CriteriaKey | None]:
    """:func:`~kubesched.scheduler.framework.candidates.criteria_rows` as a key per node (None
    where it has no victim)."""
    victims, keys = criteria_rows(lengths, ranks, violating, victim)
    return [None if n == 0 else tuple(row) for n, row in zip(victims.tolist(), keys.tolist())]


def weigh_options(
    pod: PodInfo, nodes: Sequence[NodeInfo], batch: DryRunBatch, budgets: DisruptionBudgets, now: float,
    matches: Callable[[PodInfo], bool],
    plain: Callable[[Sequence[NodeInfo]], Sequence[object]],
) -> tuple[list[Candidate | Status | None], dict[str, tuple[list[PodInfo], PodInfo | None]]]:
    """Per node of ``nodes``: a candidate, a status (:data:`REJECTED`: no option lets P fit) or
    None (ask node by node); and per candidate node, the matching pods weighed and the one kept.
    ``matches``: whether a pod matches all of P's required affinity terms; ``plain``:
    DefaultPreemption's batched answers, for the nodes without a matching lower-priority pod."""
    out: list[Candidate | Status | None] = [None] * len(nodes)
    weighed: dict[str, tuple[list[PodInfo], PodInfo | None]] = {}
    priority = pod.priority
    plans: list[_Plan] = []
    others: list[int] = []
    matched: dict[object, bool] = {}  # per kind of pod (labels_key): whether it matches the terms
    all_pods: list[PodInfo] = []  # the plans' pods, each plan's in its reprieve order
    flags: list[bool] = []  # whether each of them violates a budget
    for k, info in enumerate(nodes):
        potential = sorted((p for p in info.pods if p.priority < priority), key=lambda p: importance_key(p, now))
        matching = []
        for p in potential:
            kind = labels_key(p)
            hit = matched.get(kind)
            if hit is None:
                hit = matched[kind] = matches(p)
            if hit:
                matching.append(p)
        if not matching:
            others.append(k)
            continue
        violating, non_violating = budgets.split(potential)
        first = len(all_pods)
        numbers = list(range(first, first + len(potential)))
        all_pods += violating
        all_pods += non_violating
        flags += [True] * len(violating)
        flags += [False] * len(non_violating)
        at = {id(p): n for p, n in zip(all_pods[first:], numbers)}
        plans.append(_Plan(k, violating, non_violating, matching, numbers, [at[id(p)] for p in matching]))
    if others:
        for k, plain_answer in zip(others, plain([nodes[k] for k in others])):
            out[k] = cast("Candidate | Status | None", plain_answer)
    table = _Pods(all_pods, flags, now)
    for option in range(1 + max((len(plan.matching) for plan in plans), default=0)):
        if not _weigh(option, [plan for plan in plans if not plan.undecided and option <= len(plan.matching)],
                      nodes, batch, table):
            break
    listed = _Listed(now)
    for plan in plans:
        info = nodes[plan.k]
        if plan.undecided:
            out[plan.k] = None
        elif plan.best is None:
            out[plan.k] = REJECTED
        else:
            key, _, _, kept = plan.best
            out[plan.k] = Candidate(info.name, None, -int(key[0]), None, key, listed, len(listed.plans))
            listed.plans.append(plan)
            weighed[info.name] = (plan.matching, kept)
    return out, weighed


def _weigh(option: int, active: list[_Plan], nodes: Sequence[NodeInfo], batch: DryRunBatch, table: _Pods) -> bool:
    """Option ``option`` (0: keep nothing, i: keep the i-th matching pod) on the ``active`` plans'
    nodes by one batched reprieve, each plan's best option updated; False when nothing is left to
    weigh (no plan, or the batch answers for none of the nodes)."""
    if not active:
        return False
    orders: list[list[int]] = []
    for plan in active:
        if option:
            kept = plan.matching_numbers[option - 1]
            orders.append([kept, *(n for n in plan.numbers if n != kept)])
        else:
            orders.append(plan.numbers)
    lengths = np.fromiter((len(order) for order in orders), dtype=np.int64, count=len(orders))
    index = np.fromiter(chain.from_iterable(orders), dtype=np.int64, count=int(lengths.sum()))
    pods = table.pods
    answer = batch.reprieve([nodes[plan.k] for plan in active], [[pods[n] for n in order] for order in orders],
                            lambda names: table.requests(names)[index].T)
    if answer is None:
        for plan in active:
            plan.undecided = True
        return False
    fits, kept_flags, decided = answer
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    keys = _criteria(lengths, table.ranks[index], table.violating[index], ~kept_flags)
    fits_list, decided_list = fits.tolist(), None if decided is None else decided.tolist()
    first_kept = kept_flags[starts].tolist()
    for i, (plan, order) in enumerate(zip(active, orders)):
        if decided_list is not None and not decided_list[i]:
            plan.undecided = True
            continue
        if not fits_list[i] or (option and not first_kept[i]):
            continue  # the option does not let P fit
        key = keys[i]
        if key is None:  # P fits without evicting anyone: the node-by-node form says so
            plan.undecided = True
            continue
        if plan.best is None or key > plan.best[0]:
            stays = kept_flags[starts[i]:starts[i] + lengths[i]].tolist()
            plan.best = (key, [pods[n] for n in order], stays, plan.matching[option - 1] if option else None)
    return True
