"""The work of the ui's jobs (:mod:`kubesched.ui.jobs`): what-ifs and pods diagnosed at an earlier
moment, run in a worker process (each function is called there by name, with its inputs pickled,
and returns a document that pickles back), and an edit's run, on the server's thread.

Every function takes the simulator's ``progress`` callback, which reports how the run goes and is
where a cancelled job stops. A worker's scenario (and a what-if's baseline) comes :class:`Packed`:
pickled once per run of the ui, not once per job.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import pickle
import shutil
import tempfile
import weakref
from typing import Any, Generic, TypeVar

from kubesched.analysis.diagnose import diagnose, missing_pod_text
from kubesched.analysis.whatif.apply import apply_changes
from kubesched.analysis.whatif.changes import Changes
from kubesched.analysis.whatif.compare import Run
from kubesched.analysis.whatif.preemption import baseline_preemption
from kubesched.analysis.whatif.run import whatif
from kubesched.api.loader import Scenario
from kubesched.sim import SimulationOutcome, simulate
from kubesched.sim.runner import ProgressCallback
from kubesched.ui.jobs import FINISHING, READING, SETTING_UP, PhaseCallback
from kubesched.ui.scores import scores_now

T = TypeVar("T")


class Packed(Generic[T]):
    """An object pickled once, to a file, for every worker that needs it: the server pickles a
    scenario once per run (most of a second at 20 000 pods, several at 150 000, holding the
    interpreter's lock) and then hands each worker the file's name, which the worker reads the
    object from as it unpickles it. Neither process holds the pickled bytes: at 150 000 pods they
    are hundreds of megabytes, which the server would otherwise keep for as long as it runs and
    each worker receive whole before unpickling them.

    The file is the server's: it is removed when the server's Packed is collected (the worker's copy,
    unpickled from the job's arguments, only names it), and the folder with the server."""

    def __init__(self, path: str, *, owner: bool = False) -> None:
        self.path = path
        if owner:
            weakref.finalize(self, _remove, path)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Packed, (self.path,))  # the worker's copy names the file and does not own it

    @classmethod
    def of(cls, value: T) -> Packed[T]:
        handle, path = tempfile.mkstemp(suffix=".pickle", dir=folder())
        with os.fdopen(handle, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        return cls(path, owner=True)

    def value(self) -> T:
        """The object again, a copy of its own (its many containers made with the cyclic collector
        paused, which would otherwise walk them again and again as they are made: 4 times the time)."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            with open(self.path, "rb") as read:
                return pickle.load(read)  # noqa: S301 - our own file, written by the server
        finally:
            if enabled:
                gc.enable()


_FOLDER: list[str] = []


def folder() -> str:
    """The server's folder of pickled objects (made the first time; removed when the server exits)."""
    if not _FOLDER:
        _FOLDER.append(tempfile.mkdtemp(prefix="kubesched-ui-"))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    return _FOLDER[0]


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _phase(phase: PhaseCallback | None, name: str) -> None:
    if phase is not None:
        phase(name)


def run_whatif(base: Packed[Scenario], changes: Changes, baseline: Packed[Run] | None, *,
               progress: ProgressCallback | None = None,
               phase: PhaseCallback | None = None) -> dict[str, Any]:
    """``kubesched whatif`` of ``base`` with ``changes``: the diff, ``baseline`` being the run of
    ``base`` the ui already has (only the changed side is simulated, unless the changes make the
    baseline another run). The changed scenario is not sent back: the server makes it again from
    its own scenario when its download is asked (:func:`changed_scenario`), and the simulation
    here takes the worker's objects as they are rather than copying them (the worker's copy of the
    scenario is its own and read by nothing else)."""
    _phase(phase, READING)
    scenario, before = base.value(), baseline.value() if baseline else None
    _phase(phase, SETTING_UP)  # until the simulator's first report
    diff, _ = whatif(scenario, changes, baseline=before, progress=progress, keep_changed=False)
    _phase(phase, FINISHING)
    return diff


def changed_scenario(base: Scenario, changes: Changes) -> Scenario:
    """The scenario ``kubesched whatif`` simulates as its changed side (``--save-changed``'s)."""
    _, changed = apply_changes(base, changes, baseline_preemption(base, changes))
    return changed


def run_moment(scenario: Packed[Scenario], at: float, namespace: str, name: str, *,
               progress: ProgressCallback | None = None, phase: PhaseCallback | None = None) -> dict[str, Any]:
    """The pod diagnosed at ``at``, as ``kubesched explain NAMESPACE/NAME --at AT -o json`` (the
    run simulated up to then): ``{"diagnosis": ..., "scores": ...}`` (every feasible node's scores
    then), or ``{"missing": explain's words}`` for a pod the run does not have at that moment."""
    _phase(phase, READING)
    read = scenario.value()
    _phase(phase, SETTING_UP)
    outcome = simulate(read, until=at, explain=True, progress=progress, owned=True)  # the worker's own copy
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
