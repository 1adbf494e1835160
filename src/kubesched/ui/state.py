"""What the pages show, as documents: the same ones the CLI prints with ``-o json`` where the CLI has
them (a pod's diagnosis is ``kubesched explain -o json``'s, a what-if ``kubesched whatif -o
json``'s), and views of the SimulationResult (the cluster by pool, the timeline) where it has not.

A :class:`UiState` holds one scenario and its simulation, run once when the state is made (with
every attempt recorded, as ``explain`` runs it); a what-if runs two more simulations each time and
changes nothing it holds. A pod diagnosed at an earlier moment (``explain --at``) needs a
simulation up to that moment: the last few are kept, as are the last diagnoses (a page of a
1000-node verdict list is a slice of one).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import yaml

from kubesched.analysis.diagnose import diagnose
from kubesched.analysis.whatif.changes import Changes
from kubesched.analysis.whatif.documents import scenario_documents
from kubesched.analysis.whatif.run import whatif
from kubesched.api.loader import Scenario, load_scenario
from kubesched.cli.explain import missing_pod_text
from kubesched.k8s.objects import key_of
from kubesched.report.html import whatif_report
from kubesched.sim import SimulationOutcome, simulate
from kubesched.sim.series import pod_counts_over_time
from kubesched.ui.cluster import ClusterView
from kubesched.ui.edits import object_keys, read_objects, with_objects, without_object
from kubesched.ui.scores import attempt_scores, scores_now, weights_for

#: how many runs to an earlier moment, and how many diagnoses, are kept
MOMENTS_KEPT = 2
DIAGNOSES_KEPT = 16
#: the what-if runs kept for their downloads
WHATIFS_KEPT = 8


def missing_pod_message(result: dict[str, Any], namespace: str, name: str, at: float | None = None) -> str:
    """What ``kubesched explain NAMESPACE/NAME [--at AT]`` says of a pod it cannot diagnose at the
    end of the run or at ``at`` (refused by admission, gone, or in another namespace: then with the
    ``-n`` to use). The words are the CLI's own: explain's function writes them."""
    return missing_pod_text(result, namespace, name, at)


@dataclass
class UiState:
    #: where the cluster came from, as the pages' header says it: a file's path, or the live
    #: cluster's kubeconfig and context (read once, when the state was made)
    source: str
    scenario: Scenario
    outcome: SimulationOutcome
    #: one simulation at a time: the scheduler's cache is shared by the diagnoses
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: the runs up to an earlier moment (``explain --at``), the most recent last
    moments: OrderedDict[float, SimulationOutcome] = field(default_factory=OrderedDict)
    #: the last what-if runs, by their number
    whatifs: OrderedDict[int, WhatIfRun] = field(default_factory=OrderedDict)
    whatif_count: int = 0
    #: the last diagnoses, by (pod key, moment)
    diagnoses: OrderedDict[tuple[str, float | None], dict[str, Any]] = field(default_factory=OrderedDict)
    #: the cluster by pool and zone at the end of the run, made with the run (before any diagnosis)
    view: ClusterView = field(init=False)

    def __post_init__(self) -> None:
        self.view = ClusterView.of(self.outcome)

    @classmethod
    def load(cls, path: str) -> UiState:
        return cls.of(load_scenario(path), path)

    @classmethod
    def of(cls, scenario: Scenario, source: str) -> UiState:
        """The state of a scenario already read (a live cluster's, say) from ``source``."""
        outcome = simulate(scenario, explain=True)  # the scenario's objects are copied, not taken
        return cls(source, scenario, outcome)

    @property
    def result(self) -> dict[str, Any]:
        return self.outcome.result

    # -- the cluster --------------------------------------------------------------------------
    def cluster(self) -> dict[str, Any]:
        """The nodes grouped by pool and zone, summed (not the nodes themselves), and the pods pending
        at the end (:mod:`kubesched.ui.cluster`)."""
        return self.view.summary

    def cluster_nodes(self, *, pool: str | None = None, zone: str | None = None, find: str = "",
                      offset: int = 0, limit: int = 50, sort: str = "name") -> dict[str, Any]:
        """A page of the nodes of a pool and zone, or of those whose name or a label contains ``find``,
        sorted by name or by a share requested (``cpu``, ``memory``, ``pods``: the fullest first)."""
        return self.view.nodes(pool=pool, zone=zone, find=find, offset=offset, limit=limit, sort=sort)

    def node(self, name: str) -> dict[str, Any]:
        """One node, its labels and its pods (KeyError for a node the cluster has not)."""
        return self.view.node(name)

    # -- a pod ----------------------------------------------------------------------------------
    def at(self, moment: float | None) -> SimulationOutcome:
        """The run to the end (None), or up to ``moment`` as ``explain --at`` simulates it."""
        if moment is None:
            return self.outcome
        with self.lock:
            if moment not in self.moments:
                self.moments[moment] = simulate(self.scenario, until=moment, explain=True)
                while len(self.moments) > MOMENTS_KEPT:
                    self.moments.popitem(last=False)
            self.moments.move_to_end(moment)
            return self.moments[moment]

    def pod(self, namespace: str, name: str, at: float | None = None) -> dict[str, Any]:
        """``kubesched explain NAMESPACE/NAME SCENARIO [--at AT] -o json``; KeyError for a pod the run
        does not have at that moment."""
        key = (f"{namespace}/{name}", at)
        with self.lock:
            if key not in self.diagnoses:
                outcome = self.at(at)
                if outcome.scheduler.cluster.get("Pod", namespace, name) is None:
                    raise KeyError(missing_pod_message(outcome.result, namespace, name, at))
                self.diagnoses[key] = diagnose(outcome.scheduler, namespace, name, run=outcome.result,
                                               end_of_run=at is None).to_dict()
                while len(self.diagnoses) > DIAGNOSES_KEPT:
                    self.diagnoses.popitem(last=False)
            self.diagnoses.move_to_end(key)
            return self.diagnoses[key]

    def pod_nodes(self, namespace: str, name: str, *, at: float | None = None, offset: int = 0,
                  limit: int = 100, find: str = "") -> dict[str, Any]:
        """A page of the diagnosis's per-node verdicts (``nodes`` of explain's JSON), those whose name
        contains ``find``."""
        nodes = self.pod(namespace, name, at)["nodes"]
        if find:
            nodes = [v for v in nodes if find in v["node"]]
        return {"total": len(nodes), "offset": offset, "nodes": nodes[offset:offset + limit]}

    def attempts(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """The pod's scheduling attempts in the run (``attempts`` of ``simulate --decisions -o
        json``), numbered from 1, each score as raw (before NormalizeScore), normalised, weight, weighted."""
        key = f"{namespace}/{name}"
        obj = self.outcome.scheduler.cluster.get("Pod", namespace, name)
        weights = weights_for(self.outcome.scheduler, obj) if obj is not None else {}
        return [{**attempt, "number": number, "scores": attempt_scores(attempt, weights)}
                for number, attempt in enumerate((a for a in self.result.get("attempts", ()) if a["pod"] == key), 1)]

    def scores(self, namespace: str, name: str, at: float | None = None) -> dict[str, Any]:
        """Every Score plugin's raw, normalised and weighted score on each node that passes the
        filters for the pod now (at the end of the run, or at ``at``)."""
        diagnosis = self.pod(namespace, name, at)
        feasible = [v["node"] for v in diagnosis["nodes"] if v["fits"]]
        with self.lock:
            outcome = self.at(at)
            return {"pod": diagnosis["pod"], "at": diagnosis["at"],
                    "nodes": scores_now(outcome.scheduler, namespace, name, feasible)}

    # -- the timeline ---------------------------------------------------------------------------
    def timeline(self) -> dict[str, Any]:
        """Pods pending, running and terminating over time (those the run created) and every event."""
        series = pod_counts_over_time(self.result["events"], terminating=True)
        return {"endTime": self.result["endTime"], **series, "events": self.result["events"]}

    # -- editing ------------------------------------------------------------------------------
    def edit(self, text: str) -> dict[str, Any]:
        """Add or replace the objects of ``text`` (YAML or JSON, as ``whatif --apply`` reads a file)
        and simulate again; EditError (the loader's words) or the simulation's error changes nothing."""
        objects, warnings = read_objects(text)
        with self.lock:
            self._rerun(with_objects(self.scenario, objects))
        return {"applied": [f"{o['kind']} {key_of(o)}" for o in objects], "warnings": warnings,
                "summary": self.result["summary"]}

    def delete(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        """Delete one object and simulate again (EditError for an object the scenario has not)."""
        with self.lock:
            self._rerun(without_object(self.scenario, kind, namespace, name))
        return {"deleted": f"{kind} {namespace + '/' if namespace else ''}{name}", "summary": self.result["summary"]}

    def _rerun(self, scenario: Scenario) -> None:
        outcome = simulate(scenario, explain=True)  # raises before anything is replaced
        self.scenario, self.outcome, self.view = scenario, outcome, ClusterView.of(outcome)
        self.moments.clear()
        self.diagnoses.clear()

    def objects(self) -> list[dict[str, Any]]:
        return object_keys(self.scenario)

    def object_yaml(self, kind: str, namespace: str, name: str) -> str:
        """One object of the scenario as YAML, to edit (KeyError if there is none such)."""
        wanted = f"{namespace}/{name}" if namespace else name
        for obj in self.scenario.objects:
            if obj["kind"] == kind and key_of(obj) == wanted:
                return yaml.safe_dump(obj, sort_keys=False)
        raise KeyError(f"no {kind} {wanted} in the scenario")

    def scenario_yaml(self) -> str:
        """The scenario as it is now (after the edits), as ``whatif --save-changed`` writes one."""
        return yaml.safe_dump_all(scenario_documents(self.scenario), sort_keys=False)

    # -- what if --------------------------------------------------------------------------------
    def whatif(self, changes: Changes) -> WhatIfRun:
        """``kubesched whatif SCENARIO [changes] -o json`` (WhatIfError for changes the cluster
        cannot take: an unknown node, say), kept with its changed scenario for the downloads."""
        with self.lock:
            diff, changed = whatif(self.scenario, changes)  # keeps the scenario as it is
            self.whatif_count += 1
            run = WhatIfRun(self.whatif_count, diff, changed)
            self.whatifs[run.id] = run
            while len(self.whatifs) > WHATIFS_KEPT:
                self.whatifs.popitem(last=False)
        return run

    def whatif_run(self, run_id: int) -> WhatIfRun:
        """A what-if run kept (KeyError once it is no longer)."""
        run = self.whatifs.get(run_id)
        if run is None:
            raise KeyError(f"no what-if {run_id} (the last {WHATIFS_KEPT} are kept): run it again")
        return run


@dataclass(frozen=True)
class WhatIfRun:
    id: int
    #: the diff, as ``kubesched whatif -o json`` prints it
    diff: dict[str, Any]
    #: the scenario with the changes, as ``--save-changed`` writes it
    changed: Scenario

    def changed_yaml(self) -> str:
        return yaml.safe_dump_all(scenario_documents(self.changed), sort_keys=False)

    def report(self) -> str:
        return whatif_report(self.diff)
