"""What the pages show, as documents: the same ones the CLI prints with ``-o json`` where the CLI has
them (a pod's diagnosis is ``kubesched explain -o json``'s, a what-if ``kubesched whatif -o
json``'s), and views of the SimulationResult (the cluster by pool, the timeline) where it has not.

A :class:`UiState` holds one scenario and its simulation, run once when the state is made (with
every attempt recorded, as ``explain`` runs it); a what-if runs two more simulations each time and
changes nothing it holds.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from kubesched.analysis.diagnose import diagnose
from kubesched.analysis.whatif import Changes, whatif
from kubesched.api.loader import Scenario, load_scenario
from kubesched.api.quantity import parse_quantity
from kubesched.cli.explain import missing_pod_text
from kubesched.cli.grouping import POOL_LABELS, pool_by_name, pool_of
from kubesched.sim import SimulationOutcome, simulate
from kubesched.sim.series import pod_counts_over_time

#: the node's label that names its zone
ZONE_LABEL = "topology.kubernetes.io/zone"


def missing_pod_message(result: dict[str, Any], namespace: str, name: str) -> str:
    """What ``kubesched explain NAMESPACE/NAME`` says of a pod it cannot diagnose at the end of the
    run (refused by admission, gone, or in another namespace: then with the ``-n`` to use). The
    words are the CLI's own: explain's function writes them."""
    return missing_pod_text(result, namespace, name, None)


def _share(requested: str, allocatable: str) -> float | None:
    alloc = parse_quantity(allocatable)
    return None if alloc == 0 else float(parse_quantity(requested) / alloc)


@dataclass
class UiState:
    path: str
    scenario: Scenario
    outcome: SimulationOutcome
    #: one simulation at a time: the scheduler's cache is shared by the diagnoses
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, path: str) -> UiState:
        scenario = load_scenario(path)
        outcome = simulate(scenario, explain=True)  # the scenario's objects are copied, not taken
        return cls(path, scenario, outcome)

    @property
    def result(self) -> dict[str, Any]:
        return self.outcome.result

    # -- the cluster --------------------------------------------------------------------------
    def cluster(self) -> dict[str, Any]:
        """The nodes (as the result has them, with their pool, zone, taints and readiness at the end)
        grouped by pool, and the pods pending at the end."""
        cluster = self.outcome.simulation.cluster
        objects = {n["metadata"]["name"]: n for n in cluster.list("Node")}
        pools: dict[str, dict[str, Any]] = {}
        for entry in self.result["nodes"]:
            node = objects.get(entry["node"]) or {"metadata": {}, "spec": {}, "status": {}}
            labels = node["metadata"].get("labels") or {}
            found = pool_of(labels, POOL_LABELS)
            pool = found[1] if found else pool_by_name(entry["node"])
            ready = next((c.get("status") for c in (node.get("status") or {}).get("conditions") or []
                          if c.get("type") == "Ready"), None)
            row = {**entry, "zone": labels.get(ZONE_LABEL, ""),
                   "taints": [f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
                              for t in (node.get("spec") or {}).get("taints") or []],
                   "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
                   "ready": ready != "False",
                   "cpuShare": _share(entry["cpu"]["requested"], entry["cpu"]["allocatable"]),
                   "memoryShare": _share(entry["memory"]["requested"], entry["memory"]["allocatable"]),
                   "podsShare": entry["pods"] / entry["allocatablePods"] if entry.get("allocatablePods") else None}
            group = pools.setdefault(pool, {"pool": pool, "label": found[0] if found else None, "nodes": []})
            group["nodes"].append(row)
        for group in pools.values():
            rows = group["nodes"]
            group["count"] = len(rows)
            for resource in ("cpu", "memory"):
                requested = sum(parse_quantity(r[resource]["requested"]) for r in rows)
                allocatable = sum(parse_quantity(r[resource]["allocatable"]) for r in rows)
                group[f"{resource}Share"] = float(requested / allocatable) if allocatable else None
            group["pods"] = sum(r["pods"] for r in rows)
        pending = sorted(key for key, pod in self.result["pods"].items() if pod["phase"] == "Pending" and not pod["node"])
        return {"scenario": self.result["scenario"], "seed": self.result["seed"], "endTime": self.result["endTime"],
                "summary": self.result["summary"], "pools": sorted(pools.values(), key=lambda g: g["pool"]),
                "pending": pending}

    # -- a pod ----------------------------------------------------------------------------------
    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        """``kubesched explain NAMESPACE/NAME SCENARIO -o json``; KeyError with the CLI's message for
        a pod not there at the end of the run."""
        with self.lock:
            if self.outcome.scheduler.cluster.get("Pod", namespace, name) is None:
                raise KeyError(missing_pod_message(self.result, namespace, name))
            return diagnose(self.outcome.scheduler, namespace, name, run=self.result, end_of_run=True).to_dict()

    # -- the timeline ---------------------------------------------------------------------------
    def timeline(self) -> dict[str, Any]:
        """Pods pending and running over time (those the run created) and every event."""
        series = pod_counts_over_time(self.result["events"])
        return {"endTime": self.result["endTime"], "pending": series["pending"], "running": series["running"],
                "events": self.result["events"]}

    # -- what if --------------------------------------------------------------------------------
    def whatif(self, changes: Changes) -> dict[str, Any]:
        """``kubesched whatif SCENARIO [changes] -o json`` (WhatIfError for changes the cluster
        cannot take: an unknown node, say)."""
        with self.lock:
            diff, _ = whatif(self.scenario, changes)  # keeps the scenario as it is
        return diff

