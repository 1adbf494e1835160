"""Gang and volume failures as sweep metrics: the PodGroups that never had all their members
scheduled (and their pods), and the pods left pending by a volume plugin; counted as `kubesched
simulate -o json` shows them, and there only when the base has PodGroups or claims."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from kubesched.cli.main import cli
from kubesched.sweep.metrics import names_volume
from kubesched.testkit.builders import (
    make_gang,
    make_node,
    make_pod,
    make_pod_group,
    make_pv,
    make_pvc,
    make_scheduler_config,
    make_storage_class,
    with_claims,
)
from kubesched.testkit.scenarios import scenario_document

ZONE = "topology.kubernetes.io/zone"
COSCHEDULING = make_scheduler_config({
    "schedulerName": "default-scheduler",
    "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
    "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}]})


def _write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def _cluster(tmp_path: Path) -> Path:
    """Three nodes of 2 cores; the claim `data`'s volume is in zone-a, whose one node is full, so
    the pod `db` that mounts it waits; a gang of 2 pods fits, one of 4 cannot (4 cores are left)."""
    docs = [make_node("n1", cpu="2", labels={ZONE: "zone-a"}), make_node("n2", cpu="2", labels={ZONE: "zone-b"}),
            make_node("n3", cpu="2", labels={ZONE: "zone-b"}),
            make_storage_class("standard", wait=False),
            make_pv("pv-data", zone="zone-a", storage_class="standard", claim="default/data"),
            make_pvc("data", storage_class="standard", volume="pv-data"),
            make_pod("filler", cpu="2", node="n1"),
            with_claims(make_pod("db", cpu="1"), "data"),
            make_pod_group("fits", 2), make_pod_group("too-big", 4),
            *make_gang("fits", 2), *make_gang("too-big", 4),
            scenario_document(seed=1, name="gangs-and-volumes")]
    return _write(tmp_path / "cluster.yaml", docs)


def _sweep(tmp_path: Path, base: str, **spec: Any) -> Path:
    return _write(tmp_path / "sweep.yaml", [{"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep",
                                             "metadata": {"name": "s"}, "spec": {"base": base, **spec}}])


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _counted_from(result: dict[str, Any]) -> dict[str, Any]:
    """The counts as a reader of `simulate -o json` finds them: the PodGroups whose most pods
    scheduled at once stayed below minMember, and the pending pods whose last FailedScheduling
    message names a volume."""
    incomplete = {k: g for k, g in result["podGroups"].items() if g["mostScheduled"] < g["minMember"]}
    last = {e["pod"]: e["message"] for e in result["events"] if e["reason"] == "FailedScheduling"}
    on_volumes = sorted(k for k, p in result["pods"].items()
                        if p["phase"] == "Pending" and "node(s) had volume node affinity conflict" in last.get(k, ""))
    return {"incompleteGangs": sorted(incomplete), "incompleteGangPods": sum(len(g["pods"]) for g in incomplete.values()),
            "volumePending": on_volumes}


def test_gangs_that_never_fit_and_pods_waiting_for_a_volume_are_counted_as_simulate_shows_them(
        tmp_path: Path) -> None:
    base = _cluster(tmp_path)
    _write(tmp_path / "coscheduling.yaml", [COSCHEDULING])
    # until: a gang that never fits is tried again and again under Coscheduling: the run has no end
    sweep = _sweep(tmp_path, "cluster.yaml", seeds=[1, 2], until="5m",
                   schedulerConfigs={"default": "", "coscheduling": "coscheduling.yaml"})
    out = _run("sweep", str(sweep), "--local", "-o", "json", "--parquet", str(tmp_path / "s.parquet"),
               "--report", str(tmp_path / "s.html"))
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    for variant in document["variants"]:
        args = ["simulate", str(base), "--seed", str(variant["axes"]["seed"]), "--until", "5m", "-o", "json"]
        if variant["axes"]["schedulerConfig"] == "coscheduling":
            args += ["--scheduler-config", str(tmp_path / "coscheduling.yaml")]
        shown = _counted_from(json.loads(_run(*args).stdout))
        assert shown == {"incompleteGangs": ["default/too-big"], "incompleteGangPods": 4,
                         "volumePending": ["default/db"]}
        metrics = variant["metrics"]
        assert (metrics["incompleteGangs"], metrics["incompleteGangPods"], metrics["volumePending"]) == (1, 4, 1)
    for configuration in document["configurations"]:
        assert {m: configuration["metrics"][m]["mean"] for m in ("incompleteGangs", "incompleteGangPods",
                                                                  "volumePending")} == \
               {"incompleteGangs": 1, "incompleteGangPods": 4, "volumePending": 1}
        assert configuration["metrics"]["incompleteGangs"]["n"] == 2
    columns = pq.read_table(tmp_path / "s.parquet").to_pydict()
    assert columns["incompleteGangs"] == [1, 1, 1, 1] and columns["volumePending"] == [1, 1, 1, 1]
    report = (tmp_path / "s.html").read_text()
    assert "<th>incompleteGangs</th>" in report and "<th>volumePending</th>" in report
    table = _run("sweep", str(sweep), "--local").output
    assert "incompleteGangs" in table and "volumePending" in table


def test_a_base_without_gangs_or_claims_has_no_such_metric(tmp_path: Path) -> None:
    _write(tmp_path / "cluster.yaml", [make_node("n1", cpu="2"), make_pod("a", cpu="1"), make_pod("b", cpu="2"),
                                       scenario_document(seed=1)])
    sweep = _sweep(tmp_path, "cluster.yaml", seeds=[1, 2])
    out = _run("sweep", str(sweep), "--local", "-o", "json", "--parquet", str(tmp_path / "s.parquet"))
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    absent = {"incompleteGangs", "incompleteGangPods", "volumePending"}
    assert not absent & set(document["variants"][0]["metrics"])
    assert not absent & set(document["configurations"][0]["metrics"])
    assert not absent & set(pq.read_table(tmp_path / "s.parquet").column_names)
    assert "incompleteGangs" not in _run("sweep", str(sweep), "--local").output


def test_a_plan_goal_on_the_gangs(tmp_path: Path) -> None:
    """Nodes like n2 (zone-b, 2 cores) until the gang of 4 fits beside the gang of 2: two of them,
    with n3 (db stays pending, its volume in zone-a, and the goal does not ask about it)."""
    _cluster(tmp_path)
    plan = _write(tmp_path / "plan.yaml", [{"apiVersion": "kubesched.io/v1alpha1", "kind": "Plan",
                                            "metadata": {"name": "p"},
                                            "spec": {"base": "cluster.yaml", "goals": ["incompleteGangs == 0"],
                                                     "nodePool": {"template": "n2", "min": 1, "max": 8}}}])
    out = _run("plan", str(plan), "--local", "-o", "json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["answer"] == 2


@pytest.mark.parametrize(("message", "named"), [
    ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had volume node affinity conflict. preemption: "
     "0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for "
     "scheduling..", True),
    ("0/3 nodes are available: 3 node(s) exceed max volume count.", True),
    ("0/3 nodes are available: 3 node(s) had no available volume zone.", True),
    ("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are "
     "available: 3 Preemption is not helpful for scheduling..", True),
    ('0/3 nodes are available: persistentvolumeclaim "data" not found. preemption: 0/3 nodes are available: 3 '
     "Preemption is not helpful for scheduling..", True),
    ('running PreBind plugin "VolumeBinding": binding volumes: provisioning failed for PVC "data"', True),
    ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims "
     "found for incoming pod..", False),
    ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.", False),
])
def test_which_messages_name_a_volume(message: str, named: bool) -> None:
    assert names_volume(message) is named


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sweeps"


def test_the_worked_examples_of_the_docs() -> None:
    """docs/sweeps.md: the two training jobs without and with Coscheduling; the StatefulSet replica
    that waits for its disk's zone, however many nodes zone us-east-1c has."""
    gangs = json.loads(_run("sweep", str(EXAMPLES / "gang-jobs.yaml"), "--local", "-o", "json").output)
    assert {c["configuration"]: (c["metrics"]["incompleteGangs"]["mean"], c["metrics"]["incompleteGangPods"]["mean"])
            for c in gangs["configurations"]} == {"schedulerConfig=default": (2, 8),
                                                   "schedulerConfig=coscheduling": (0, 0)}
    assert "volumePending" not in gangs["configurations"][0]["metrics"]
    zone = json.loads(_run("sweep", str(EXAMPLES / "zone-outage.yaml"), "--local", "-o", "json").output)
    assert {c["configuration"]: c["metrics"]["volumePending"]["mean"] for c in zone["configurations"]} == {
        "nodePoolCount=1": 1, "nodePoolCount=2": 1, "nodePoolCount=4": 1}
    assert "incompleteGangs" not in zone["configurations"][0]["metrics"]


def test_extended_resources_allocation_per_variant_and_over_seeds(tmp_path: Path) -> None:
    """GPU nodes: each variant's nvidia.com/gpu allocation is the GPUs requested over the GPUs the
    GPU nodes have, as a reader of the cluster finds it; nodes without GPUs do not count."""
    gpu = {"nvidia.com/gpu": "4"}
    trainer = make_pod("trainer", cpu="1")
    trainer["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "nvidia.com/gpu": "3"},
                                                      "limits": {"nvidia.com/gpu": "3"}}
    _write(tmp_path / "cluster.yaml", [make_node("g1", allocatable=gpu), make_node("g2", allocatable=gpu),
                                       make_node("cpu-only"), trainer, make_pod("web", cpu="1"),
                                       scenario_document(seed=1)])
    sweep = _sweep(tmp_path, "cluster.yaml", seeds=[1, 2])
    out = _run("sweep", str(sweep), "--local", "-o", "json", "--parquet", str(tmp_path / "s.parquet"))
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    for variant in document["variants"]:
        assert variant["metrics"]["allocationByResource"] == {"nvidia.com/gpu": 3 / 8}
    summary = document["configurations"][0]["allocationByResource"]["nvidia.com/gpu"]
    assert summary["mean"] == pytest.approx(3 / 8) and summary["n"] == 2
    assert pq.read_table(tmp_path / "s.parquet").column("allocationByResource.nvidia.com/gpu").to_pylist() == [
        3 / 8, 3 / 8]
    assert "nvidia.com/gpu allocation" in _run("sweep", str(sweep), "--local").output
