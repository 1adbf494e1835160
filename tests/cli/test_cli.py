"""The commands users type: exit codes, output formats, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubesched.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "preemption-design" / "example-1.yaml")


def test_simulate_json_is_byte_identical_across_runs() -> None:
    runner = CliRunner()
    first = runner.invoke(cli, ["simulate", EXAMPLE, "-o", "json"])
    second = runner.invoke(cli, ["simulate", EXAMPLE, "-o", "json"])
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    result = json.loads(first.output)
    assert result["kind"] == "SimulationResult"
    assert result["pods"]["default/c"]["node"] == "node-1"


def test_simulate_table_shows_pods_nodes_and_timeline() -> None:
    out = CliRunner().invoke(cli, ["simulate", EXAMPLE]).output
    for text in ("Pods", "Nodes", "Timeline", "default/c", "Preempted"):
        assert text in out


def test_simulate_explain_shows_the_preemption_decision() -> None:
    out = CliRunner().invoke(cli, ["simulate", EXAMPLE, "--explain", "c"]).output
    assert "preemption for default/c: preempted" in out
    assert "victims default/a(100), default/b(100)" in out


def test_invalid_manifest_exits_2_naming_file_document_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: 4}}\n---\n"
                   "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
                   "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 12x}}}]}\n")
    result = CliRunner().invoke(cli, ["simulate", str(bad)])
    assert result.exit_code == 2
    assert "bad.yaml: document 2" in result.output
    assert "spec.containers[0].resources.requests.cpu" in result.output
    assert "Traceback" not in result.output


def test_invalid_scheduler_configuration_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "cfg.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: 4}}\n---\n"
                   "apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n"
                   "  schedulerConfiguration:\n    apiVersion: kubescheduler.config.k8s.io/v1\n"
                   "    kind: KubeSchedulerConfiguration\n"
                   "    profiles: [{schedulerName: x, plugins: {multiPoint: {enabled: [{name: NoSuchPlugin}]}}}]\n")
    result = CliRunner().invoke(cli, ["simulate", str(bad)])
    assert result.exit_code == 2
    assert "NoSuchPlugin" in result.output and "not registered" in result.output


def test_explain_lists_every_failing_filter_and_preemption_outlook(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "spec: {unschedulable: true, taints: [{key: k, value: v, effect: NoSchedule}]}\n"
        "status: {allocatable: {cpu: 1, memory: 1Gi, pods: 10}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 2}}}]}\n")
    result = CliRunner().invoke(cli, ["explain", "p", str(scenario), "-o", "json"])
    assert result.exit_code == 0, result.output
    diagnosis = json.loads(result.output)
    failures = [f["plugin"] for f in diagnosis["nodes"][0]["failures"]]
    assert failures == ["NodeUnschedulable", "TaintToleration", "NodeResourcesFit"]
    # upstream reports only the first failing plugin, then what its preemption attempt found
    assert diagnosis["upstreamMessage"] == (
        "0/1 nodes are available: 1 node(s) were unschedulable. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling..")
    assert diagnosis["preemption"]["outcome"] == "no candidates"
    # ... and it is the message the simulation's FailedScheduling event carries
    simulated = json.loads(CliRunner().invoke(cli, ["simulate", str(scenario), "-o", "json"]).output)
    event = next(e for e in simulated["events"] if e["reason"] == "FailedScheduling")
    assert event["message"] == diagnosis["upstreamMessage"]
    # each rejecting filter has its own hint
    hints = {f["plugin"]: f["hints"] for f in diagnosis["nodes"][0]["failures"]}
    assert hints["TaintToleration"] == ["add a toleration for taint k=v:NoSchedule"]
    assert hints["NodeResourcesFit"] == ["needs 2 cpu, 1 free of 1 (short by 1)"]


def test_whatif_outputs_table_json_and_html(tmp_path: Path) -> None:
    runner = CliRunner()
    report = tmp_path / "r.html"
    table = runner.invoke(cli, ["whatif", EXAMPLE, "--disable-preemption", "--report", str(report)])
    assert table.exit_code == 0, table.output
    assert "What if disable preemption" in table.output
    html = report.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "<script" not in html
    data = json.loads(runner.invoke(cli, ["whatif", EXAMPLE, "--disable-preemption", "-o", "json"]).output)
    assert data["kind"] == "WhatIfResult"
    assert {p["victim"] for p in data["noLongerPreempted"]} == {"default/a", "default/b"}


def test_output_is_identical_across_processes_and_hash_seeds() -> None:
    """Byte-identical results even when Python's string hashing differs between processes."""
    import os
    import subprocess
    import sys

    demo = str(ROOT / "examples" / "demo.yaml")
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run([sys.executable, "-m", "kubesched", "simulate", demo, "-o", "json", "--decisions"],
                              capture_output=True, text=True, env=env, check=True)
        outputs.add(proc.stdout)
    assert len(outputs) == 1


def test_big_runs_are_summarised_by_workload_and_pool_unless_every_pod_is_asked_for(tmp_path: Path) -> None:
    from kubesched.testkit.builders import make_deployment, make_node, make_pod

    objects = [make_node(f"pool-a-{i:03d}") for i in range(150)] + [make_node(f"pool-b-{i:03d}") for i in range(60)]
    objects += [make_deployment("web", 240, make_pod("web", cpu="500m")), make_pod("solo", cpu="100")]
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    out = CliRunner().invoke(cli, ["simulate", str(path), "--no-progress", "--events", "3"], env={"COLUMNS": "100"})
    assert out.exit_code == 0, out.output
    assert "Pods by workload (241 pods" in out.output
    rows = {line.split("│")[1].strip(): line for line in out.output.splitlines() if line.startswith("│")}
    assert [cell.strip() for cell in rows["default/web"].split("│")[2:5]] == ["Deployment", "240", "-"]
    assert [cell.strip() for cell in rows["default/solo"].split("│")[2:5]] == ["-", "-", "1"]  # no controller
    assert rows["pool-a"].split("│")[2].strip() == "150" and rows["pool-b"].split("│")[2].strip() == "60"
    assert "... 238 more events (1 FailedScheduling, 237 Scheduled); --events 0 shows them all" in out.output
    every = CliRunner().invoke(cli, ["simulate", str(path), "--no-progress", "--pods", "all"], env={"COLUMNS": "100"})
    assert every.exit_code == 0 and "Pods by workload" not in every.output
    assert sum(1 for line in every.output.splitlines() if line.startswith("│ default/web-")) == 240


def test_progress_is_reported_within_a_long_instant() -> None:
    from kubesched.api.loader import scenario_from_objects
    from kubesched.sim import simulate
    from kubesched.testkit.builders import make_deployment, make_node, make_pod

    objects = [make_node(f"n{i}") for i in range(50)] + [make_deployment("web", 1000, make_pod("web", cpu="100m"))]
    seen: list = []
    simulate(scenario_from_objects(objects, "x", "x.yaml"), progress=seen.append)
    within = [s for s in seen if s.now == 0 and 0 < s.cycles < 1000]
    assert len(within) >= 4  # the bar moves while the 1000 pods of t=0 are scheduled
    assert [s.running for s in within] == sorted(s.running for s in within)
    assert all(s.pending + s.running == 1000 for s in within)
    assert seen[-1].running == 1000 and seen[-1].pending == 0


def test_whatif_on_a_big_cluster_tabulates_only_the_classes_and_namespaces_that_change(tmp_path: Path) -> None:
    from kubesched.testkit.dumps.cluster import ClusterDump

    dump = ClusterDump()
    for i in range(4):
        dump.node(f"node-{i}", cpu="8")
    for k in range(25):  # 25 (namespace, class) pairs, only the drained node's pods move
        dump.deployment(f"app-{k}", 1, [f"node-{1 + k % 3}"], namespace=f"team-{k}")
    dump.deployment("web", 2, ["node-0", "node-0"], namespace="shop")
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump(dump.as_list(with_workloads=True)))
    out = CliRunner().invoke(cli, ["whatif", str(path), "--drain", "node-0", "--ignore-daemonsets", "--force"],
                             terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "team-3" not in out.output.split("Impact per PriorityClass")[-1]
    assert "pair(s) with no change are not shown" in out.output


def test_production_size_runs_are_summarised_by_namespace_and_node_shape(tmp_path: Path) -> None:
    """Thousands of workloads, and cloud node names that name no pool: one row per namespace and
    one per node shape, not a row per workload or per node."""
    from kubesched.testkit.builders import make_deployment, make_node, make_pod

    objects = [make_node(f"ip-10-0-{i}-7.ec2.internal", cpu="4" if i % 3 else "16") for i in range(210)]
    objects += [make_deployment(f"svc{k}", 5, make_pod(f"svc{k}", cpu="10m"), namespace=f"team-{k % 3}")
                for k in range(50)]
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    out = CliRunner().invoke(cli, ["simulate", str(path), "--no-progress"], env={"COLUMNS": "120"})
    assert out.exit_code == 0, out.output
    assert "Pods by namespace (250" in out.output
    rows = {line.split("│")[1].strip(): line for line in out.output.splitlines() if line.startswith("│")}
    assert [rows[f"team-{n}"].split("│")[2].strip() for n in range(3)] == ["85", "85", "80"]
    assert "Nodes by shape (210" in out.output
    shapes = {k: v.split("│")[2].strip() for k, v in rows.items() if " cpu / " in k}
    assert sorted(shapes.values()) == ["140", "70"] and len(shapes) == 2


def test_big_runs_merge_a_workloads_identical_failures_into_one_timeline_row(tmp_path: Path) -> None:
    from kubesched.testkit.builders import make_deployment, make_node, make_pod

    objects = [make_node(f"node-{i:03d}", cpu="4") for i in range(3)]
    objects += [make_deployment("web", 240, make_pod("web", cpu="100m")),
                make_deployment("huge", 30, make_pod("huge", cpu="64"))]
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    out = CliRunner().invoke(cli, ["simulate", str(path), "--no-progress", "-o", "json"])
    failures = [e for e in json.loads(out.output)["events"] if e["reason"] == "FailedScheduling"]
    assert len(failures) >= 30
    out = CliRunner().invoke(cli, ["simulate", str(path), "--no-progress", "--events", "0"])
    assert out.exit_code == 0, out.output
    rows = [line for line in out.output.splitlines() if "FailedScheduling" in line]
    first = failures[0]["pod"]
    merged = [row for row in rows if f"{first} and " in row]
    assert len(merged) == 1 and "0/3 nodes are available: 3 Insufficient cpu." in merged[0]
    every = CliRunner().invoke(cli, ["simulate", str(path), "--no-progress", "--events", "0", "--pods", "all"])
    assert sum(1 for line in every.output.splitlines() if "FailedScheduling" in line) == len(failures)
