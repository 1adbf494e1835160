"""Running a sweep's variants: here, one after another, or as tasks of a Dask cluster.

With Dask (``dask.distributed``) the base scenario and the sweep are sent to the cluster once, each
as a task of its own that the scheduler can run again if the workers holding it are lost (a
restarted worker), and each variant is one task depending on them. Results come back as they finish; each is
written at once to the output directory (``variants/ID.json``: the variant, its metrics, its
error if any; ``results/ID.json``: its SimulationResult), so a sweep run again with the same
directory skips what is there. A worker that dies has its tasks run again elsewhere by Dask's
scheduler; each variant's outcome is taken once, the first time its task finishes. Ctrl-C cancels
the tasks still queued and closes the cluster a sweep started itself.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import signal
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubesched.api.errors import KubeschedError
from kubesched.api.loader import Scenario
from kubesched.replay import History
from kubesched.sweep.fingerprint import Inputs
from kubesched.sweep.history_runs import run_history_variant
from kubesched.sweep.spec import Sweep, Variant
from kubesched.sweep.variants import Outcome, run_variant

#: what variants start from: a scenario, or a recorded history each variant replays
Base = Scenario | History


def scenario_of(base: Base) -> Scenario:
    """The scenario a base's variants change: its own, or the history's."""
    return base.scenario if isinstance(base, History) else base


def run_any(base: Base, sweep: Sweep, variant: Variant, keep_result: bool = True) -> Outcome:
    """The variant run: a simulation of the scenario, or a replay of the history, as it has them."""
    if isinstance(base, History):
        return run_history_variant(base, sweep, variant, keep_result)
    return run_variant(base, sweep, variant, keep_result)

#: told each outcome as it is kept (None: before the first), how many variants are running then, and
#: how many run in all (those an earlier run left to do: the ones done are not counted)
OnOutcome = Callable[[Outcome | None, int, int], None]


def outcome_record(outcome: Outcome) -> dict[str, Any]:
    """What ``variants/ID.json`` holds (``pendingPods`` when pods were pending at the end)."""
    record = {"id": outcome.variant.id, "configuration": outcome.variant.configuration,
              "axes": outcome.variant.axes(), "metrics": outcome.metrics, "error": outcome.error,
              "seconds": round(outcome.seconds, 3)}
    return {**record, "pendingPods": outcome.pending} if outcome.pending else record


class OtherInputs(KubeschedError):
    """The output directory holds results made from other inputs than this sweep's."""


class ResultStore:
    """The output directory: one file per finished variant, written whole or not at all, each
    record with the digest of its inputs (``inputs``: :mod:`.fingerprint`). A record of other
    inputs is refused (:class:`OtherInputs`), or run again when ``redo``."""

    def __init__(self, directory: str | None, inputs: Inputs | None = None, redo: bool = False) -> None:
        self.directory = Path(directory) if directory else None
        self.inputs = inputs
        self.redo = redo
        if self.directory is not None:
            (self.directory / "variants").mkdir(parents=True, exist_ok=True)
            (self.directory / "results").mkdir(exist_ok=True)

    def record_of(self, variant: Variant) -> dict[str, Any] | None:
        """What an earlier run wrote of the variant, if anything."""
        if self.directory is None:
            return None
        path = self.directory / "variants" / f"{variant.id}.json"
        if not path.exists():
            return None
        record: dict[str, Any] = json.loads(path.read_text())
        return record

    def same_inputs(self, variant: Variant, record: dict[str, Any]) -> bool:
        return self.inputs is None or record.get("inputs") == self.inputs(variant)

    def done(self, variant: Variant) -> dict[str, Any] | None:
        """The record of a variant finished by an earlier run from the same inputs without error,
        if there is one."""
        record = self.record_of(variant)
        if record is None or record.get("error") is not None or not self.same_inputs(variant, record):
            return None
        return {k: v for k, v in record.items() if k != "inputs"}

    def check(self, variants: list[Variant]) -> None:
        """Refuse a directory holding records of these variants made from other inputs (unless
        ``redo``): the sweep file, its base or a file it names changed since they were written."""
        if self.redo or self.inputs is None:
            return
        other = [v.id for v in variants if (r := self.record_of(v)) is not None and not self.same_inputs(v, r)]
        if other:
            raise OtherInputs(
                f"{self.directory} holds results of {len(other)} of these variants (e.g. {other[0]}) made from other "
                "inputs: the sweep file, its base or a file it names changed since. Use another --out directory, "
                "or --redo to run them again there")

    def keep(self, outcome: Outcome) -> dict[str, Any]:
        record = outcome_record(outcome)
        if self.directory is not None:
            if outcome.result is not None:
                _write_whole(self.directory / "results" / f"{outcome.variant.id}.json",
                             json.dumps(outcome.result, indent=2) + "\n")
            kept = record if self.inputs is None else {**record, "inputs": self.inputs(outcome.variant)}
            _write_whole(self.directory / "variants" / f"{outcome.variant.id}.json", json.dumps(kept, indent=2) + "\n")
        return record


def _write_whole(path: Path, text: str) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(text)
    os.replace(partial, path)  # an interrupted sweep leaves no half-written result


class Executor:
    """Where variants run: here, one after another (``address`` None and ``workers`` 0), or as tasks
    of a Dask cluster (at ``address``, or a local one of ``workers`` processes started on entry and
    closed on exit). On entry the base and the sweep are sent to the cluster, once for every
    ``run`` until exit (a plan's rounds share them)."""

    def __init__(self, base: Base, sweep: Sweep, *, address: str | None = None, workers: int = 0) -> None:
        self.base, self.sweep = base, sweep
        self.address, self.workers = address, workers
        self._cluster: Any = None
        self._client: Any = None
        self._data: tuple[Any, Any] = (base, sweep)
        self._token = uuid.uuid4().hex[:12]

    @property
    def here(self) -> bool:
        return self.address is None and self.workers == 0

    def __enter__(self) -> Executor:
        if self.here:
            return self
        from dask.distributed import Client, LocalCluster

        try:
            if self.address is None:
                with _sigint_ignored():
                    # the workers' warnings and errors are news of tasks cancelled or lost, or of a
                    # heartbeat that found the scheduler closed as the sweep shut down after Ctrl-C:
                    # the sweep reports what failed itself (each variant's error)
                    self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                                 dashboard_address=None, silence_logs=logging.CRITICAL)
                self._client = Client(self._cluster)
            else:
                self._client = Client(self.address)
            self._data = (self._given("base", self.base), self._given("sweep", self.sweep))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _given(self, name: str, value: object) -> Any:
        """``value`` on the cluster as the result of a task that unpickles it, not scattered: the
        scheduler keeps a task's inputs, so a value lost with its workers (the one worker of a
        cluster restarted by its nanny) is made again by running that task again, where scattered
        data would be gone and every variant needing it cancelled. Pickled here, so that Dask takes
        it as one opaque argument instead of looking through it for other tasks."""
        blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        with warnings.catch_warnings():  # "large graph": sent once, as a scatter would send it
            warnings.filterwarnings("ignore", message=".*[Ll]arge graph.*")
            return self._client.submit(pickle.loads, blob, pure=False, key=f"sweep-{name}-{self._token}")

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None

    def slots(self) -> int:
        """How many variants run at once: the workers' threads (1 here)."""
        if self._client is None:
            return 1
        return sum(self._client.nthreads().values()) or 1

    def run(self, variants: list[Variant], keep_results: bool) -> Iterator[Outcome]:
        """The variants' outcomes as they finish."""
        if self._client is None:
            for variant in variants:
                yield run_any(self.base, self.sweep, variant, keep_results)
            return
        from dask.distributed import as_completed

        pending: dict[Any, Variant] = {}
        try:
            for variant in variants:
                # the key names the variant (for Dask's dashboard and logs), the token this run of it: a
                # cluster shared by several sweeps never mistakes one's task for another's
                future = self._client.submit(run_any, *self._data, variant, keep_results, pure=False,
                                             key=f"variant-{self._token}-{variant.id}")
                pending[future] = variant
            for future in as_completed(list(pending)):
                variant = pending.pop(future)
                try:
                    outcome = future.result()
                except Exception as exc:  # noqa: BLE001 - the task itself failed (its worker died too often)
                    outcome = Outcome(variant, error=f"{type(exc).__name__}: {exc}")
                future.release()  # taken: a worker lost later does not compute it again
                yield outcome
        finally:
            if pending:  # interrupted: what is queued or running is not wanted any more
                self._client.cancel(list(pending))


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the local workers start, and so in them: Ctrl-C reaches every process of
    the terminal's group, and the workers are to be closed by the sweep (which cancels its tasks
    first), not interrupted mid-task, each with a traceback of its own."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: the workers keep the default
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_sweep(executor: Executor, variants: list[Variant], store: ResultStore,
              progress: OnOutcome | None = None) -> list[dict[str, Any]]:
    """Every variant's record, in the order of ``variants``: those the store has from an earlier
    run, and the others run now by ``executor`` (entered)."""
    store.check(variants)
    records: dict[Variant, dict[str, Any]] = {}
    todo = []
    for variant in variants:
        record = store.done(variant)
        if record is None:
            todo.append(variant)
        else:
            records[variant] = record
    if progress is not None:
        progress(None, min(len(todo), executor.slots()), len(todo))
    left = len(todo)
    for outcome in executor.run(todo, keep_results=store.directory is not None) if todo else ():
        if outcome.variant in records:
            continue  # a task run twice (its first worker died after answering): taken once
        records[outcome.variant] = store.keep(outcome)
        left -= 1
        if progress is not None:
            progress(outcome, min(left, executor.slots()), len(todo))
    return [records[v] for v in variants]
