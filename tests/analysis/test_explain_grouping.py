"""`kubesched explain` at production size: nodes with the same verdicts are one row (as kube-scheduler
counts them, "393 Insufficient cpu"), the few exceptions are named, and every node is still there
behind `--nodes all` and in the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from kubesched.analysis.diagnose import natural_key
from kubesched.cli.main import cli
from kubesched.testkit.dumps.cluster import ClusterDump

GENERAL, GPU, CORDONED, SMALL = 392, 5, 2, 1
TOTAL = GENERAL + GPU + CORDONED + SMALL


def _names(nodes: list[dict[str, Any]]) -> list[str]:
    return sorted((node["metadata"]["name"] for node in nodes), key=natural_key)


def _dump(tmp_path: Path) -> tuple[Path, list[str], list[str], list[str], str]:
    """400 nodes of EKS node groups: general ones of 4 cpu, GPU ones of 16 cpu tainted for GPU pods,
    two cordoned, one of 8 cpu; a pod asking for 20 cpu, pending on all of them for one reason or two.
    The file, the names of the general and 8-cpu nodes, the GPU ones, the cordoned ones, and the pod."""
    dump = ClusterDump()
    general = dump.eks_nodegroup("general", GENERAL, cpu="4", memory="16Gi")
    taint = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}]
    gpu = dump.eks_nodegroup("gpu", GPU, cpu="16", memory="64Gi", instance_type="g5.4xlarge", taints=taint,
                             extended={"nvidia.com/gpu": "1"})
    cordoned = dump.eks_nodegroup("general", CORDONED, cpu="4", memory="16Gi", unschedulable=True)
    small = dump.eks_nodegroup("large", SMALL, cpu="8", memory="32Gi", instance_type="m6i.2xlarge")
    dump.deployment("report", 1, [None], namespace="analytics", cpu="20")
    path = dump.write(tmp_path / "snap.json")
    pod = next(p for p in dump.pods if p["metadata"]["namespace"] == "analytics")
    return (path, _names(general + small), _names(gpu), _names(cordoned), f"analytics/{pod['metadata']['name']}")


def _explain(*args: str) -> Result:
    return CliRunner().invoke(cli, ["explain", *args], env={"COLUMNS": "200"})


def test_nodes_with_the_same_verdicts_are_one_row(tmp_path: Path) -> None:
    path, general, gpu, cordoned, pod = _dump(tmp_path)
    result = _explain(pod, str(path))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) < 40, result.output
    rows = [line for line in lines if line.startswith("│")]
    text = " ".join(result.output.split())
    assert f"Filters that reject the pod, nodes grouped by verdict ({TOTAL} nodes; --nodes all lists each)" in text
    # the general nodes and the 8-cpu one: one row, counted, with a few examples
    assert any(f"{GENERAL + SMALL} nodes, e.g. {general[0]}," in row for row in rows), rows
    assert any("Insufficient cpu" in row and "short by 16" in row for row in rows)
    # the GPU nodes' two reasons, and the two cordoned nodes named (a group that small is listed)
    assert f"{GPU} nodes, e.g. {gpu[0]}" in text
    assert "add a toleration for taint" in text and "nvidia.com/gpu=present:NoSchedule" in text
    assert any(row.startswith(f"│ {cordoned[0]},") and "NodeUnschedulable" in row for row in rows)
    assert any(row.startswith(f"│ {cordoned[1]} ") for row in rows)
    assert (f"0/{TOTAL} nodes are available: {CORDONED} node(s) were unschedulable, {GENERAL + SMALL} Insufficient "
            f"cpu, {GPU} node(s) had untolerated taint {{nvidia.com/gpu: present}}.") in text


def test_every_node_is_listed_behind_a_flag_and_in_the_json(tmp_path: Path) -> None:
    path, _, gpu, _, pod = _dump(tmp_path)
    every = _explain(pod, str(path), "--nodes", "all")
    assert every.exit_code == 0, every.output
    assert "Every filter that rejects the pod, per node" in every.output
    rows = [line for line in every.output.splitlines() if line.startswith("│ ip-")]
    assert len(rows) == TOTAL
    data = json.loads(_explain(pod, str(path), "-o", "json").output)
    assert len(data["nodes"]) == TOTAL
    groups = {tuple(f["plugin"] for f in g["failures"]): g for g in data["nodeGroups"]}
    assert groups[("NodeResourcesFit",)]["count"] == GENERAL + SMALL
    assert groups[("TaintToleration", "NodeResourcesFit")]["nodes"] == gpu
    assert sum(g["count"] for g in data["nodeGroups"]) == TOTAL


def test_a_small_cluster_keeps_one_row_per_node(tmp_path: Path) -> None:
    dump = ClusterDump()
    dump.eks_nodegroup("general", 3, cpu="4", memory="16Gi")
    dump.deployment("report", 1, [None], namespace="analytics", cpu="20")
    path = dump.write(tmp_path / "small.yaml")
    pod = f"analytics/{dump.pods[0]['metadata']['name']}"
    out = _explain(pod, str(path))
    assert out.exit_code == 0, out.output
    assert "Every filter that rejects the pod, per node" in out.output
    assert sum(1 for line in out.output.splitlines() if line.startswith("│ ip-")) == 3
    grouped = _explain(pod, str(path), "--nodes", "grouped")
    assert "nodes grouped by verdict (3 nodes" in " ".join(grouped.output.split())
