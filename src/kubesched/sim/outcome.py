"""What a finished simulation hands back: :class:`SimulationOutcome`.

The outcome is built once, at the end of :meth:`kubesched.sim.runner.Simulation.run`. It carries the
SimulationResult document — the dict every command prints or compares, built by
:func:`kubesched.sim.result.build_result` — and the finished :class:`Simulation` itself, for callers
that look further: the cluster's objects, the scheduler's queue and cache (``kubesched explain``
diagnoses a pod on them), and the scheduler's records of attempts and preemption decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.api.resources import is_extended_resource_name
from kubesched.k8s.objects import scheduler_name_of

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster
    from kubesched.scheduler.plugins.defaultpreemption import PreemptionRecord
    from kubesched.scheduler.records import AttemptRecord
    from kubesched.scheduler.scheduler import Scheduler
    from kubesched.sim.runner import Simulation


@dataclass(frozen=True, slots=True)
class SimulationOutcome:
    #: the SimulationResult document; ``preemptionDecisions`` and ``attempts`` only when they were asked for
    result: dict[str, Any]
    #: the finished simulation (its clock stopped at ``result["endTime"]``)
    simulation: Simulation

    @property
    def scheduler(self) -> Scheduler:
        return self.simulation.scheduler

    def scheduler_of(self, namespace: str, name: str) -> Scheduler:
        """The scheduler the pod goes to: of a run whose schedulers race, the one one of whose
        profiles has the pod's schedulerName; otherwise (or when none has) :attr:`scheduler`."""
        pod = self.cluster.get("Pod", namespace, name)
        if pod is not None:
            wanted = scheduler_name_of(pod)
            for scheduler in self.simulation.schedulers:
                if wanted in scheduler.frameworks:
                    return scheduler
        return self.scheduler

    @property
    def cluster(self) -> EmbeddedCluster:
        return self.simulation.cluster

    @property
    def decisions(self) -> list[PreemptionRecord]:
        """Every preemption decision (each PostFilter call), in order; every candidate node only
        when the simulation explained."""
        return self.simulation.scheduler.records.preemptions

    @property
    def attempts(self) -> list[AttemptRecord]:
        """Every scheduling attempt, in order; recorded only when the simulation explained."""
        return self.simulation.scheduler.records.attempts

    def extended_resources(self) -> dict[str, dict[str, tuple[int, int]]]:
        """node -> extended resource -> (requested, allocatable) at the end of the run, for the
        nodes that have any (``nvidia.com/gpu`` and the like)."""
        extended: dict[str, dict[str, tuple[int, int]]] = {}
        for info in self.scheduler.cache.node_infos:
            names = [r for r in info.allocatable if is_extended_resource_name(r)]
            if names:
                extended[info.name] = {r: (info.requested.get(r, 0), info.allocatable[r]) for r in sorted(names)}
        return extended
