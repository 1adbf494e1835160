"""The table output of production-shaped clusters as users read it: EKS node names, node groups, many
Deployments, GPUs; on a terminal, piped, and summarised."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.cli.main import cli
from kubesched.testkit.dumps.cluster import ClusterDump

GPU = "nvidia.com/gpu"
GPU_TAINT = {"effect": "NoSchedule", "key": GPU, "value": "present"}


def eks_cluster(general: int, gpu: int, apps: int, replicas: int) -> ClusterDump:
    """An EKS cluster: a general node group and a GPU one (4 GPUs a node, 2 of them requested on
    each by a GPU Deployment), Deployments ``app-0``, ``app-20``, ``app-40``, ... of ``replicas``
    pods in team-0, a StatefulSet and a DaemonSet."""
    dump = ClusterDump()
    dump.system_classes()
    names = [n["metadata"]["name"] for n in dump.eks_nodegroup("general-m6i", general)]
    gpus = [n["metadata"]["name"] for n in dump.eks_nodegroup(
        "gpu-g5", gpu, instance_type="g5.12xlarge", cpu="47810m", memory="182Gi", taints=[GPU_TAINT],
        extended={GPU: "4"})]
    for k in range(apps):
        dump.deployment(f"app-{20 * k}", replicas, [names[(k * replicas + i) % len(names)] for i in range(replicas)],
                        namespace="team-0")
    dump.deployment("llm-serving", gpu, gpus, "ml", resources={
        "limits": {GPU: "2"}, "requests": {"cpu": "4", "memory": "16Gi", GPU: "2"}})
    dump.statefulset("postgres", names[:3], "data")
    dump.daemonset_pods("aws-node")
    dump.sort()
    return dump


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 nodes: every pod and node gets a row."""
    return eks_cluster(18, 2, 4, 3).write(tmp_path_factory.mktemp("eks") / "small.yaml")


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """312 nodes, about 600 pods: summarised."""
    return eks_cluster(300, 12, 30, 8).write(tmp_path_factory.mktemp("eks") / "large.yaml")


def simulate(*args: str, columns: int | None = None) -> str:
    """``kubesched simulate ARGS`` with standard output a pipe (``columns``: $COLUMNS, else unset)."""
    out = CliRunner().invoke(cli, ["simulate", *args, "--no-progress"],
                             env={"COLUMNS": None if columns is None else str(columns)})
    assert out.exit_code == 0, out.output
    return out.output


def rows_of(output: str, title: str) -> list[list[str]]:
    """The cells of the rows of the table titled ``title`` (a cell folded over lines joined)."""
    table = output.split("\n" + title, 1)[1].split("└", 1)[0]
    rows: list[list[str]] = []
    for line in table.splitlines()[1:]:
        if not line.startswith("│"):
            continue
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        if rows and cells[0] == "" or (rows and not any(cells[1:])):  # the rest of a folded row
            rows[-1] = [a + b for a, b in zip(rows[-1], cells, strict=True)]
        else:
            rows.append(cells)
    return rows


def test_piped_tables_show_every_node_name_whole(small: Path) -> None:
    out = simulate(str(small))
    nodes = {row[0] for row in rows_of(out, "Nodes (requested")}
    assert len(nodes) == 20 and all(re.fullmatch(r"ip-10-0-\d+-\d+\.us-west-2\.compute\.internal", n) for n in nodes)
    pods = rows_of(out, "Pods")
    assert {row[3] for row in pods} <= nodes and all("…" not in row[0] for row in pods)


def test_a_terminal_width_shortens_names_only_where_they_stay_distinct(small: Path) -> None:
    out = simulate(str(small), columns=80)
    assert max(len(line) for line in out.splitlines()) <= 80
    nodes = [row[0] for row in rows_of(out, "Nodes (requested")]
    assert len(set(nodes)) == 20  # not twenty "ip-10-0-0-1…ute.internal"
    assert all(re.fullmatch(r"ip-10-0-\d+-\d+…", n) for n in nodes)  # the shared domain goes first
    pods = rows_of(out, "Pods")
    assert len({row[0] for row in pods}) == len(pods)


def test_wide_output_shows_names_whole_whatever_the_width(small: Path) -> None:
    out = simulate(str(small), "-o", "wide", columns=80)
    assert all(n.endswith(".us-west-2.compute.internal") for n in (row[0] for row in rows_of(out, "Nodes (requested")))


def test_the_nodes_table_has_a_column_per_extended_resource(small: Path) -> None:
    out = simulate(str(small))
    header = out.split("Nodes (requested", 1)[1].splitlines()[2]
    assert GPU in header
    gpu = {row[0]: row[-1] for row in rows_of(out, "Nodes (requested")}
    assert sorted(gpu.values()) == ["-"] * 18 + ["2 / 4"] * 2


def test_big_runs_are_summarised_by_controller_and_node_group(large: Path) -> None:
    out = simulate(str(large), "--events", "3")
    workloads = {(row[0], row[1]): row[2] for row in rows_of(out, "Pods by workload")}
    assert workloads[("team-0/app-20", "Deployment")] == "8"  # not "team-0/app 240"
    assert sum(1 for name, kind in workloads if name.startswith("team-0/app-")) == 30
    assert workloads[("data/postgres", "StatefulSet")] == "3"
    assert workloads[("kube-system/aws-node", "DaemonSet")] == "312"
    assert workloads[("ml/llm-serving", "Deployment")] == "12"
    assert "Nodes by pool (eks.amazonaws.com/nodegroup; 312 nodes" in out
    pools = {row[0]: row for row in rows_of(out, "Nodes by pool")}
    assert sorted(pools) == ["general-m6i", "gpu-g5"]
    assert pools["general-m6i"][1] == "300" and pools["gpu-g5"][1] == "12"
    assert pools["gpu-g5"][-1] == "24 / 48" and pools["general-m6i"][-1] == "-"


def test_pods_of_a_dump_without_its_replicasets_still_count_as_their_deployment(tmp_path: Path) -> None:
    path = eks_cluster(300, 12, 30, 8).write(tmp_path / "pods-only.yaml", with_workloads=False)
    workloads = {(row[0], row[1]): row[2] for row in rows_of(simulate(str(path)), "Pods by workload")}
    assert workloads[("team-0/app-20", "Deployment")] == "8"  # by the pods' pod-template-hash label
    assert workloads[("data/postgres", "StatefulSet")] == "3"


def test_the_pool_label_can_be_named(large: Path) -> None:
    out = simulate(str(large), "--pool-label", "topology.kubernetes.io/zone")
    pools = {row[0]: row[1] for row in rows_of(out, "Nodes by pool")}
    assert pools == {"us-west-2a": "104", "us-west-2b": "104", "us-west-2c": "104"}


def test_the_command_list_gives_each_summary_whole() -> None:
    out = CliRunner().invoke(cli, ["--help"], terminal_width=80).output
    commands = " ".join(out.split("Commands:", 1)[1].split())
    assert "..." not in commands
    for sentence in ("explain Explain why POD is pending in SNAPSHOT or in a live cluster read through --kubeconfig.",
                     "run Schedule the pods of a real cluster whose schedulerName names one of the profiles.",
                     "simulate Simulate SCENARIO and report what the scheduler did.",
                     "snapshot Capture the cluster of KUBECONFIG read-only."):
        assert sentence in commands
