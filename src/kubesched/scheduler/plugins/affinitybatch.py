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
compares them (the earlier option on a tie). A node the batch does not answer for under some
option, or where an option evicts nobody, is left to the node-by-node form.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.candidates import Candidate, CriteriaKey, criteria_key, importance_key
from kubesched.scheduler.framework.capabilities import DryRunBatch
from kubesched.scheduler.framework.interface import Status
from kubesched.scheduler.framework.preemption import REJECTED
from kubesched.scheduler.framework.types import NodeInfo, PodInfo


@dataclass(slots=True)
class _Plan:
    """One node's options: its lower-priority pods split by the budgets, the matching ones (most
    important first), the best option so far and whether the batch leaves the node undecided."""

    k: int
    violating: list[PodInfo]
    non_violating: list[PodInfo]
    matching: list[PodInfo]
    best: tuple[CriteriaKey, list[PodInfo], list[str], PodInfo | None] | None = None
    undecided: bool = False
    orders: list[list[PodInfo]] = field(default_factory=list)


def weigh_options(
    pod: PodInfo, nodes: Sequence[NodeInfo], batch: DryRunBatch, budgets: DisruptionBudgets, now: float,
    matches: Callable[[PodInfo], bool],
    plain: Callable[[Sequence[NodeInfo]], list[Candidate | Status | None]],
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
    for k, info in enumerate(nodes):
        potential = sorted((p for p in info.pods if p.priority < priority), key=lambda p: importance_key(p, now))
        matching = [p for p in potential if matches(p)]
        if not matching:
            others.append(k)
            continue
        violating, non_violating = budgets.split(potential)
        plans.append(_Plan(k, violating, non_violating, matching))
    if others:
        for k, plain_answer in zip(others, plain([nodes[k] for k in others])):
            out[k] = plain_answer
    for option in range(1 + max((len(plan.matching) for plan in plans), default=0)):
        active = [plan for plan in plans if not plan.undecided and option <= len(plan.matching)]
        if not active:
            break
        orders = []
        for plan in active:
            kept = plan.matching[option - 1] if option else None
            order = [p for p in plan.violating + plan.non_violating if p is not kept]
            orders.append(order if kept is None else [kept, *order])
        answer = batch.reprieve([nodes[plan.k] for plan in active], orders)
        if answer is None:
            for plan in active:
                plan.undecided = True
            break
        fits, kept_flags, decided = answer
        fits_list, flags = fits.tolist(), kept_flags.tolist()
        start = 0
        for i, (plan, order) in enumerate(zip(active, orders)):
            stays, start = flags[start:start + len(order)], start + len(order)
            if decided is not None and not bool(decided[i]):
                plan.undecided = True
                continue
            kept = plan.matching[option - 1] if option else None
            if not fits_list[i] or (kept is not None and not stays[0]):
                continue  # the option does not let P fit
            removed, stays = (order, stays) if kept is None else (order[1:], stays[1:])
            victims = [p for p, stay in zip(removed, stays) if not stay]
            if not victims:  # P fits without evicting anyone: the node-by-node form says so
                plan.undecided = True
                continue
            violating_uids = {p.uid for p in plan.violating}
            violating_keys = [p.key for p, stay in zip(removed, stays) if not stay and p.uid in violating_uids]
            victims.sort(key=lambda p: importance_key(p, now))  # most important first
            key = criteria_key(victims, len(violating_keys), now)
            if plan.best is None or key > plan.best[0]:
                plan.best = (key, victims, violating_keys, kept)
    for plan in plans:
        info = nodes[plan.k]
        if plan.undecided:
            out[plan.k] = None
        elif plan.best is None:
            out[plan.k] = REJECTED
        else:
            _, victims, violating_keys, kept = plan.best
            out[plan.k] = Candidate(info.name, victims, len(violating_keys), violating_keys)
            weighed[info.name] = (plan.matching, kept)
    return out, weighed
