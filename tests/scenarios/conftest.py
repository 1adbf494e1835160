"""Scenario conformance tests: the scenario area's defaults for pods, nodes and Scenario documents,
and a ``simulate`` fixture running documents written to ``tmp_path``.

Simulated time 0 is 2026-01-01T00:00:00Z; :func:`ago` gives RFC3339 stamps before it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from kubesched.testkit.builders import make_node, make_pod, make_priority_class
from kubesched.testkit.runs import ScenarioRun, run_docs
from kubesched.testkit.scenarios import flatten, scenario_document

Obj = dict[str, Any]


def ago(minutes: float) -> str:
    """RFC3339 timestamp ``minutes`` before simulated time 0 (2026-01-01T00:00:00Z)."""
    from datetime import UTC, datetime, timedelta

    t = datetime(2026, 1, 1, tzinfo=UTC) - timedelta(minutes=minutes)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, cpu: str | None = None, memory: str | None = None, *, namespace: str | None = None,
        **fields: Any) -> Obj:
    """A pod requesting nothing unless told, its namespace left to the loader unless given."""
    return make_pod(name, cpu, memory, namespace=namespace, **fields)


def node(name: str, cpu: str | None = "4", memory: str | None = "16Gi", pods: str | None = "110", **fields: Any) -> Obj:
    """A node of 4 cpu and 16Gi reporting no capacity."""
    return make_node(name, cpu, memory, pods, capacity=None, **fields)


def scenario(steps: Iterable[Obj] = (), **options: Any) -> Obj:
    """The Scenario document (named ``test``)."""
    return scenario_document(steps=list(steps), name="test", **options)


def std_classes() -> list[Obj]:
    """The default PriorityClasses: low=100, mid=500, high=1000."""
    return [make_priority_class("low", 100), make_priority_class("mid", 500), make_priority_class("high", 1000)]


@pytest.fixture
def simulate(tmp_path: Path) -> Callable[..., ScenarioRun]:
    """``simulate(*docs, seed=None, until=None, explain=True, deep=False, hook=None) -> ScenarioRun``.

    ``docs`` are dicts or lists of dicts (flattened); a Scenario document is appended if none is
    given. ``deep=True`` records every pod version; ``hook(sim)`` is called before the run.
    """

    def run(*docs: Obj | list[Obj], explain: bool = True, **options: Any) -> ScenarioRun:
        flat = flatten(docs)
        if not any(d.get("kind") == "Scenario" for d in flat):
            flat.append(scenario())
        return run_docs(tmp_path, flat, explain=explain, **options)

    return run
