"""The simulator: clock + embedded cluster + scheduler loop + scenario steps -> a typed outcome.

:func:`simulate` is the one way in: it takes a scenario (loaded, or a file or directory to load) and
returns a :class:`~kubesched.sim.outcome.SimulationOutcome`. :class:`Simulation` is the same thing in
two steps, for callers that attach something to the cluster before it runs.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kubesched.api.errors import KubeschedError, Location
from kubesched.api.loader import Scenario, Step, load_scenario
from kubesched.api.snapshot import plan_initial_objects
from kubesched.cluster.embedded.cluster import EmbeddedCluster
from kubesched.cluster.embedded.drain import Drain, start_drain
from kubesched.cluster.embedded.eventlog import EventLog
from kubesched.des.clock import EventLoop
from kubesched.des.heap import collector_paused, long_lived_heap
from kubesched.k8s.objects import TERMINAL_PHASES, ApiError, Obj, key_of, namespace_of
from kubesched.scheduler.config import ConfigError
from kubesched.scheduler.loop import SchedulerLoop
from kubesched.scheduler.scheduler import Scheduler
from kubesched.sim.gangs import GangHistory
from kubesched.sim.identity import PodIdentities
from kubesched.sim.outcome import SimulationOutcome
from kubesched.sim.racing import Race, RacingLoop
from kubesched.sim.result import build_result

#: without `until`: how long pods may keep backing off or waiting at Permit (and so be retried) once
#: nothing else happens
QUIET_HORIZON = 600.0

#: how many scheduling cycles may run within one instant between two progress reports
CYCLES_PER_REPORT = 200


@dataclass(frozen=True, slots=True)
class RunStatus:
    """Where a running simulation is: simulated time (and its end, if set), scheduling cycles run,
    and the pods now: ``pending`` (not bound), ``running`` (bound, started or about to),
    ``finished`` (Succeeded or Failed)."""

    now: float
    until: float | None
    cycles: int
    pending: int
    running: int
    finished: int


ProgressCallback = Callable[[RunStatus], None]


def _state(phase: str, node: str | None) -> str:
    return "Bound" if phase == "Pending" and node else phase


class PodHistory:
    """Remembers every pod that ever existed (the result's ``pods``)."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Any]] = {}
        #: pods by their current phase (``Deleted`` ones included; a bound Pending pod is ``Bound``)
        self.phases: Counter[str] = Counter()
        #: every pod's controller (its namespace and the controlling ownerReference's kind, name and
        #: uid) and labels, for analyses of the run
        self.owners: dict[str, tuple[str, str, str, str]] = {}
        self.labels: dict[str, dict[str, str]] = {}

    def _record(self, obj: Obj, phase: str | None = None) -> None:
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        if phase is None:
            phase = status.get("phase") or "Pending"
            if obj["metadata"].get("deletionTimestamp") and phase not in TERMINAL_PHASES:
                phase = "Terminating"
        key = key_of(obj)
        meta = obj["metadata"]
        self.labels[key] = meta.get("labels") or {}
        ref = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
        if ref is not None:
            self.owners[key] = (meta.get("namespace") or "", ref.get("kind") or "", ref.get("name") or "",
                                ref.get("uid") or "")
        previous = self.pods.get(key)
        if previous is not None:
            self.phases[_state(previous["phase"], previous["node"])] -= 1
        self.phases[_state(phase, spec.get("nodeName"))] += 1
        self.pods[key] = {
            "node": spec.get("nodeName"),
            "phase": phase,
            "priority": spec.get("priority", 0),
            "nominatedNodeName": status.get("nominatedNodeName") or None,
            "priorityClassName": spec.get("priorityClassName") or None,
        }
        if status.get("reason"):  # why a pod failed (Evicted, TopologyAffinityError, ...)
            self.pods[key]["reason"] = status["reason"]

    def on_add(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self._record(obj)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        if kind == "Pod":
            self._record(new)

    def on_delete(self, kind: str, obj: Obj) -> None:
        if kind == "Pod":
            self._record(obj, "Deleted")


def _configuration_error(scenario: Scenario, err: ConfigError) -> KubeschedError:
    """An error in the scenario's scheduler configuration, naming where it was read: the file, the
    document and the field, as the loader's errors do."""
    source = scenario.scheduler_configuration_source
    if isinstance(source, str):  # the caller's own words
        return ConfigError(f"{source}: {err}")
    if source is None:  # a Scenario made in code, of no file
        source = Location(None, path="spec.schedulerConfiguration", object_ref=f"Scenario {scenario.name}")
    return source.error(err.message, err.path)


def _input_pod_keys(scenario: Scenario) -> set[str]:
    """The keys of the pods the input names: the scenario's and those its steps create."""
    objects = [*scenario.objects, *(step.obj for step in scenario.steps if step.action == "create" and step.obj)]
    return {f"{namespace_of(o)}/{o['metadata']['name']}" for o in objects if o.get("kind") == "Pod"}


class Simulation:
    """One simulation of ``scenario``, ready to :meth:`run`.

    ``seed`` and ``until`` override the scenario's. ``explain`` records every scheduling attempt and
    every preemption candidate. ``decisions`` puts the ``preemptionDecisions`` and ``attempts``
    sections in the result (by default: when explaining). With ``owned``, the scenario's objects
    read from a cluster are handed to the embedded cluster as they are, not copied: for a caller
    that uses the scenario for nothing else afterwards (a dump of 150 000 pods is copied in seconds).
    ``feature_gates``: the scheduler's (:mod:`kubesched.scheduler.features`).
    """

    @collector_paused()
    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int | None = None,
        until: float | None = None,
        explain: bool = False,
        decisions: bool | None = None,
        owned: bool = False,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.until = scenario.until if until is None else until
        self.include_decisions = explain if decisions is None else decisions
        cluster_seq, scheduler_seq = np.random.SeedSequence(self.seed).spawn(2)
        self.loop = EventLoop()
        self.log = EventLog(self.loop.now)
        self.cluster = EmbeddedCluster(self.loop, self.log, np.random.default_rng(cluster_seq))
        self.history = PodHistory()
        self.gangs = GangHistory()
        self.identities = PodIdentities(_input_pod_keys(scenario))
        self.drains: list[Drain] = []
        self.cluster.watch(self.history)
        self.cluster.watch(self.gangs)
        self.cluster.watch(self.identities)
        self.cluster.api.ensure_system_priority_classes()
        self.cluster.configure(scenario.cluster)
        self.cluster.start_controllers()
        #: the racing schedulers of ``spec.schedulers`` (None: the one scheduler)
        self.race: Race | None = None
        if scenario.schedulers:
            if scenario.scheduler_configuration is not None:
                raise _configuration_error(scenario, ConfigError(
                    "the scenario's spec.schedulers configures each of its schedulers: give their "
                    "configurations there"))
            self.race = Race(self.cluster, scenario.schedulers, scheduler_seq, record_attempts=explain,
                             feature_gates=feature_gates)
            #: every scheduler of the run; :attr:`scheduler` is the first
            self.schedulers = self.race.schedulers
            self.scheduler = self.schedulers[0]
        else:
            try:
                self.scheduler = Scheduler(
                    self.cluster,
                    scenario.scheduler_configuration,
                    np.random.default_rng(scheduler_seq),
                    self.loop.now,
                    record_attempts=explain,
                    config_dir=Path(scenario.scheduler_configuration_dir) if scenario.scheduler_configuration_dir else None,
                    bind_for_extenders=True,
                    feature_gates=feature_gates,
                )
            except ConfigError as err:
                raise _configuration_error(scenario, err) from err
            self.schedulers = [self.scheduler]
        for scheduler in self.schedulers:  # the nodes a preemption ruled out: only the decisions show them
            scheduler.records.keep_rejected = self.include_decisions or explain
        self.initial = plan_initial_objects(scenario.objects, owned=owned)
        for obj in self.initial.create_first:
            self.cluster.create(obj)
        self.cluster.restore_all(self.initial.restore)
        self.initial.restore = []  # the store holds them now (and their later versions)
        for obj in self.initial.create:
            self.cluster.create(obj)
        for scheduler in self.schedulers:
            scheduler.start()
        for step in scenario.steps:
            self.loop.call_at(step.at, functools.partial(self._apply, step))
        self.scheduler_loop: SchedulerLoop | RacingLoop = (
            SchedulerLoop(self.scheduler, self.loop) if self.race is None else self.race.scheduler_loop())

    # -- steps ----------------------------------------------------------------------------------
    def _apply(self, step: Step) -> None:
        try:
            if step.action == "create":
                assert step.obj is not None
                self.cluster.create(step.obj)
            elif step.action == "delete":
                assert step.kind and step.name
                self.cluster.delete(step.kind, step.namespace or None, step.name, step.grace_period_seconds)
            elif step.action == "patch":
                assert step.kind and step.name and step.merge is not None
                self.cluster.patch(step.kind, step.namespace or None, step.name, step.merge)
            elif step.action == "drain":
                assert step.name and step.drain is not None
                self.drains.append(start_drain(self.cluster, step.name, step.drain))
        except ApiError as err:
            self.log.reject(step.kind or "?", f"{step.namespace}/{step.name}" if step.namespace else str(step.name),
                            err.code, err.message)

    # -- the loop -------------------------------------------------------------------------------
    def status(self, cycles: int = 0) -> RunStatus:
        phases = self.history.phases
        return RunStatus(self.loop.now(), self.until, cycles, phases["Pending"],
                         phases["Bound"] + phases["Running"] + phases["Terminating"],
                         phases["Succeeded"] + phases["Failed"])

    def run(self, progress: ProgressCallback | None = None) -> SimulationOutcome:
        """Run to the end (``until``, else until nothing more can happen). ``progress(status)`` is
        called after every simulated instant and every ``CYCLES_PER_REPORT`` cycles within one, so
        it should be cheap."""
        loop = self.loop
        cycles = 0

        def after_cycle() -> None:
            nonlocal cycles
            cycles += 1
            if progress is not None and cycles % CYCLES_PER_REPORT == 0:
                progress(self.status(cycles))

        with long_lived_heap():
            while True:
                self.scheduler_loop.run_instant(after_cycle)
                if progress is not None:
                    progress(self.status(cycles))
                if self.until is None and not self._more_can_happen():
                    break
                if not loop.advance(self.until):
                    break
            if self.race is not None:
                self.race.catch_up()
            for scheduler in self.schedulers:
                scheduler.close()
            # within the block: handing the starting state back to the collector makes its next
            # pass a full one, and building the result is what would trigger it
            result = build_result(self, decisions=self.include_decisions)
        return SimulationOutcome(result, self)

    def _more_can_happen(self) -> bool:
        """Whether a run without ``until`` goes on: something other than the scheduler's retries is
        due, activeQ has pods, or pods back off or wait at Permit and something else happened
        within :data:`QUIET_HORIZON`."""
        if self.loop.has_foreground():
            return True
        if any(scheduler.queue.has_active() for scheduler in self.schedulers):
            return True
        retrying = any(scheduler.queue.has_backoff()
                       or any(len(fwk.waiting_pods) for fwk in scheduler.frameworks.values())
                       for scheduler in self.schedulers)
        return retrying and self.loop.now() - self.loop.last_foreground < QUIET_HORIZON


def simulate(
    scenario: Scenario | str | Path,
    *,
    seed: int | None = None,
    until: float | None = None,
    explain: bool = False,
    decisions: bool | None = None,
    progress: ProgressCallback | None = None,
    on_start: Callable[[Simulation], None] | None = None,
    owned: bool = False,
) -> SimulationOutcome:
    """Simulate ``scenario`` (a loaded Scenario, or a scenario file or directory) to its end.

    Raises KubeschedError (ManifestError, ConfigError) on bad input; the keywords are
    :class:`Simulation`'s and :meth:`Simulation.run`'s, and ``on_start(sim)`` is called once the
    simulation is built (the scenario's objects created) and before it runs: the place to watch
    its cluster's store, say. ``owned``: see :class:`Simulation` (a scenario loaded here is always
    the simulation's own).
    """
    if not isinstance(scenario, Scenario):
        scenario, owned = load_scenario(scenario), True
    sim = Simulation(scenario, seed=seed, until=until, explain=explain, decisions=decisions, owned=owned)
    if on_start is not None:
        on_start(sim)
    return sim.run(progress)
