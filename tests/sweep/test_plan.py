"""`kubesched plan`: the fewest nodes of a template for which the goals hold in every seed's run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubesched.cli.main import cli
from kubesched.sweep.plan import parse_goal

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sweeps"


def _plan(tmp_path: Path, name: str, **spec: object) -> Path:
    shutil.copytree(EXAMPLES / "web-tier", tmp_path / "web-tier", dirs_exist_ok=True)
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Plan", "metadata": {"name": "p"},
                                    "spec": spec}))
    return path


def test_the_answer_is_the_smallest_count_that_holds_found_in_few_rounds(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "plan.yaml", base="web-tier/cluster.yaml", seeds=[1, 2],
                 nodePool={"template": "pool-a", "min": 1, "max": 64}, goals=["pending == 0"])
    out = CliRunner().invoke(cli, ["plan", str(plan), "--workers", "0", "-o", "json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    answer = document["answer"]
    assert len(document["rounds"]) <= 8
    # every count, as a sweep of the same pool: the goal holds from the answer on, not just below it
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep", "metadata": {"name": "s"},
                                     "spec": {"base": "web-tier/cluster.yaml", "seeds": [1, 2],
                                              "nodePool": {"template": "pool-a", "counts": [answer - 1, answer]}}}))
    swept = json.loads(CliRunner().invoke(cli, ["sweep", str(sweep), "--workers", "0", "-o", "json"]).output)
    pending = {c["axes"]["nodePoolCount"]: c["metrics"]["pending"]["max"] for c in swept["configurations"]}
    assert pending[answer] == 0 and pending[answer - 1] > 0
    assert document["oneFewerFails"][0]["goal"] == "pending == 0"
    assert document["oneFewerFails"][0]["value"] == pending[answer - 1] or document["oneFewerFails"][0]["value"] > 0


def test_the_examples_give_the_static_and_the_peak_answers(tmp_path: Path) -> None:
    answers = {}
    for name in ("web-tier-static.yaml", "web-tier-peak.yaml"):
        out = CliRunner().invoke(cli, ["plan", str(EXAMPLES / name), "--workers", "0", "-o", "json"])
        assert out.exit_code == 0, out.output
        answers[name] = json.loads(out.output)["answer"]
    assert answers["web-tier-peak.yaml"] > answers["web-tier-static.yaml"]  # the peak needs more


def test_goals_out_of_reach_and_bad_goals(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "small.yaml", base="web-tier/cluster.yaml", nodePool={"template": "pool-a", "min": 1, "max": 2},
                 goals=["pending == 0"])
    out = CliRunner().invoke(cli, ["plan", str(plan), "--workers", "0"])
    assert out.exit_code == 1 and "do not hold even with 2 nodes like pool-a" in out.output
    bad = _plan(tmp_path, "bad.yaml", base="web-tier/cluster.yaml", nodePool={"template": "pool-a", "min": 1, "max": 2},
                goals=["pending = 0"])
    out = CliRunner().invoke(cli, ["plan", str(bad), "--workers", "0"])
    assert out.exit_code == 2 and f"{bad}: document 1 (Plan): spec.goals[0]: a goal is METRIC OP NUMBER" in out.output
    assert parse_goal("pending == 0 for class online") == \
        "only schedulingLatencyP50, schedulingLatencyP95, schedulingLatencyP99 are measured per class and namespace"


def test_an_impossible_plan_names_the_run_the_goal_and_the_pod_left_pending_with_its_reason(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "small.yaml", base="web-tier/cluster.yaml", nodePool={"template": "pool-a", "min": 1, "max": 2},
                 goals=["pending == 0"])
    out = CliRunner().invoke(cli, ["plan", str(plan), "--workers", "0", "-o", "json"])
    assert out.exit_code == 1
    document = json.loads(out.output)
    failure = document["rounds"][0]["failures"][0]
    assert document["rounds"][0]["count"] == 2 and failure["goal"] == "pending == 0" and failure["value"] > 0
    pod = failure["pendingPods"][0]
    assert pod["message"].startswith("0/2 nodes are available: ") and "Insufficient" in pod["message"]
    assert document["warnings"] == []  # pending == 0 goes with the search
    out = CliRunner().invoke(cli, ["plan", str(plan), "--workers", "0"])
    lines = out.output.splitlines()
    assert lines[1] == f"  with 2: {failure['variant']} fails pending == 0 ({failure['value']})"
    assert lines[2] == f"    pending: {pod['pod']}: {pod['message']}"


def test_a_goal_that_more_nodes_break_is_said_to_go_against_the_search(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "alloc.yaml", base="web-tier/cluster.yaml", nodePool={"template": "pool-a", "min": 1, "max": 40},
                 goals=["cpuAllocation >= 0.5"])
    out = CliRunner().invoke(cli, ["plan", str(plan), "--workers", "0"])
    # with 40 nodes the pods fill less than half of them: no answer, and the reason said
    assert out.exit_code == 1 and "do not hold even with 40 nodes like pool-a" in out.output
    assert "fails cpuAllocation >= 0.5 (0." in out.output and "pending:" not in out.output
    said = " ".join(out.output.split())
    assert ("warning: the search assumes that a goal holding with some nodes holds with more, but 'cpuAllocation >= "
            "0.5' can go the other way (cpuAllocation falls as nodes are added)") in said
    assert parse_goal("scheduled >= 10").against_more_nodes() is None  # type: ignore[union-attr]
    assert "scheduled rises" in (parse_goal("scheduled < 10").against_more_nodes() or "")  # type: ignore[union-attr]
    assert parse_goal("pending != 0").against_more_nodes() is not None  # type: ignore[union-attr]
