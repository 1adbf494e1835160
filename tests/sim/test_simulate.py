"""``kubesched.sim.simulate``: one entry point, a typed outcome, the decision sections only when asked."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kubesched.api.loader import load_scenario
from kubesched.sim import Simulation, SimulationOutcome, simulate
from kubesched.testkit.builders import make_node, make_pod, make_priority_class
from kubesched.testkit.scenarios import create_step, scenario_document, write_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _preempting(tmp_path: Path) -> Path:
    """One full node, a higher-priority pod arriving at 5 s that preempts."""
    return write_scenario(tmp_path, [
        make_priority_class("low", 1), make_priority_class("high", 100),
        make_node("n1", cpu="1"),
        make_pod("low", "800m", priority_class="low", grace=0),
        scenario_document(steps=[create_step("5s", make_pod("high", "800m", priority_class="high"))]),
    ])


@pytest.mark.parametrize("explain", [False, True])
def test_a_path_and_the_loaded_scenario_give_the_same_outcome(tmp_path: Path, explain: bool) -> None:
    path = _preempting(tmp_path)
    from_path = simulate(path, explain=explain, seed=7)
    from_str = simulate(str(path), explain=explain, seed=7)
    from_scenario = simulate(load_scenario(path), explain=explain, seed=7)
    assert json.dumps(from_path.result) == json.dumps(from_str.result) == json.dumps(from_scenario.result)
    assert from_path.result["scenario"] == "t"  # the Scenario document's name
    assert from_path.result["seed"] == 7
    assert [d.to_dict() for d in from_path.decisions] == [d.to_dict() for d in from_scenario.decisions]
    assert [a.to_dict() for a in from_path.attempts] == [a.to_dict() for a in from_scenario.attempts]


def test_the_outcome_is_frozen_and_holds_the_finished_simulation(tmp_path: Path) -> None:
    outcome = simulate(_preempting(tmp_path))
    assert isinstance(outcome, SimulationOutcome)
    assert isinstance(outcome.simulation, Simulation)
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.result = {}  # type: ignore[misc]
    assert outcome.scheduler is outcome.simulation.scheduler
    assert outcome.cluster is outcome.simulation.cluster
    assert outcome.result["endTime"] == outcome.simulation.loop.now()
    assert outcome.cluster.api.get("Pod", "default", "high")["spec"]["nodeName"] == "n1"


def test_decision_sections_only_when_asked(tmp_path: Path) -> None:
    path = _preempting(tmp_path)
    plain = simulate(path)
    assert "preemptionDecisions" not in plain.result and "attempts" not in plain.result
    assert plain.attempts == []  # nothing recorded either
    assert [d.outcome for d in plain.decisions] == ["preempted"]  # the scheduler keeps its decisions

    explained = simulate(path, explain=True)
    assert [d["outcome"] for d in explained.result["preemptionDecisions"]] == ["preempted"]
    assert explained.result["attempts"] == [a.to_dict() for a in explained.attempts] != []
    assert list(explained.result)[-2:] == ["preemptionDecisions", "attempts"]

    # what-if's runs: the decisions in the result without recording every attempt
    decisions_only = simulate(path, decisions=True)
    assert decisions_only.result["preemptionDecisions"] == [d.to_dict() for d in decisions_only.decisions]
    assert decisions_only.result["attempts"] == []
    without = {k: v for k, v in decisions_only.result.items() if k not in ("preemptionDecisions", "attempts")}
    assert json.dumps(without) == json.dumps(plain.result)


def test_simulation_run_returns_the_outcome_and_reports_progress(tmp_path: Path) -> None:
    path = _preempting(tmp_path)
    seen: list[tuple[float, float | None]] = []
    sim = Simulation(load_scenario(path), until=60.0)
    outcome = sim.run(progress=lambda status: seen.append((status.now, status.until)))
    assert outcome.simulation is sim
    assert outcome.result["endTime"] == 60.0
    times = [t for t, _ in seen]
    assert times == sorted(times) and times[0] == 0.0 and 5.0 in times and times[-1] <= 60.0
    assert {until for _, until in seen} == {60.0}
    assert json.dumps(outcome.result) == json.dumps(simulate(path, until=60.0).result)


def test_an_example_through_both_doors() -> None:
    path = EXAMPLES / "preemption-design" / "example-2.yaml"
    assert json.dumps(simulate(path, explain=True).result) == json.dumps(
        Simulation(load_scenario(path), explain=True).run().result)
