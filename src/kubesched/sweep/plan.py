"""Capacity planning: the fewest nodes of a template for which every goal holds in every seed's run.

::

    apiVersion: kubesched.io/v1alpha1
    kind: Plan
    metadata: {name: web-tier}
    spec:
      base: cluster.yaml                 # as a Sweep's base (a recorded history too)
      until: 30m                         # optional
      seeds: {first: 1, count: 5}        # every goal must hold for each
      nodePool: {template: node-a, min: 1, max: 64}   # or {selector: {matchLabels: ...}, min, max}
      goals:
      - pending == 0
      - schedulingLatencyP99 < 60 for class online
      - pdbViolations == 0

A goal is ``METRIC OP NUMBER``, optionally ``for class NAME`` or ``for namespace NAME`` (the
scheduling-latency metrics only); the metrics are a sweep's (docs/sweeps.md), the gang and volume
ones included. ``min`` may be below the pool's size in the base: a count below it leaves out the
pool's last nodes, so a plan also finds how far an over-provisioned pool can shrink. More nodes are
assumed never to make a goal fail that held with fewer (a goal going the other way, such as
``cpuAllocation >= 0.5``, is reported with the answer: :meth:`Goal.against_more_nodes`), so the
answer is found by bisection over
``min..max``: each round simulates every seed at one count (in parallel, as a sweep does), and the
rounds needed are about log2(max - min) + 2. A plan whose base has no steps and no end asks the
static question (do the pods fit at all: ``pending == 0``); one with steps, over time.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.api.loader import Scenario
from kubesched.sweep.metrics import OPTIONAL, SCALARS
from kubesched.sweep.spec import (
    Checker,
    Sweep,
    Variant,
    common_fields,
    is_int,
    pool_source,
    read_document,
    refuse_history_axes,
)

PLAN_KIND = "Plan"
_OPS: dict[str, Callable[[float, float], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}
_GOAL = re.compile(r"^\s*(\w+)\s*(==|!=|<=|>=|<|>)\s*(-?[0-9.]+(?:e-?[0-9]+)?)\s*(?:for\s+(class|namespace)\s+(\S*))?\s*$")
_SCOPED = ("schedulingLatencyP50", "schedulingLatencyP95", "schedulingLatencyP99")
#: the metrics that rise as nodes are added (the others fall or stay)
_RISING = ("scheduled", "nodeHours")
#: the metrics pending pods have no part in: a run failing a goal on them names none
_NOT_OF_PODS = ("nodeHours", "cpuAllocation", "memoryAllocation", "podsAllocation")


@dataclass(frozen=True)
class Goal:
    text: str
    metric: str
    op: str
    bound: float
    scope: str | None = None  # "class" or "namespace"
    scope_name: str = ""

    def value(self, metrics: dict[str, Any]) -> float | None:
        if self.scope is None:  # an optional metric the runs do not have (no PodGroups, say): None
            return metrics.get(self.metric)
        table = metrics["byClass" if self.scope == "class" else "byNamespace"].get(self.scope_name)
        return None if table is None else table[self.metric]  # type: ignore[no-any-return]

    def against_more_nodes(self) -> str | None:
        """Why the goal may hold with fewer nodes and fail with more, against the search's
        assumption (None: it goes with it). Most metrics fall, or stay, as nodes are added
        (pending pods, latencies, preemptions, allocation: the same requests over more room);
        ``scheduled`` and ``nodeHours`` rise."""
        rising = self.metric in _RISING
        if rising and self.op in (">", ">="):
            return None
        if not rising and (self.op in ("<", "<=") or (self.op == "==" and self.bound <= 0)):
            return None
        way = "rises" if rising else "falls"
        return (f"the search assumes that a goal holding with some nodes holds with more, but {self.text!r} can go "
                f"the other way ({self.metric} {way} as nodes are added): it may hold with fewer nodes than the "
                "answer, or only with fewer than the range's max")

    def holds(self, metrics: dict[str, Any]) -> bool:
        """Whether the goal holds for one run; a metric with no value (no pod of the class was
        scheduled, say) holds a bound from above and fails one from below."""
        value = self.value(metrics)
        if value is None:
            return self.op in ("<", "<=", "!=")
        return _OPS[self.op](value, self.bound)


@dataclass
class Plan:
    sweep: Sweep  # the base, seeds and template; its pool counts are set round by round
    low: int
    high: int
    goals: list[Goal] = field(default_factory=list)


def parse_goal(text: str) -> Goal | str:
    """The goal, or what is wrong with it."""
    match = _GOAL.match(text) if isinstance(text, str) else None
    if match is None:
        return "a goal is METRIC OP NUMBER [for class|namespace NAME], e.g. 'pending == 0'"
    metric, op, bound, scope, name = match.groups()
    if metric not in SCALARS + OPTIONAL:
        return f"unknown metric {metric!r} (metrics: {', '.join(SCALARS + OPTIONAL)})"
    if scope is not None and metric not in _SCOPED:
        return f"only {', '.join(_SCOPED)} are measured per class and namespace"
    if scope is not None and not name:
        return f"the goal {text.strip()!r} names no {scope}"
    try:
        number = float(bound)
    except ValueError:
        return f"the goal {text.strip()!r}: {bound!r} is not a number"
    return Goal(text.strip(), metric, op, number, scope, name or "")


def load_plan(path: str | Path, base_given: bool = False) -> Plan:
    """Read and check the plan file at ``path`` (``base_given``: as for :func:`load_sweep`)."""
    doc = read_document(path, PLAN_KIND)
    spec = doc["spec"]
    check = Checker(str(path), PLAN_KIND)
    for key in spec:
        if key not in ("base", "until", "seeds", "nodePool", "goals"):
            check.error(f"spec.{key}", "unknown field (fields: base, until, seeds, nodePool, goals)")
    sweep = common_fields(doc, Path(path), check, base_given)
    refuse_history_axes(sweep, spec, check)
    pool = spec.get("nodePool")
    low = high = 0
    if not isinstance(pool, dict) or set(pool) - {"template", "selector"} != {"min", "max"} \
            or not is_int(pool["min"]) or not is_int(pool["max"]) or not 1 <= pool["min"] <= pool["max"]:
        check.error("spec.nodePool", "{template: NODE, min: N, max: M} or {selector: {matchLabels: ...}, min: N, "
                                     "max: M} with 1 <= N <= M: the node, or the nodes, of the pool and the range "
                                     "of pool sizes to search")
    elif pool_source(pool, sweep, check):
        low, high = pool["min"], pool["max"]
    goals: list[Goal] = []
    raw_goals = spec.get("goals")
    if not isinstance(raw_goals, list) or not raw_goals:
        check.error("spec.goals", "a list of goals, e.g. ['pending == 0']")
    else:
        for i, text in enumerate(raw_goals):
            goal = parse_goal(text)
            if isinstance(goal, str):
                check.error(f"spec.goals[{i}]", goal)
            else:
                goals.append(goal)
    check.raise_any()
    return Plan(sweep, low, high, goals)


def check_goals_against_base(plan: Plan, base: Scenario, file: str) -> None:
    """A goal ``for class NAME`` or ``for namespace NAME`` must name a PriorityClass or a namespace
    of the base (its objects, or those its steps create): one that is not there (a typo) would have
    no pods, so its latency would have no value and the goal would hold whatever happens. Raises a
    ManifestError naming the goal and the known names."""
    check = Checker(file, PLAN_KIND)
    objects = [*base.objects, *(s.obj for s in base.steps if s.obj is not None)]
    known = {
        "class": sorted({o["metadata"]["name"] for o in objects if o.get("kind") == "PriorityClass"}),
        "namespace": sorted({o["metadata"]["name"] for o in objects if o.get("kind") == "Namespace"}
                            | {o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")}),
    }
    for i, goal in enumerate(plan.goals):
        if goal.scope is not None and goal.scope_name not in known[goal.scope]:
            names = ", ".join(known[goal.scope]) or "none"
            kind = "PriorityClass" if goal.scope == "class" else "namespace"
            check.error(f"spec.goals[{i}]", f"the goal {goal.text!r} names {kind} {goal.scope_name!r}, which the base "
                                            f"does not have ({kind} names: {names})")
    check.raise_any()


@dataclass
class Round:
    """One count tried: whether every goal held in every run, and the runs that failed one."""

    count: int
    holds: bool
    failures: list[dict[str, Any]]  # {variant, goal, value}
    records: list[dict[str, Any]]


RunCount = Callable[[list[Variant]], list[dict[str, Any]]]


def judge(plan: Plan, count: int, records: list[dict[str, Any]]) -> Round:
    failures = []
    for record in records:
        if record["error"] is not None:
            failures.append({"variant": record["id"], "goal": None, "value": record["error"]})
            continue
        for goal in plan.goals:
            if not goal.holds(record["metrics"]):
                failure = {"variant": record["id"], "goal": goal.text, "value": goal.value(record["metrics"])}
                if record.get("pendingPods") and goal.metric not in _NOT_OF_PODS:
                    failure["pendingPods"] = record["pendingPods"]  # what decides it: the pods left, and why
                failures.append(failure)
    return Round(count, not failures, failures, records)


def search(plan: Plan, base_seed: int, run: RunCount, on_round: Callable[[Round], None] | None = None
           ) -> tuple[int | None, list[Round]]:
    """The smallest count in ``min..max`` where the goals hold (None: not even at ``max``), and the
    rounds tried in order. ``run(variants)`` gives their records."""
    seeds = plan.sweep.seeds or [base_seed]
    rounds: list[Round] = []

    def attempt(count: int) -> Round:
        outcome = judge(plan, count, run([Variant(seed, pool_count=count) for seed in seeds]))
        rounds.append(outcome)
        if on_round is not None:
            on_round(outcome)
        return outcome

    if not attempt(plan.high).holds:
        return None, rounds
    if plan.low == plan.high or attempt(plan.low).holds:
        return plan.low, rounds
    failing, holding = plan.low, plan.high  # the goals fail at `failing` and hold at `holding`
    while holding - failing > 1:
        middle = (failing + holding) // 2
        if attempt(middle).holds:
            holding = middle
        else:
            failing = middle
    return holding, rounds
