"""Scenario documents and steps built in code, and writing them to a file (see
:mod:`kubesched.testkit.runs` to simulate it)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

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
