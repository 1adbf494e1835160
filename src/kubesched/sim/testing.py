"""Helpers for tests that build scenarios in code: write documents to a file and simulate them."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from kubesched.api.loader import load_scenario
from kubesched.sim.result import build_result
from kubesched.sim.runner import Simulation

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


def simulate_path(path: Path | str, *, until: float | None = None, seed: int | None = None,
                  explain: bool = False) -> tuple[dict[str, Any], Simulation]:
    """Load and run a scenario; return the SimulationResult and the finished Simulation."""
    sim = Simulation(load_scenario(str(path)), seed=seed, until=until, record_attempts=explain)
    sim.run()
    return build_result(sim, explain=explain), sim
