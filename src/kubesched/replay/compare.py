"""A history replayed and set beside what happened: per pod, the recorded node and time to bind
next to the replay's; in all, how often they agree (bound or not, same node, same node pool), how
long pods waited by PriorityClass, and who was preempted or evicted, by class.

The replay is an ordinary simulation of the history's scenario (:func:`kubesched.sim.simulate`),
run to the window's end. A pod's replayed outcome is read from the run's events: its ``Created``
event (matched to the recorded creation at the same moment: a name created again is another
pod), the first ``Scheduled`` after it, and ``Preempted``/``Evicted``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.loader import Scenario
from kubesched.k8s.objects import Obj
from kubesched.replay.history import SCHEDULER_USER, History, Recorded
from kubesched.sim import simulate

API_VERSION = "kubesched.io/v1alpha1"
NO_CLASS = "(none)"


@dataclass
class Replayed:
    """One pod incarnation in the replay."""

    created: float
    bound: float | None = None
    node: str | None = None
    preempted: float | None = None
    preemptor: str | None = None
    evicted: float | None = None


def replayed_pods(events: Iterable[dict[str, Any]]) -> dict[str, list[Replayed]]:
    """Every pod incarnation of a run, by pod, in order."""
    pods: dict[str, list[Replayed]] = {}
    for e in events:
        reason, key = e["reason"], e.get("pod") or ""
        if reason == "Created":
            pods.setdefault(key, []).append(Replayed(e["time"]))
            continue
        current = pods.get(key)
        if not current:
            continue
        last = current[-1]
        if reason == "Scheduled" and last.bound is None:
            last.bound, last.node = e["time"], e.get("node")
        elif reason == "Preempted" and last.preempted is None:
            last.preempted, last.preemptor = e["time"], e.get("preemptor")
        elif reason == "Evicted" and last.evicted is None:
            last.evicted = e["time"]
    return pods


def _match(recorded: list[Recorded], replayed: dict[str, list[Replayed]]) -> list[Replayed | None]:
    """Each recorded pod's replayed incarnation: the first not yet taken created at its moment."""
    taken: dict[str, int] = {}
    out: list[Replayed | None] = []
    for rec in recorded:
        runs = replayed.get(rec.pod) or []
        start = taken.get(rec.pod, 0)
        index = next((i for i in range(start, len(runs)) if abs(runs[i].created - rec.created) < 1e-6), None)
        if index is None:
            out.append(None)
        else:
            taken[rec.pod] = index + 1
            out.append(runs[index])
    return out


def pool_of(node: Obj | None, labels: Sequence[str]) -> str | None:
    node_labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    return next((str(node_labels[k]) for k in labels if node_labels.get(k)), None)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def waits(values: list[float]) -> dict[str, float | None]:
    """Time to bind: mean, median, 95th percentile (nearest rank) and the longest."""
    if not values:
        return {"mean": None, "p50": None, "p95": None, "max": None}
    return {"mean": round(sum(values) / len(values), 3), "p50": round(_quantile(values, 0.5), 3),
            "p95": round(_quantile(values, 0.95), 3), "max": round(max(values), 3)}


def _rate(agree: int, of: int) -> dict[str, Any]:
    return {"agree": agree, "of": of, "rate": round(agree / of, 4) if of else None}


def _pod_row(rec: Recorded, run: Replayed | None, rejected: bool) -> dict[str, Any]:
    recorded = {"node": rec.node, "bound": rec.bound,
                "waited": None if rec.bound is None else round(rec.bound - rec.created, 6),
                "deleted": rec.deleted, "evicted": rec.evicted,
                "preempted": rec.deleted if rec.deleted_by == SCHEDULER_USER else None}
    if rec.phase:
        recorded["phase"] = rec.phase
    replay: dict[str, Any] = {"node": None, "bound": None, "waited": None, "preempted": None, "evicted": None}
    if run is not None:
        replay = {"node": run.node, "bound": run.bound,
                  "waited": None if run.bound is None else round(run.bound - run.created, 6),
                  "preempted": run.preempted, "evicted": run.evicted}
        if run.preemptor:
            replay["preemptor"] = run.preemptor
    elif rejected:
        replay["rejected"] = True
    return {"pod": rec.pod, "priorityClass": rec.priority_class or NO_CLASS, "created": rec.created,
            "recorded": recorded, "replay": replay}


def comparison(history: History, result: dict[str, Any], pool_labels: Sequence[str]) -> dict[str, Any]:
    """The comparison document's ``summary``, ``byClass`` and ``pods`` sections."""
    runs = _match(history.recorded, replayed_pods(result["events"]))
    rejected = {r.get("name") for r in result.get("rejected") or [] if r.get("kind") == "Pod"}
    rows = [_pod_row(rec, run, run is None and rec.pod in rejected) for rec, run in zip(history.recorded, runs)]
    bound_agree = node_agree = node_of = pool_agree = pool_of_ = 0
    for row in rows:
        rec, rep = row["recorded"], row["replay"]
        bound_agree += (rec["bound"] is None) == (rep["bound"] is None)
        if rec["node"] and rep["node"]:
            node_of += 1
            node_agree += rec["node"] == rep["node"]
            pools = (pool_of(history.nodes.get(rec["node"]), pool_labels),
                     pool_of(history.nodes.get(rep["node"]), pool_labels))
            if None not in pools:
                pool_of_ += 1
                pool_agree += pools[0] == pools[1]
    classes: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        classes.setdefault(row["priorityClass"], []).append(row)
    by_class = [{"priorityClass": name, "pods": len(group),
                 "recorded": _side(group, "recorded"), "replay": _side(group, "replay")}
                for name, group in sorted(classes.items())]
    summary = {
        "pods": len(rows),
        "agreement": {"bound": _rate(bound_agree, len(rows)), "node": _rate(node_agree, node_of),
                      "pool": _rate(pool_agree, pool_of_)},
        "recorded": _side(rows, "recorded"),
        "replay": _side(rows, "replay"),
    }
    return {"summary": summary, "byClass": by_class, "pods": rows}


def _side(rows: list[dict[str, Any]], side: str) -> dict[str, Any]:
    outcomes = [r[side] for r in rows]
    return {"bound": sum(1 for o in outcomes if o["bound"] is not None),
            "notBound": sum(1 for o in outcomes if o["bound"] is None),
            "waited": waits([o["waited"] for o in outcomes if o["waited"] is not None]),
            "preempted": sum(1 for o in outcomes if o.get("preempted") is not None),
            "evicted": sum(1 for o in outcomes if o.get("evicted") is not None)}


def replay(history: History, scenario: Scenario | None = None, *, seed: int | None = None,
           pool_labels: Sequence[str] = (), changes: Sequence[str] = ()) -> dict[str, Any]:
    """Replay ``history`` (its own scenario, or ``scenario``: the same with a what-if's changes)
    and compare: the ReplayResult document (docs/replay.md describes it). ``changes``: the
    changes in words, for the document."""
    scenario = history.scenario if scenario is None else scenario
    outcome = simulate(scenario, seed=seed, owned=True)
    result = outcome.result
    document: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "ReplayResult", "history": history.report.to_dict(),
        "start": history.start, "until": scenario.until, "seed": result["seed"], "changes": list(changes),
    }
    document.update(comparison(history, result, pool_labels))
    document["run"] = {"summary": result["summary"], "rejected": result["rejected"], "endTime": result["endTime"]}
    return document
