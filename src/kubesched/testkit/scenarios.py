"""Helpers for tests that build scenarios in code: write documents to a file and simulate them."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import yaml

from kubesched.sim import Simulation, SimulationOutcome, simulate
from kubesched.testkit.builders import duration

_counter = itertools.count()


def flatten(docs: Iterable[dict[str, Any] | list[dict[str, Any]]]) -> list[dict[str, Any]]:
    flat: list[dict[str, Any]] = []
    for d in docs:
        flat.extend(d if isinstance(d, list) else [d])
    return flat


def write_scenario(directory: Path, docs: Iterable[dict[str, Any] | list[dict[str, Any]]]) -> Path:
    """Write ``docs`` (dicts or lists of dicts) as one YAML stream in ``directory``."""
    path = directory / f"scenario-{next(_counter)}.yaml"
    path.write_text(yaml.safe_dump_all(flatten(docs), sort_keys=False))
    return path


def scenario_document(cluster: dict[str, Any] | None = None, steps: list[dict[str, Any]] | None = None, *,
                      until: str | float | None = None, seed: int = 1, name: str = "t",
                      config: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Scenario document (the optional spec fields only when given); ``config`` is its
    schedulerConfiguration, ``until`` a duration or seconds."""
    spec: dict[str, Any] = {"seed": seed, "steps": steps or []}
    if cluster is not None:
        spec["cluster"] = cluster
    if until is not None and until != "":
        spec["until"] = duration(until)
    if config is not None:
        spec["schedulerConfiguration"] = config
    return {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": name}, "spec": spec}


def create_step(at: str | float, obj: dict[str, Any]) -> dict[str, Any]:
    return {"at": duration(at), "create": obj}


def delete_step(at: str | float, kind: str, name: str, *, namespace: str | None = None,
                grace: int | None = None) -> dict[str, Any]:
    target: dict[str, Any] = {"kind": kind, "name": name}
    if namespace:
        target["namespace"] = namespace
    if grace is not None:
        target["gracePeriodSeconds"] = grace
    return {"at": duration(at), "delete": target}


def patch_step(at: str | float, kind: str, name: str, merge: dict[str, Any], *,
               namespace: str | None = None) -> dict[str, Any]:
    """A merge patch of one object."""
    target: dict[str, Any] = {"kind": kind, "name": name, "merge": merge}
    if namespace:
        target["namespace"] = namespace
    return {"at": duration(at), "patch": target}


@dataclass(frozen=True)
class SimRun:
    """A finished simulation with lookups tests need (pods named without namespace are ``default``)."""

    outcome: SimulationOutcome

    @classmethod
    def from_path(cls, path: Path | str, *, until: float | None = None) -> Self:
        return cls(simulate(path, until=until))

    @classmethod
    def from_docs(cls, directory: Path, docs: Iterable[dict[str, Any] | list[dict[str, Any]]], *,
                  until: float | None = None) -> Self:
        return cls.from_path(write_scenario(directory, docs), until=until)

    @property
    def result(self) -> dict[str, Any]:
        return self.outcome.result

    @property
    def sim(self) -> Simulation:
        return self.outcome.simulation

    @property
    def events(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.result["events"]
        return events

    def ev(self, reason: str, name: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if e["reason"] == reason
                and (name is None or e["pod"] in (f"default/{name}", name))]

    def times(self, reason: str, name: str | None = None) -> list[float]:
        return [e["time"] for e in self.ev(reason, name)]

    def phase(self, name: str) -> str:
        return str(self.result["pods"][f"default/{name}"]["phase"])

    def node_of(self, name: str) -> str | None:
        node: str | None = self.result["pods"][f"default/{name}"]["node"]
        return node
