"""Which workload a pod counts under in the table output's summaries, and which pool a node."""

from __future__ import annotations

from typing import Any

from kubesched.analysis.grouping import POOL_LABELS, Workload, pool_of, workload_of


def _owned_by(kind: str, name: str) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": [{"controller": True, "kind": kind, "name": name}]}}


OBJECTS = {("ReplicaSet", "shop", "web-5d8f7c9b4"): _owned_by("Deployment", "web"),
           ("ReplicaSet", "shop", "legacy-x1"): {"metadata": {}},
           ("Job", "ops", "backup-28930560"): _owned_by("CronJob", "backup")}


def _workload(pod: str, owner: str | None, labels: dict[str, str] | None = None) -> Workload:
    """``owner``: ``Kind/namespace/name``, as the run's pod history holds it (with a uid) otherwise."""
    ref = None
    if owner is not None:
        kind, namespace, name = owner.split("/", 2)
        ref = (namespace, kind, name, f"uid-of-{name}")
    return workload_of(pod, ref, labels or {}, lambda kind, ns, name: OBJECTS.get((kind, ns, name)))


def test_a_pod_counts_under_the_controller_of_its_controller() -> None:
    assert _workload("shop/web-5d8f7c9b4-x2k9p", "ReplicaSet/shop/web-5d8f7c9b4") == Workload("Deployment", "shop/web")
    assert _workload("ops/backup-28930560-abcde", "Job/ops/backup-28930560") == Workload("CronJob", "ops/backup")
    assert _workload("data/db-0", "StatefulSet/data/db") == Workload("StatefulSet", "data/db")
    assert _workload("ops/once-abcde", "Job/ops/once") == Workload("Job", "ops/once")


def test_a_replicaset_suffix_is_taken_off_only_for_a_deployments_pods() -> None:
    # not in the cluster: the Deployment's pod-template-hash label on the pod tells
    assert (_workload("shop/api-6f9c8d7b5-qwrtz", "ReplicaSet/shop/api-6f9c8d7b5", {"pod-template-hash": "6f9c8d7b5"})
            == Workload("Deployment", "shop/api"))
    assert _workload("shop/api-6f9c8d7b5-qwrtz", "ReplicaSet/shop/api-6f9c8d7b5") == Workload(
        "ReplicaSet", "shop/api-6f9c8d7b5")
    assert _workload("shop/legacy-x1-abcde", "ReplicaSet/shop/legacy-x1") == Workload("ReplicaSet", "shop/legacy-x1")


def test_pods_without_a_controller_are_judged_by_name() -> None:
    assert _workload("default/batch-12", None) == Workload("", "default/batch")


def test_a_node_pool_is_the_first_pool_label_the_node_has() -> None:
    labels = {"node.kubernetes.io/instance-type": "m6i.xlarge", "karpenter.sh/nodepool": "default",
              "kubernetes.azure.com/agentpool": "userpool"}
    assert pool_of(labels, POOL_LABELS) == ("kubernetes.azure.com/agentpool", "userpool")
    assert pool_of({"node.kubernetes.io/instance-type": "m6i.xlarge"}, POOL_LABELS) == (
        "node.kubernetes.io/instance-type", "m6i.xlarge")
    assert pool_of({"kubernetes.io/hostname": "n1"}, POOL_LABELS) is None
    assert pool_of(labels, ("team",)) is None
