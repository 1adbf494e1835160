"""A history replayed and set beside what happened: per pod, the recorded node and time to bind
next to the replay's; in all, how often they agree (bound or not, same node, same node pool), how
long pods waited by PriorityClass, and who was preempted or evicted, by class.

The replay is an ordinary simulation of the history's scenario (:func:`kubesched.sim.simulate`),
run to the window's end, with the writes decided at run time (:mod:`.dynamic`). A pod's replayed
outcome is read from the run's events: its ``Created`` event, the first ``Scheduled`` after it, and
``Preempted``/``Evicted``. A recorded pod is paired with the replay's pod of the same name created
at its moment or after (a re-creation waits for the earlier pod to go), or, made by a replayed
controller, with the replay's pod of the same identity (the owner and the creation order,
:mod:`kubesched.sim.identity`), in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.loader import Scenario
from kubesched.k8s.objects import Obj
from kubesched.replay.dynamic import RunTimeSteps, split_recreations
from kubesched.replay.history import SCHEDULER_USER, History, Recorded
from kubesched.replay.timeline import RECREATION
from kubesched.sim import simulate
from kubesched.sim.outcome import SimulationOutcome

API_VERSION = "kubesched.io/v1alpha1"
NO_CLASS = "(none)"


@dataclass
class Replayed:
    """One pod incarnation in the replay."""

    created: float
    pod: str = ""
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
            pods.setdefault(key, []).append(Replayed(e["time"], key))
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


def by_identity(replayed: dict[str, list[Replayed]], identities: dict[str, str]) -> dict[str, list[Replayed]]:
    """The incarnations of a run by the pods' identities (``identities``: pod key -> identity)."""
    out: dict[str, list[Replayed]] = {}
    for key, runs in replayed.items():
        out.setdefault(identities.get(key, key), []).extend(runs)
    for runs in out.values():
        runs.sort(key=lambda r: r.created)
    return out


def _match(recorded: list[Recorded], replayed: dict[str, list[Replayed]],
           identities: dict[str, str]) -> tuple[list[Replayed | None], list[Replayed]]:
    """Each recorded pod's replayed incarnation (a pod of its name: the first not yet taken created
    at its moment or later; a controller's pod: the next of its identity), and the replay's pods
    paired with none."""
    named = by_identity(replayed, identities)
    taken: dict[str, int] = {}
    out: list[Replayed | None] = []
    for rec in recorded:
        ident = rec.identity or rec.pod
        runs = named.get(ident) or []
        start = taken.get(ident, 0)
        index = next((i for i in range(start, len(runs))
                      if rec.identity is not None or runs[i].created >= rec.created - 1e-6), None)
        if index is None:
            out.append(None)
        else:
            taken[ident] = index + 1
            out.append(runs[index])
    paired = {id(r) for r in out if r is not None}
    unpaired = [r for runs in named.values() for r in runs if id(r) not in paired]
    return out, sorted(unpaired, key=lambda r: (r.created, r.pod))


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


def _pod_row(rec: Recorded, run: Replayed | None, rejected: bool, kept: bool) -> dict[str, Any]:
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
        if run.pod != rec.pod:
            replay["pod"] = run.pod
    elif kept:
        replay["keptRunning"] = True
    elif rec.identity is not None:
        replay["notCreated"] = True  # its controller made no such pod in the replay
    elif rejected:
        replay["rejected"] = True
    row = {"pod": rec.pod, "priorityClass": rec.priority_class or NO_CLASS, "created": rec.created,
           "recorded": recorded, "replay": replay}
    if rec.identity is not None:
        row["identity"] = rec.identity
    return row


def comparison(history: History, result: dict[str, Any], pool_labels: Sequence[str],
               kept: set[tuple[str, float]] | frozenset[tuple[str, float]] = frozenset()) -> dict[str, Any]:
    """The comparison document's ``summary``, ``byClass``, ``pods`` and ``replayOnly`` sections.
    ``kept``: the re-creations the replay did not make because the pod still ran."""
    identities = {key: pod.get("identity") or key for key, pod in (result.get("pods") or {}).items()}
    runs, unpaired = _match(history.recorded, replayed_pods(result["events"]), identities)
    rejected = {r.get("name") for r in result.get("rejected") or [] if r.get("kind") == "Pod"}
    rows = [_pod_row(rec, run, run is None and rec.pod in rejected, (rec.pod, rec.created) in kept)
            for rec, run in zip(history.recorded, runs)]
    compared = {r.pod for r in history.recorded}
    # the replay's pods of no recorded one: its controllers' extra replacements (pods the history
    # had before the window or created bound are not compared, and not listed)
    replay_only = [{"pod": r.pod, "identity": identities.get(r.pod, r.pod), "created": r.created, "node": r.node,
                    "bound": r.bound}
                   for r in unpaired if r.pod not in compared and identities.get(r.pod, r.pod) != r.pod]
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
        "replayOnly": len(replay_only),
    }
    return {"summary": summary, "byClass": by_class, "pods": rows, "replayOnly": replay_only}


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
    return replay_run(history, scenario, seed=seed, pool_labels=pool_labels, changes=changes)[0]


def replay_run(history: History, scenario: Scenario | None = None, *, seed: int | None = None,
               pool_labels: Sequence[str] = (), changes: Sequence[str] = (), owned: bool = True,
               decisions: bool | None = None) -> tuple[dict[str, Any], SimulationOutcome]:
    """:func:`replay`, with the simulation's outcome too (a sweep's metrics read it). ``owned``:
    the scenario's objects may be used up by the run (False: they are copied first);
    ``decisions``: the outcome keeps the decisions."""
    scenario = history.scenario if scenario is None else scenario
    scenario, recreations = split_recreations(scenario, RECREATION)
    at_run_time = RunTimeSteps(list(history.identity_steps), recreations)
    outcome = simulate(scenario, seed=seed, owned=owned, decisions=decisions, on_start=at_run_time.attach)
    result = outcome.result
    document: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "ReplayResult", "history": history.report.to_dict(),
        "start": history.start, "until": scenario.until, "seed": result["seed"], "changes": list(changes),
    }
    document.update(comparison(history, result, pool_labels, at_run_time.kept))
    document["run"] = {"summary": result["summary"], "rejected": result["rejected"], "endTime": result["endTime"],
                       "missedWrites": at_run_time.missed}
    return document, outcome
