"""`kubesched whatif` on kubectl dumps of a real-looking cluster: 20 EKS nodes, Deployments in several
namespaces, a DaemonSet, PriorityClasses, PodDisruptionBudgets, and pending pods carrying the message
kube-scheduler wrote on them. Every check is on what a user reads: the JSON result or the table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from kubesched.cli.main import cli
from kubesched.testkit.dumps import ClusterDump, fit_message

NODES = 20
#: what kube-scheduler v1.28's default profile (DefaultPreemption on) wrote on the pending checkout pods
WITH_PREEMPTION = {"No preemption victims found for incoming pod": NODES}


def _node_name(i: int) -> str:
    return f"ip-10-0-{i // 8}-{10 + i}.eu-west-1.compute.internal"


def _dump(tmp_path: Path, preemption: dict[str, int] | None = WITH_PREEMPTION, *, pending: int = 2,
          pdb_blocks_etl: bool = False) -> Path:
    """Every node holds one etl-batch pod (data, batch-low, 1500m) and one web pod (shop, standard,
    2 cpu) next to the node agent (100m): 400m free each. ``pending`` checkout pods (shop, standard,
    1 cpu) wait, each with ``preemption`` as the PostFilter's part of its message (None: none)."""
    dump = ClusterDump()
    for i in range(NODES):
        dump.node(_node_name(i), cpu="4", memory="16Gi", zone=f"eu-west-1{'abc'[i % 3]}", instance_type="m5.xlarge",
                  region="eu-west-1", provider_id=f"aws:///eu-west-1{'abc'[i % 3]}/i-0{i:016x}",
                  address=f"10.0.{i // 8}.{10 + i}")
    nodes: list[str | None] = [_node_name(i) for i in range(NODES)]
    dump.daemonset_pods("aws-node")
    dump.system_classes()
    dump.priority_class("batch-low", 100)
    dump.priority_class("standard", 10000)
    dump.deployment("etl-batch", NODES, nodes, namespace="data", cpu="1500m", memory="2Gi",
                    priority_class="batch-low", priority=100)
    dump.deployment("web", NODES, nodes, namespace="shop", cpu="2", memory="2Gi", priority_class="standard",
                    priority=10000)
    message = fit_message(NODES, {"Insufficient cpu": NODES}, preemption)
    dump.deployment("checkout", pending, [None] * pending, namespace="shop", cpu="1", memory="1Gi",
                    priority_class="standard", priority=10000, pending_message=message)
    if pdb_blocks_etl:
        dump.pdb("etl-batch", "data", {"app": "etl-batch"}, max_unavailable=0, allowed=0, healthy=NODES,
                 expected=NODES)
    path = tmp_path / "cluster.yaml"
    dump.write(path)
    return path


def _whatif(*args: str, output: str = "json") -> Result:
    result = CliRunner().invoke(cli, ["whatif", *args, "-o", output], terminal_width=250)
    assert result.exit_code == 0, result.output
    return result


def _json(*args: str) -> dict[str, Any]:
    return json.loads(_whatif(*args).output)


def _impact(diff: dict[str, Any], namespace: str, priority_class: str) -> dict[str, Any]:
    return next(r for r in diff["impact"] if (r["namespace"], r["priorityClass"]) == (namespace, priority_class))


# -- a class given with --apply --------------------------------------------------------------------------
NEW_CLASS = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch-critical"},
             "value": 150000, "description": "batch that must finish"}


def test_pods_given_a_class_from_apply_get_its_value(tmp_path: Path) -> None:
    cluster = _dump(tmp_path)
    new_class = tmp_path / "newclass.yaml"
    new_class.write_text(yaml.safe_dump(NEW_CLASS))
    diff = _json(str(cluster), "--apply", str(new_class), "--priority-class", "app=etl-batch:batch-critical")
    etl = {k: p for k, p in diff["changed"]["pods"].items() if k.startswith("data/etl-batch-")}
    assert len(etl) == NODES and {p["priority"] for p in etl.values()} == {150000}
    # the checkout pods (10000) preempt etl-batch pods in the baseline, and none once they are above them
    assert _impact(diff, "data", "batch-low")["preemptedBefore"] == 2
    row = _impact(diff, "data", "batch-critical")
    assert (row["preemptedBefore"], row["preemptedAfter"], row["runningAfter"]) == (0, 0, NODES)
    assert diff["preempted"] == [] and diff["changed"]["rejected"] == []
    assert diff["changed"]["pods"][next(k for k in diff["changed"]["pods"] if k.startswith("shop/checkout-"))][
        "phase"] == "Pending"


def test_a_namespace_given_with_apply_is_not_refused_for_existing_before_its_pods(tmp_path: Path) -> None:
    cluster = _dump(tmp_path)
    namespace = tmp_path / "ns.yaml"
    namespace.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": "data", "labels": {"team": "data"}}}))
    diff = _json(str(cluster), "--apply", str(namespace))
    assert diff["changed"]["rejected"] == []
