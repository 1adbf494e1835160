"""What a sweep or plan file may hold, checked when it is read: a wrong type, a bad number, a
repeated axis value or a goal naming a class the base does not have is refused naming the file and
the field (exit 2, no traceback); a grace period of 0 means 0; and an --out directory made from
other inputs is refused, or run again with --redo."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kubesched.cli.main import cli
from kubesched.testkit.builders import make_node, make_pod

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO = EXAMPLES / "demo.yaml"


def _file(tmp_path: Path, kind: str, **spec: Any) -> Path:
    path = tmp_path / f"{kind.lower()}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": kind, "metadata": {"name": "t"},
                                    "spec": spec}))
    return path


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _refused(out: Result) -> str:
    assert out.exit_code == 2, out.output
    assert out.exception is None or isinstance(out.exception, SystemExit), out.exception
    assert "Traceback" not in out.output
    return out.output


@pytest.fixture
def web_tier(tmp_path: Path) -> str:
    shutil.copytree(EXAMPLES / "sweeps" / "web-tier", tmp_path / "web-tier")
    return "web-tier/cluster.yaml"


def _plan(tmp_path: Path, base: str, *goals: str) -> Path:
    return _file(tmp_path, "Plan", base=base, nodePool={"template": "pool-a", "min": 1, "max": 4}, goals=list(goals))


def test_a_goal_with_a_bad_number_is_refused_naming_it(tmp_path: Path, web_tier: str) -> None:
    plan = _plan(tmp_path, web_tier, "pending == 0", "pending == 1.2.3")
    output = _refused(_run("plan", str(plan), "--local"))
    assert f"{plan}: document 1 (Plan): spec.goals[1]" in output
    assert "the goal 'pending == 1.2.3': '1.2.3' is not a number" in output


@pytest.mark.parametrize(("goal", "said"), [
    ("schedulingLatencyP99 < 30 for class Online",
     "the goal 'schedulingLatencyP99 < 30 for class Online' names PriorityClass 'Online', which the base does not "
     "have (PriorityClass names: batch, online)"),
    ("schedulingLatencyP99 < 30 for namespace shop",
     "names namespace 'shop', which the base does not have (namespace names: default)"),
], ids=["class", "namespace"])
def test_a_goal_naming_a_class_or_namespace_the_base_has_not_is_refused(tmp_path: Path, web_tier: str, goal: str,
                                                                         said: str) -> None:
    output = _refused(_run("plan", str(_plan(tmp_path, web_tier, goal)), "--local"))
    assert "spec.goals[0]" in output and said in output


def test_a_goal_naming_a_class_the_base_has_runs(tmp_path: Path, web_tier: str) -> None:
    plan = _plan(tmp_path, web_tier, "schedulingLatencyP99 < 600 for class online", "pending < 1000")
    out = _run("plan", str(plan), "--local", "-o", "json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["answer"] == 1


@pytest.mark.parametrize(("spec", "field", "message"), [
    ({"changes": {"d": {"drain": ["node-1"], "force": "false"}}}, "spec.changes.d.force", "must be a boolean, got string"),
    ({"changes": {"d": {"drain": ["node-1"], "ignoreDaemonSets": "yes"}}}, "spec.changes.d.ignoreDaemonSets",
     "must be a boolean"),
    ({"changes": {"d": {"enablePreemption": "false"}}}, "spec.changes.d.enablePreemption", "must be a boolean"),
    ({"changes": {"d": {"drain": ["node-1"], "gracePeriodSeconds": "abc"}}}, "spec.changes.d.gracePeriodSeconds",
     "must be an integer, got string"),
    ({"changes": {"d": {"drain": ["node-1"], "gracePeriodSeconds": -1}}}, "spec.changes.d.gracePeriodSeconds",
     "must be greater than or equal to 0"),
    ({"changes": {"d": {"drain": ["node-1"], "drainTimeout": "5 minutes"}}}, "spec.changes.d.drainTimeout", "5 minutes"),
    ({"seeds": {"first": -3, "count": 2}}, "spec.seeds", "N 0 or more"),
    ({"nodePool": {"template": "node-6", "counts": [4, 4]}}, "spec.nodePool.counts", "4 is given twice"),
    ({"replicaFactor": [1, 1.0]}, "spec.replicaFactor", "1 is given twice"),
    ({"arrivalRate": [2, 1, 2]}, "spec.arrivalRate", "2 is given twice"),
], ids=["force", "ignoreDaemonSets", "enablePreemption", "grace-string", "grace-negative", "timeout", "seeds",
        "counts", "replicaFactor", "arrivalRate"])
def test_a_sweep_field_of_the_wrong_type_or_repeated_is_refused_at_load(tmp_path: Path, spec: dict[str, Any],
                                                                        field: str, message: str) -> None:
    sweep = _file(tmp_path, "Sweep", base=str(DEMO), **spec)
    output = _refused(_run("sweep", str(sweep), "--local"))
    assert f"{sweep}: document 1 (Sweep): {field}" in output
    assert message in output


def _drained_cluster(tmp_path: Path) -> Path:
    """A pod of 30 s grace period on n1, which is drained (--force: the pod has no controller)."""
    pod = make_pod("p", node="n1", grace=30)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([make_node("n1"), make_node("n2"), pod]))
    return path


def _drain_finished(diff: dict[str, Any]) -> float:
    (drain,) = diff["drains"]
    assert drain["outcome"] == "drained"
    return float(drain["finished"])


@pytest.mark.parametrize(("grace", "finished"), [(None, 30.0), (0, 0.0), (5, 5.0)])
def test_whatif_grace_period_0_means_0(tmp_path: Path, grace: int | None, finished: float) -> None:
    args = ["whatif", str(_drained_cluster(tmp_path)), "--drain", "n1", "--force", "-o", "json"]
    out = _run(*args, *([] if grace is None else ["--grace-period", str(grace)]))
    assert out.exit_code == 0, out.output
    assert _drain_finished(json.loads(out.output)) == finished


def test_a_sweep_s_grace_period_0_means_0(tmp_path: Path) -> None:
    base = _drained_cluster(tmp_path)
    sweep = _file(tmp_path, "Sweep", base=str(base), changes={
        "own": {"drain": ["n1"], "force": True}, "zero": {"drain": ["n1"], "force": True, "gracePeriodSeconds": 0}})
    out = _run("sweep", str(sweep), "--local", "--out", str(tmp_path / "out"))
    assert out.exit_code == 0, out.output
    results = tmp_path / "out" / "results"
    own = json.loads((results / "change=own,seed=0.json").read_text())
    zero = json.loads((results / "change=zero,seed=0.json").read_text())
    # the pod is gone at once with 0; without, after its own 30 s
    assert _drain_finished(zero) == 0.0 and zero["drains"][0]["options"]["gracePeriod"] == 0
    assert _drain_finished(own) == 30.0 and own["drains"][0]["options"]["gracePeriod"] is None


def test_out_made_by_another_sweep_is_refused_then_redone_when_asked(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    sweep = _file(tmp_path, "Sweep", base=str(DEMO), seeds=[1, 2])
    first = _run("sweep", str(sweep), "--local", "--out", str(out_dir), "-o", "json")
    assert first.exit_code == 0, first.output
    # more seeds: the variants done are the same simulations, kept; only seed 3 runs
    stamps = {p.name: p.stat().st_mtime_ns for p in (out_dir / "variants").iterdir()}
    more = _file(tmp_path, "Sweep", base=str(DEMO), seeds=[1, 2, 3])
    again = _run("sweep", str(more), "--local", "--out", str(out_dir), "-o", "json")
    assert again.exit_code == 0, again.output
    assert {n: (out_dir / "variants" / n).stat().st_mtime_ns for n in stamps} == stamps
    # an end added: every variant is another simulation
    changed = _file(tmp_path, "Sweep", base=str(DEMO), seeds=[1, 2, 3], until="20s")
    output = _refused(_run("sweep", str(changed), "--local", "--out", str(out_dir)))
    assert f"error: {out_dir} holds results of 3 of these variants (e.g. seed=1) made from other inputs" in output
    assert "--redo" in output
    redone = _run("sweep", str(changed), "--local", "--out", str(out_dir), "--redo", "-o", "json")
    assert redone.exit_code == 0, redone.output
    fresh = _run("sweep", str(changed), "--local", "-o", "json")
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in json.loads(redone.output)["variants"]]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in json.loads(fresh.output)["variants"]]
    # and the directory is now the changed sweep's: run again, nothing is refused or redone
    stamps = {p.name: p.stat().st_mtime_ns for p in (out_dir / "variants").iterdir()}
    assert _run("sweep", str(changed), "--local", "--out", str(out_dir)).exit_code == 0
    assert {n: (out_dir / "variants" / n).stat().st_mtime_ns for n in stamps} == stamps


def test_a_changed_base_is_refused_too(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    shutil.copy(DEMO, base)
    sweep = _file(tmp_path, "Sweep", base=str(base), seeds=[1])
    assert _run("sweep", str(sweep), "--local", "--out", str(tmp_path / "out")).exit_code == 0
    base.write_text(DEMO.read_text().replace("name: node-6", "name: node-6-renamed"))
    assert "made from other inputs" in _refused(_run("sweep", str(sweep), "--local", "--out", str(tmp_path / "out")))
