"""The work of the ui's jobs (:mod:`kubesched.ui.jobs`): what-ifs and pods diagnosed at an earlier
moment, run in a worker process (each function is called there by name, with its inputs pickled,
and returns a document that pickles back), and an edit's run, on the server's thread.

Every function takes the simulator's ``progress`` callback, which reports how the run goes and is
where a cancelled job stops. A worker's scenario (and a what-if's baseline) comes :class:`Packed`:
pickled once per run of the ui, not once per job.
"""

from __future__ import annotations

import gc
import pickle
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kubesched.analysis.diagnose import diagnose, missing_pod_text
from kubesched.analysis.whatif.changes import Changes
from kubesched.analysis.whatif.compare import Run
from kubesched.analysis.whatif.run import whatif
from kubesched.api.loader import Scenario
from kubesched.sim import SimulationOutcome, simulate
from kubesched.sim.runner import ProgressCallback
from kubesched.ui.jobs import FINISHING, READING, SETTING_UP, PhaseCallback
from kubesched.ui.scores import scores_now

T = TypeVar("T")


@dataclass(frozen=True)
class Packed(Generic[T]):
    """An object pickled once, for every worker that needs it: the server pickles a 20 000-pod
    scenario once per run (most of a second, holding the interpreter's lock, which every page
    would wait for) and then hands each worker the bytes, which pickle as they are."""

    data: bytes

    @classmethod
    def of(cls, value: T) -> Packed[T]:
        return cls(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def value(self) -> T:
        """The object again, a copy of its own (its many containers made with the cyclic collector
        paused, which would otherwise walk them again and again as they are made: 4 times the time)."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            return pickle.loads(self.data)  # noqa: S301 - our own bytes, from the server or its worker
        finally:
            if enabled:
                gc.enable()


def _phase(phase: PhaseCallback | None, name: str) -> None:
    if phase is not None:
        phase(name)


def run_whatif(base: Packed[Scenario], changes: Changes, baseline: Packed[Run] | None, *,
               progress: ProgressCallback | None = None,
               phase: PhaseCallback | None = None) -> tuple[dict[str, Any], Packed[Scenario]]:
    """``kubesched whatif`` of ``base`` with ``changes`` (the diff, and the changed scenario for its
    download, packed: the server reads it only if the download is asked, instead of every page
    waiting the second it takes to unpickle it when the job is done), ``baseline`` being the run of
    ``base`` the ui already has: only the changed side is simulated (unless the changes make the
    baseline another run)."""
    _phase(phase, READING)
    scenario, before = base.value(), baseline.value() if baseline else None
    _phase(phase, SETTING_UP)  # until the simulator's first report
    diff, changed = whatif(scenario, changes, baseline=before, progress=progress)
    _phase(phase, FINISHING)
    return diff, Packed.of(changed)


def run_moment(scenario: Packed[Scenario], at: float, namespace: str, name: str, *,
               progress: ProgressCallback | None = None, phase: PhaseCallback | None = None) -> dict[str, Any]:
    """The pod diagnosed at ``at``, as ``kubesched explain NAMESPACE/NAME --at AT -o json`` (the
    run simulated up to then): ``{"diagnosis": ..., "scores": ...}`` (every feasible node's scores
    then), or ``{"missing": explain's words}`` for a pod the run does not have at that moment."""
    _phase(phase, READING)
    read = scenario.value()
    _phase(phase, SETTING_UP)
    outcome = simulate(read, until=at, explain=True, progress=progress)
    _phase(phase, FINISHING)
    if outcome.scheduler.cluster.get("Pod", namespace, name) is None:
        return {"missing": missing_pod_text(outcome.result, namespace, name, at)}
    diagnosis = diagnose(outcome.scheduler, namespace, name, run=outcome.result, end_of_run=False).to_dict()
    feasible = [v["node"] for v in diagnosis["nodes"] if v["fits"]]
    return {"diagnosis": diagnosis, "scores": scores_now(outcome.scheduler, namespace, name, feasible)}


def run_edit(scenario: Scenario, *, progress: ProgressCallback | None = None,
             phase: PhaseCallback | None = None) -> SimulationOutcome:
    """The edited scenario's run, as the ui's first (every attempt recorded, as ``explain`` runs it)."""
    _phase(phase, SETTING_UP)
    return simulate(scenario, explain=True, progress=progress)  # the scenario's objects are copied, not taken
