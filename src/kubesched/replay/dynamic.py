"""What a replay decides at run time, not when the history is read: writes to the pods the replay's
controllers make (their names are the controllers' draws: found by identity), and a pod created
again under a name the replay may still run (the recorded scheduler preempted it; the replay's did
not).

A re-creation is played as the recording's user meant it: if the replay's earlier pod of that name
is gone, the pod is created; if it is terminating, it is created once it is gone (as a controller
waits for its old pod); if it still runs, nothing is created, it goes on running, and the
comparison says so (``keptRunning``) instead of the creation being rejected as a duplicate.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

from kubesched.api.loader import Scenario, Step
from kubesched.k8s.objects import ApiError
from kubesched.replay.owners import IdentityStep
from kubesched.sim.runner import Simulation

#: how often a re-creation waiting for its earlier pod to go looks again (simulated seconds)
RECREATE_POLL = 0.5


def split_recreations(scenario: Scenario, marker: str) -> tuple[Scenario, list[Step]]:
    """The scenario without the re-creation steps (their ``source`` ends with ``marker``), and those
    steps (as a what-if's changes left them)."""
    kept = [s for s in scenario.steps if not s.source.endswith(marker)]
    if len(kept) == len(scenario.steps):
        return scenario, []
    recreations = [s for s in scenario.steps if s.source.endswith(marker)]
    return replace(scenario, steps=kept), recreations


@dataclass
class RunTimeSteps:
    """Plays ``identity_steps`` and ``recreations`` on a simulation (``attach`` it as
    :func:`kubesched.sim.simulate`'s ``on_start``). ``kept``: the re-creations not made because
    the pod still ran (``(pod key, recorded time)``); ``missed``: identity steps whose pod the
    replay did not have (its controller made fewer pods, or it was gone)."""

    identity_steps: list[IdentityStep]
    recreations: list[Step]
    kept: set[tuple[str, float]] = field(default_factory=set)
    missed: list[str] = field(default_factory=list)

    def attach(self, sim: Simulation) -> None:
        for step in self.identity_steps:
            sim.loop.call_at(step.at, functools.partial(self._identity, sim, step))
        for recreation in self.recreations:
            sim.loop.call_at(recreation.at, functools.partial(self._recreate, sim, recreation))

    def _identity(self, sim: Simulation, step: IdentityStep) -> None:
        key = next((k for k, ident in sim.identities.of.items() if ident == step.identity), None)
        pod = None if key is None else sim.cluster.api.get("Pod", *key.split("/", 1))
        if key is None or pod is None or pod["metadata"].get("deletionTimestamp"):
            self.missed.append(f"{step.action} {step.identity} ({step.source})")
            return
        ns, name = key.split("/", 1)
        try:
            if step.action == "patch":
                assert step.merge is not None
                sim.cluster.patch("Pod", ns, name, step.merge)
            elif step.action == "evict":
                sim.cluster.evict(ns, name, step.grace)
            else:
                sim.cluster.delete("Pod", ns, name, step.grace)
        except ApiError as err:
            sim.log.reject("Pod", key, err.code, err.message)

    def _recreate(self, sim: Simulation, step: Step, recorded_at: float | None = None) -> None:
        assert step.obj is not None
        recorded_at = step.at if recorded_at is None else recorded_at
        current = sim.cluster.api.get("Pod", step.namespace or None, step.name or "")
        if current is None:
            try:
                sim.cluster.create(step.obj)
            except ApiError as err:
                sim.log.reject("Pod", f"{step.namespace}/{step.name}", err.code, err.message)
        elif current["metadata"].get("deletionTimestamp"):
            sim.loop.call_at(sim.loop.now() + RECREATE_POLL,
                             functools.partial(self._recreate, sim, step, recorded_at))
        else:
            self.kept.add((f"{step.namespace}/{step.name}", recorded_at))
