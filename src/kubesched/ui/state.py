"""What the pages show, as documents: the same ones the CLI prints with ``-o json`` where the CLI has
them (a pod's diagnosis is ``kubesched explain -o json``'s, a what-if ``kubesched whatif -o
json``'s), and views of the SimulationResult (the cluster by pool, the timeline) where it has not.

A :class:`UiState` holds one :class:`Snapshot`: a scenario and its simulation, run once when the
state is made (with every attempt recorded, as ``explain`` runs it). Whatever needs another
simulation is a job (:mod:`kubesched.ui.jobs`) and no page waits for one: a what-if simulates its
changed side (the snapshot's run is its baseline) and changes nothing the state holds; an edit
simulates the edited scenario and swaps the new snapshot in when it is done; a pod diagnosed at an
earlier moment (``explain --at``) needs a run up to that moment, whose diagnosis is kept in the
snapshot. The last diagnoses are kept too (a page of a 1000-node verdict list is a slice of one).

Each snapshot has a version (1 as loaded, one more with each edit swapped in). An edit names the
version it was made on: one made on an earlier version than the snapshot now is refused at once
(:class:`~kubesched.ui.edits.StaleVersion`, HTTP 409) and starts no job; an edit whose job finds
another edit swapped in while it ran fails, and changes nothing.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import yaml

from kubesched.analysis.diagnose import diagnose, missing_pod_text
from kubesched.analysis.whatif.apply import check_changes
from kubesched.analysis.whatif.changes import Changes
from kubesched.analysis.whatif.documents import scenario_documents
from kubesched.analysis.whatif.run import decided_run
from kubesched.api.errors import KubeschedError
from kubesched.api.loader import Scenario, load_scenario
from kubesched.des.heap import collector_paused
from kubesched.k8s.objects import key_of
from kubesched.report.html import whatif_report
from kubesched.sim import Simulation, SimulationOutcome, simulate
from kubesched.ui.cluster import ClusterView
from kubesched.ui.config import configured
from kubesched.ui.edits import (
    EditError,
    StaleVersion,
    object_keys,
    read_objects,
    with_objects,
    without_object,
)
from kubesched.ui.jobs import CANCELLED, FAILED, Job, Jobs
from kubesched.ui.podindex import PodIndex
from kubesched.ui.podlinks import PodIds, pod_url
from kubesched.ui.runner import Packed, changed_scenario, run_edit, run_moment, run_whatif
from kubesched.ui.runtimeline import RunTimeline, moment_text
from kubesched.ui.scores import attempt_scores, scores_now, weights_for

#: the pods diagnosed at an earlier moment kept per run, and the diagnoses at its end
MOMENTS_KEPT = 32
DIAGNOSES_KEPT = 16
#: the what-if runs kept for their downloads
WHATIFS_KEPT = 8


class MomentError(KubeschedError):
    """A moment to diagnose at (``?at=``) that the run does not have."""


class Running(Exception):  # noqa: N818 - not an error: the answer is on its way
    """The answer needs a simulation: ``job`` runs it (its page says when the answer is there)."""

    def __init__(self, job: Job) -> None:
        super().__init__(f"job {job.id}: {job.title}")
        self.job = job


def missing_pod_message(result: dict[str, Any], namespace: str, name: str, at: float | None = None) -> str:
    """What ``kubesched explain NAMESPACE/NAME [--at AT]`` says of a pod it cannot diagnose at the
    end of the run or at ``at`` (refused by admission, gone, or in another namespace: then with the
    ``-n`` to use). The words are the CLI's own: explain's function writes them."""
    return missing_pod_text(result, namespace, name, at)


@dataclass(eq=False)
class Snapshot:
    """One scenario and its run, as the pages read them. A snapshot's scenario and run never change:
    an edit makes a new snapshot, swapped in whole when its run is done, so a page that took one
    reads it to its end without a lock. What is worked out of it on request is kept in it (its
    diagnoses, the pods diagnosed at an earlier moment) and goes with it."""

    scenario: Scenario
    outcome: SimulationOutcome
    #: the cluster by pool and zone at the end of the run, made with the run (before any diagnosis)
    view: ClusterView
    #: every pod of the run (the pods list, who preempted whom, the pods gone at the end) and the
    #: run's timeline (its events, counts over time and chart): made with the run too, so that the
    #: pages reading them never wait and never read another run's
    pods: PodIndex
    timeline: RunTimeline
    #: every pod's identity and the pod of each identity, and the earlier versions' pod names: what
    #: a pod link that carries an identity, or names a pod of an earlier version, finds
    ids: PodIds
    #: the scenario's version: 1 as loaded, one more with each edit (an edit made on an earlier one
    #: is refused: :class:`~kubesched.ui.edits.StaleVersion`)
    version: int = 1
    #: a diagnosis reads (and warms) the scheduler's cache: one at a time. Held for a diagnosis
    #: (a fraction of a second), never for a simulation
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: the last diagnoses at the end of the run, by pod key
    diagnoses: OrderedDict[str, dict[str, Any]] = field(default_factory=OrderedDict)
    #: pods diagnosed at an earlier moment, by (pod key, moment): explain's document and the scores
    #: then, or explain's words for a pod the run has not then; and the jobs working them out
    moments: OrderedDict[tuple[str, float], dict[str, Any]] = field(default_factory=OrderedDict)
    moment_jobs: dict[tuple[str, float], Job] = field(default_factory=dict)
    #: what the jobs' workers are handed (the scenario, the run as a what-if's baseline), pickled
    #: the first time a job needs them, and the scenario's objects as the edit page lists them
    _packed: dict[str, Packed[Any]] = field(default_factory=dict, repr=False)
    _objects: list[dict[str, Any]] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, scenario: Scenario, outcome: SimulationOutcome, version: int = 1,
           before: Snapshot | None = None) -> Snapshot:
        """The snapshot of a finished run with every view of it worked out (on a big cluster the
        objects they add wake the garbage collector over the whole run's heap: seconds a user would
        otherwise wait for the first page that asks); ``before``: the version it follows, whose pod
        names its links still find."""
        pods = PodIndex.of(outcome)
        pods.facets()
        ids = PodIds.of_result(outcome.result, version, before.ids if before is not None else None)
        return cls(scenario, outcome, ClusterView.of(outcome), pods, RunTimeline.of(outcome.result), ids, version)

    @property
    def result(self) -> dict[str, Any]:
        return self.outcome.result

    def packed(self, what: str) -> Packed[Any]:
        """``scenario`` or ``baseline`` (the run as ``whatif`` compares it), pickled once for every job."""
        with self.lock:
            if what not in self._packed:
                if what == "scenario":
                    self._packed[what] = Packed.of(self.scenario)
                else:
                    history = self.outcome.simulation.history
                    self._packed[what] = Packed.of(decided_run(self.result, history.owners, history.labels))
            return self._packed[what]

    def objects(self) -> list[dict[str, Any]]:
        """The scenario's objects' kind, namespace and name (the edit page's list), listed once."""
        if self._objects is None:
            self._objects = object_keys(self.scenario)
        return self._objects


@dataclass
class UiState:
    #: where the cluster came from, as the pages' header says it: a file's path, or the live
    #: cluster's kubeconfig and context (read once, when the state was made)
    source: str
    #: the scenario and its run now: replaced whole (one assignment) when an edit's run is done
    snapshot: Snapshot
    #: the simulations running off the request path
    jobs: Jobs = field(default_factory=Jobs)
    #: the last what-if runs, by their number
    whatifs: OrderedDict[int, WhatIfRun] = field(default_factory=OrderedDict)
    whatif_count: int = 0
    #: guards the registries above (what-ifs kept, moment jobs started): held for a lookup only
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, path: str, jobs: Jobs | None = None) -> UiState:
        return cls.of(load_scenario(path), path, jobs)

    @classmethod
    def of(cls, scenario: Scenario, source: str, jobs: Jobs | None = None) -> UiState:
        """The state of a scenario already read (a live cluster's, say) from ``source``."""
        # The run and its views live as long as the server: built with the cyclic collector paused and
        # then kept out of its passes (each pass would walk millions of objects that are no garbage,
        # a second and more at 20 000 pods: while building them, and on whichever page's request
        # sets one off afterwards)
        with collector_paused():
            outcome = simulate(scenario, explain=True)  # the scenario's objects are copied, not taken
            snapshot = Snapshot.of(scenario, outcome)
        return cls(source, snapshot, jobs or Jobs())

    @property
    def scenario(self) -> Scenario:
        return self.snapshot.scenario

    @property
    def outcome(self) -> SimulationOutcome:
        return self.snapshot.outcome

    @property
    def result(self) -> dict[str, Any]:
        return self.snapshot.result

    @property
    def view(self) -> ClusterView:
        return self.snapshot.view

    @property
    def version(self) -> int:
        """The version of the scenario the pages show now."""
        return self.snapshot.version

    # -- the cluster --------------------------------------------------------------------------
    def cluster(self) -> dict[str, Any]:
        """The nodes grouped by pool and zone, summed (not the nodes themselves), and the pods pending
        at the end (:mod:`kubesched.ui.cluster`)."""
        return self.snapshot.view.summary

    def cluster_nodes(self, *, pool: str | None = None, zone: str | None = None, find: str = "",
                      offset: int = 0, limit: int = 50, sort: str = "name") -> dict[str, Any]:
        """A page of the nodes of a pool and zone, or of those whose name or a label contains ``find``,
        sorted by name or by a share requested (``cpu``, ``memory``, ``pods``: the fullest first)."""
        return self.snapshot.view.nodes(pool=pool, zone=zone, find=find, offset=offset, limit=limit, sort=sort)

    def node(self, name: str) -> dict[str, Any]:
        """One node, its labels and its pods (KeyError for a node the cluster has not)."""
        return self.snapshot.view.node(name)

    # -- a pod ----------------------------------------------------------------------------------
    def check_moment(self, at: float, snapshot: Snapshot | None = None) -> None:
        """MomentError for a moment the run does not have: negative, not a number, infinite, or
        after the run's end (a run to a later moment would go on past what the scenario simulates)."""
        end = (snapshot or self.snapshot).result["endTime"]
        if not math.isfinite(at) or at < 0 or at > end:
            raise MomentError(f"at={at:g}: not a moment of the run, which ends at t={end:g}s "
                              f"(give 0 <= at <= {end:g}; leave it out for the end of the run)")

    def pod(self, namespace: str, name: str, at: float | None = None, *,
            snap: Snapshot | None = None) -> dict[str, Any]:
        """``kubesched explain NAMESPACE/NAME SCENARIO [--at AT] -o json``; KeyError for a pod the run
        does not have at that moment, MomentError for a moment it has not, Running while the run to
        that moment is simulated (by the job it names). ``snap``: the snapshot a page read (default:
        the one now), so that a page made of several answers has them all of one run."""
        if at is not None:
            return self._moment(namespace, name, at, snap)["diagnosis"]
        snap, key = snap or self.snapshot, f"{namespace}/{name}"
        with snap.lock:
            if key not in snap.diagnoses:
                outcome = snap.outcome
                if outcome.scheduler.cluster.get("Pod", namespace, name) is None:
                    raise KeyError(missing_pod_message(outcome.result, namespace, name))
                snap.diagnoses[key] = diagnose(outcome.scheduler, namespace, name, run=outcome.result).to_dict()
                while len(snap.diagnoses) > DIAGNOSES_KEPT:
                    snap.diagnoses.popitem(last=False)
            snap.diagnoses.move_to_end(key)
            return snap.diagnoses[key]

    def _moment(self, namespace: str, name: str, at: float, snap: Snapshot | None = None) -> dict[str, Any]:
        """The pod at ``at`` (its diagnosis and scores), worked out by a job the first time."""
        snap = snap or self.snapshot
        self.check_moment(at, snap)
        key = (f"{namespace}/{name}", float(at))
        with self._lock:
            found = snap.moments.get(key)
            if found is None:
                job = snap.moment_jobs.get(key)
                if job is None or job.state in (FAILED, CANCELLED):
                    job = self._start_moment(snap, key, namespace, name)
                raise Running(job)
            snap.moments.move_to_end(key)
        if "missing" in found:
            raise KeyError(found["missing"])
        return found

    def _start_moment(self, snap: Snapshot, key: tuple[str, float], namespace: str, name: str) -> Job:
        at = key[1]

        def keep(_job: Job, answer: dict[str, Any]) -> tuple[str, str]:
            with self._lock:
                snap.moments[key] = answer
                while len(snap.moments) > MOMENTS_KEPT:
                    snap.moments.popitem(last=False)
            query = urlencode({"at": moment_text(at)})
            return (pod_url(key[0], snap.ids.identity(key[0]), at=moment_text(at)),
                    f"/api/pods/{quote(namespace)}/{quote(name)}?{query}")

        job = self.jobs.submit("moment", f"diagnose {key[0]} at t={at:g}s", run_moment,
                               lambda: (snap.packed("scenario"), at, namespace, name), keep, end=at)
        snap.moment_jobs[key] = job
        return job

    def pod_nodes(self, namespace: str, name: str, *, at: float | None = None, offset: int = 0,
                  limit: int = 100, find: str = "", snap: Snapshot | None = None) -> dict[str, Any]:
        """A page of the diagnosis's per-node verdicts (``nodes`` of explain's JSON), those whose name
        contains ``find``."""
        nodes = self.pod(namespace, name, at, snap=snap)["nodes"]
        if find:
            nodes = [v for v in nodes if find in v["node"]]
        return {"total": len(nodes), "offset": offset, "nodes": nodes[offset:offset + limit]}

    def attempts(self, namespace: str, name: str, *, snap: Snapshot | None = None) -> list[dict[str, Any]]:
        """The pod's scheduling attempts in the run (``attempts`` of ``simulate --decisions -o
        json``), numbered from 1, each score as raw (before NormalizeScore), normalised, weight, weighted."""
        snap, key = snap or self.snapshot, f"{namespace}/{name}"
        obj = snap.outcome.scheduler.cluster.get("Pod", namespace, name)
        with snap.lock:
            weights = weights_for(snap.outcome.scheduler, obj) if obj is not None else {}
        return [{**attempt, "number": number, "scores": attempt_scores(attempt, weights)}
                for number, attempt in enumerate((a for a in snap.result.get("attempts", ()) if a["pod"] == key), 1)]

    def scores(self, namespace: str, name: str, at: float | None = None, *,
               snap: Snapshot | None = None) -> dict[str, Any]:
        """Every Score plugin's raw, normalised and weighted score on each node that passes the
        filters for the pod now (at the end of the run, or at ``at``)."""
        if at is not None:
            found = self._moment(namespace, name, at, snap)
            return {"pod": found["diagnosis"]["pod"], "at": found["diagnosis"]["at"], "nodes": found["scores"]}
        snap = snap or self.snapshot
        diagnosis = self.pod(namespace, name, snap=snap)
        feasible = [v["node"] for v in diagnosis["nodes"] if v["fits"]]
        with snap.lock:
            return {"pod": diagnosis["pod"], "at": diagnosis["at"],
                    "nodes": scores_now(snap.outcome.scheduler, namespace, name, feasible)}

    # -- the timeline ---------------------------------------------------------------------------
    def timeline(self) -> dict[str, Any]:
        """Pods pending, running and terminating over time (those the run created) and every event."""
        snap = self.snapshot
        return {"endTime": snap.result["endTime"], **snap.timeline.series, "events": snap.result["events"]}

    # -- editing ------------------------------------------------------------------------------
    def edit(self, text: str, based_on: int | None = None) -> Job:
        """Add or replace the objects of ``text`` (YAML or JSON, as ``whatif --apply`` reads a file):
        EditError (the loader's words) or StaleVersion (``based_on`` is not the version now) at once,
        else the job simulating the scenario again, which swaps the new run in when it is done (a
        failed or cancelled one changes nothing)."""
        objects, warnings = read_objects(text)
        snap = self.snapshot
        _check(snap, based_on)
        applied = ", ".join(f"{o['kind']} {key_of(o)}" for o in objects)
        return self._rerun(snap, with_objects(snap.scenario, objects), "edit", f"apply {applied}",
                           [f"applied {applied}", *warnings])

    def delete(self, kind: str, namespace: str, name: str, based_on: int | None = None) -> Job:
        """Delete one object (StaleVersion at once when ``based_on`` is not the version now, EditError
        for an object the scenario has not), then the job simulating the scenario again."""
        snap = self.snapshot
        _check(snap, based_on)
        scenario = without_object(snap.scenario, kind, namespace, name)
        what = f"{kind} {namespace + '/' if namespace else ''}{name}"
        return self._rerun(snap, scenario, "delete", f"delete {what}", [f"deleted {what}"])

    def configure(self, text: str, based_on: int | None = None) -> Job:
        """Run the scenario under the KubeSchedulerConfiguration ``text`` (read and checked as
        ``--scheduler-config`` reads a file: EditError at once) in place of its own: an edit, with its
        version check and its job (:mod:`kubesched.ui.config`)."""
        snap = self.snapshot
        scenario = configured(snap.scenario, text)
        _check(snap, based_on)
        return self._rerun(snap, scenario, "config", "apply a scheduler configuration",
                           ["applied the scheduler configuration"], page="/config")

    def _rerun(self, base: Snapshot, scenario: Scenario, kind: str, title: str, notes: list[str],
               page: str = "/edit") -> Job:
        def swap(job: Job, outcome: SimulationOutcome) -> tuple[str, str]:
            new = Snapshot.of(scenario, outcome, base.version + 1, base)  # the views worked out before anyone reads them
            with self._lock:
                now = self.snapshot
                if now is not base:
                    raise EditError(f"the scenario was changed by another edit while this one ran (it is at version "
                                    f"{now.version} now, and this edit was made on version {base.version}); "
                                    "nothing was changed: apply it again")
                self.snapshot = new
            job.version = new.version
            return f"{page}?job={job.id}", "/api/result"

        return self.jobs.submit(kind, title, run_edit, (scenario,), swap, end=scenario.until or base.result["endTime"],
                                estimated=scenario.until is None, here=True, notes=notes, based_on=base.version)

    def objects(self) -> list[dict[str, Any]]:
        return self.snapshot.objects()

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
    def whatif(self, changes: Changes, asked: Any = None, warnings: list[str] | None = None) -> Job:
        """The job running ``kubesched whatif SCENARIO [changes] -o json`` on the run the pages show
        (its baseline: only the changed side is simulated); WhatIfError at once for changes the
        cluster cannot take (an unknown node, say). When done, the run is kept with its changed
        scenario for the downloads (``asked``: the form's request, to show it again; ``warnings``:
        what reading its texts warned of, shown with the answer)."""
        snap = self.snapshot
        check_changes(snap.scenario, changes)
        if changes.scheduler_configuration is not None:  # its errors at once, as the CLI's run says them
            Simulation(dataclasses.replace(snap.scenario, objects=[], steps=[], sources=[],
                                           scheduler_configuration=changes.scheduler_configuration,
                                           scheduler_configuration_source=changes.scheduler_configuration_source))

        def keep(_job: Job, diff: dict[str, Any]) -> tuple[str, str]:
            with self._lock:
                self.whatif_count += 1
                run = WhatIfRun(self.whatif_count, diff, weakref.ref(snap), changes, asked, list(warnings or ()))
                self.whatifs[run.id] = run
                while len(self.whatifs) > WHATIFS_KEPT:
                    self.whatifs.popitem(last=False)
            return f"/whatif?run={run.id}", f"/api/whatif/{run.id}"

        return self.jobs.submit("whatif", "what-if: " + describe(changes), run_whatif,
                                lambda: (snap.packed("scenario"), changes, snap.packed("baseline")), keep, end=snap.result["endTime"],
                                estimated=snap.scenario.until is None, notes=warnings)

    def whatif_run(self, run_id: int) -> WhatIfRun:
        """A what-if run kept (KeyError once it is no longer)."""
        run = self.whatifs.get(run_id)
        if run is None:
            raise KeyError(f"no what-if {run_id} (the last {WHATIFS_KEPT} are kept): run it again")
        return run


def _check(snap: Snapshot, based_on: int | None) -> None:
    """StaleVersion when an edit made on version ``based_on`` (None: on any) is not of ``snap``'s."""
    if based_on is not None and based_on != snap.version:
        raise StaleVersion(based_on, snap.version)


def describe(changes: Changes) -> str:
    """A what-if's changes in a line, as its job's title."""
    parts = [f"drain {', '.join(changes.drain)}" if changes.drain else "",
             f"cordon {', '.join(changes.cordon)}" if changes.cordon else "",
             ", ".join(f"{selector}:{pc}" for selector, pc in changes.priority_classes),
             "" if changes.preemption is None else f"preemption {'on' if changes.preemption else 'off'}",
             f"apply {len(changes.apply)} object{'s' * (len(changes.apply) != 1)}" if changes.apply else "",
             "a scheduler configuration" if changes.scheduler_configuration is not None else ""]
    return "; ".join(p for p in parts if p) or "no change"


@dataclass(frozen=True)
class WhatIfRun:
    id: int
    #: the diff, as ``kubesched whatif -o json`` prints it
    diff: dict[str, Any]
    #: the snapshot it was run on (weakly: a what-if kept does not keep a version an edit replaced,
    #: the whole scenario and run, alive) and its changes: what its changed scenario, as
    #: ``--save-changed`` writes it, is made of again when its download is asked
    base: weakref.ref[Snapshot]
    changes: Changes
    #: what was asked (the what-if form's request), to show the form again as it was sent
    asked: Any = None
    #: the warnings of reading its texts (unknown fields of the objects applied)
    warnings: list[str] = field(default_factory=list)

    def changed_yaml(self) -> str:
        """The changed scenario as YAML; KeyError once the version it was run on is gone (an edit
        replaced it and no page holds it)."""
        snap = self.base()
        if snap is None:
            raise KeyError(f"what-if {self.id} was run on a version of the scenario an edit has since replaced: its "
                           "changed scenario is no longer there (run the what-if again)")
        return yaml.safe_dump_all(scenario_documents(changed_scenario(snap.scenario, self.changes)), sort_keys=False)

    def report(self) -> str:
        return whatif_report(self.diff)
