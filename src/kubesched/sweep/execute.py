"""Running a sweep's variants: here, one after another, or as tasks of a Dask cluster.

With Dask (``dask.distributed``) the base scenario and the sweep are sent to every worker once
(scattered, broadcast) and each variant is one task. Results come back as they finish; each is
written at once to the output directory (``variants/ID.json``: the variant, its metrics, its
error if any; ``results/ID.json``: its SimulationResult), so a sweep run again with the same
directory skips what is there. A worker that dies has its tasks run again elsewhere by Dask's
scheduler; each variant's outcome is taken once, the first time its task finishes. Ctrl-C cancels
the tasks still queued and closes the cluster a sweep started itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubesched.api.loader import Scenario
from kubesched.sweep.spec import Sweep, Variant
from kubesched.sweep.variants import Outcome, run_variant

Progress = Callable[[Outcome], None]


def outcome_record(outcome: Outcome) -> dict[str, Any]:
    """What ``variants/ID.json`` holds."""
    return {"id": outcome.variant.id, "configuration": outcome.variant.configuration,
            "axes": outcome.variant.axes(), "metrics": outcome.metrics, "error": outcome.error,
            "seconds": round(outcome.seconds, 3)}


class ResultStore:
    """The output directory: one file per finished variant, written whole or not at all."""

    def __init__(self, directory: str | None) -> None:
        self.directory = Path(directory) if directory else None
        if self.directory is not None:
            (self.directory / "variants").mkdir(parents=True, exist_ok=True)
            (self.directory / "results").mkdir(exist_ok=True)

    def done(self, variant: Variant) -> dict[str, Any] | None:
        """The record of a variant finished by an earlier run without error, if there is one."""
        if self.directory is None:
            return None
        path = self.directory / "variants" / f"{variant.id}.json"
        if not path.exists():
            return None
        record: dict[str, Any] = json.loads(path.read_text())
        return record if record.get("error") is None else None

    def keep(self, outcome: Outcome) -> dict[str, Any]:
        record = outcome_record(outcome)
        if self.directory is not None:
            if outcome.result is not None:
                _write_whole(self.directory / "results" / f"{outcome.variant.id}.json",
                             json.dumps(outcome.result, indent=2) + "\n")
            _write_whole(self.directory / "variants" / f"{outcome.variant.id}.json", json.dumps(record, indent=2) + "\n")
        return record


def _write_whole(path: Path, text: str) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(text)
    os.replace(partial, path)  # an interrupted sweep leaves no half-written result


def run_here(base: Scenario, sweep: Sweep, variants: list[Variant], keep_results: bool) -> Iterator[Outcome]:
    for variant in variants:
        yield run_variant(base, sweep, variant, keep_results)


def run_on_dask(base: Scenario, sweep: Sweep, variants: list[Variant], keep_results: bool, *,
                address: str | None, workers: int) -> Iterator[Outcome]:
    """The variants as tasks of the Dask cluster at ``address``, or of a local cluster of
    ``workers`` processes (one thread each: a simulation is Python code) started here."""
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if address is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    pending: dict[Any, Variant] = {}
    try:
        base_data, sweep_data = client.scatter([base, sweep], broadcast=True)
        for i, variant in enumerate(variants):
            future = client.submit(run_variant, base_data, sweep_data, variant, keep_results, pure=False,
                                   key=f"variant-{i}-{variant.id}")
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
        if pending:
            client.cancel(list(pending))
        client.close()
        if cluster is not None:
            cluster.close()


def run_sweep(base: Scenario, sweep: Sweep, variants: list[Variant], store: ResultStore, *,
              address: str | None = None, workers: int = 0, progress: Progress | None = None) -> list[dict[str, Any]]:
    """Every variant's record, in the order of ``variants``: those the store has from an earlier
    run, and the others run now (here with ``workers`` 0 and no ``address``, else on Dask)."""
    records: dict[Variant, dict[str, Any]] = {}
    todo = []
    for variant in variants:
        record = store.done(variant)
        if record is None:
            todo.append(variant)
        else:
            records[variant] = record
    keep_results = store.directory is not None
    if not todo:
        outcomes: Iterator[Outcome] = iter(())
    elif address is None and workers == 0:
        outcomes = run_here(base, sweep, todo, keep_results)
    else:
        outcomes = run_on_dask(base, sweep, todo, keep_results, address=address, workers=workers)
    for outcome in outcomes:
        if outcome.variant in records:
            continue  # a task run twice (its first worker died after answering): taken once
        records[outcome.variant] = store.keep(outcome)
        if progress is not None:
            progress(outcome)
    return [records[v] for v in variants]
