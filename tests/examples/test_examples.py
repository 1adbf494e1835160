"""Every example runs, and the walkthroughs in the docs say what the examples do."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.analysis.whatif.changes import Changes, load_change_objects
from kubesched.analysis.whatif.documents import scenario_documents
from kubesched.analysis.whatif.run import whatif
from kubesched.api.loader import load_scenario
from kubesched.sim import simulate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: kinds of example files that are not scenarios: --scheduler-config files, sweep and plan files
NOT_SCENARIO_KINDS = {"KubeSchedulerConfiguration", "Sweep", "Plan"}
#: directories whose files make one scenario together (a cluster, and the steps of its day)
DIRECTORY_SCENARIOS = [EXAMPLES / "sweeps" / "web-tier"]


def _is_scenario(path: Path) -> bool:
    kinds = {doc.get("kind") for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)}
    return not kinds & NOT_SCENARIO_KINDS and path.parent not in DIRECTORY_SCENARIOS


SCENARIOS = sorted([p for p in EXAMPLES.rglob("*.yaml") if _is_scenario(p)] + DIRECTORY_SCENARIOS)
ROLLOUT = EXAMPLES / "rollout"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_runs(path: Path) -> None:
    result = simulate(str(path)).result
    assert result["kind"] == "SimulationResult"
    assert result["pods"] or path.parent.name == "rollout"


def test_rollout_walkthrough(tmp_path: Path) -> None:
    """docs/production-rollout.md, step by step."""
    base = load_scenario(ROLLOUT / "cluster.yaml")
    step1 = Changes(apply=load_change_objects([str(ROLLOUT / "classes.yaml")]),
                    priority_classes=[("app=checkout", "online"), ("app=training", "training"),
                                      ("app=batch", "batch")])
    diff, changed = whatif(base, step1)
    assert diff["preempted"] == [] and diff["started"] == [] and diff["stopped"] == []
    path1 = tmp_path / "step1.yaml"
    path1.write_text(yaml.safe_dump_all(scenario_documents(changed)))

    diff, changed = whatif(load_scenario(path1), Changes(preemption=True))
    assert sorted(p["victim"].split("/")[0] for p in diff["preempted"]) == ["batch"] * 3
    assert sorted(p["pod"] for p in diff["started"]) == ["online/checkout-1", "online/checkout-2", "online/checkout-3"]
    path2 = tmp_path / "step2.yaml"
    path2.write_text(yaml.safe_dump_all(scenario_documents(changed)))

    etl = load_change_objects([str(ROLLOUT / "etl-job.yaml")])
    diff, _ = whatif(load_scenario(path2), Changes(apply=etl))
    assert "ml/training-4" in {p["victim"] for p in diff["preempted"]}
    profile = yaml.safe_load((ROLLOUT / "toleration-profile.yaml").read_text())
    diff, _ = whatif(load_scenario(path2), Changes(apply=etl, scheduler_configuration=profile))
    assert diff["preempted"] == []
    assert diff["changed"]["pods"]["batch/etl-nightly"]["phase"] == "Pending"

    guard = simulate(str(ROLLOUT / "quota-guard.yaml")).result
    assert [(r["name"], r["code"], r["message"]) for r in guard["rejected"]] == [
        ("default/sneaky", 500, "insufficient quota to match these scopes: [{PriorityClass In [online]}]")]
    assert guard["pods"]["online/checkout-4"]["phase"] == "Running"
