"""The table of kinds (:mod:`kubesched.k8s.kinds`): what a developer adding a kind relies on. Its
names agree with the API server's (``kubectl api-resources`` of v1.28, plus the two CRDs), the
loader accepts exactly its manifest kinds, every such kind has its known field names, and a
snapshot is restored in an order that keeps the cluster consistent."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from kubesched.api.known_fields_data import KIND_TYPES
from kubesched.api.snapshot import plan_initial_objects
from kubesched.api.validation import validate_object
from kubesched.cluster.kube.resources import INFORMED, OPTIONAL_INFORMED, Resource
from kubesched.cluster.kube.snapshot import SNAPSHOT_RESOURCES
from kubesched.k8s.kinds import KINDS, MANIFEST_KINDS, api_version, is_namespaced, resource_name, restore_rank

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: kind -> (group, version, plural, namespaced), as the API server serves them (upstream's
#: ``kubectl api-resources``; NodeResourceTopology and PodGroup from their CRDs)
UPSTREAM = {
    "Pod": ("", "v1", "pods", True),
    "Node": ("", "v1", "nodes", False),
    "Namespace": ("", "v1", "namespaces", False),
    "ResourceQuota": ("", "v1", "resourcequotas", True),
    "Service": ("", "v1", "services", True),
    "ReplicationController": ("", "v1", "replicationcontrollers", True),
    "PersistentVolume": ("", "v1", "persistentvolumes", False),
    "PersistentVolumeClaim": ("", "v1", "persistentvolumeclaims", True),
    "PriorityClass": ("scheduling.k8s.io", "v1", "priorityclasses", False),
    "PodDisruptionBudget": ("policy", "v1", "poddisruptionbudgets", True),
    "Deployment": ("apps", "v1", "deployments", True),
    "ReplicaSet": ("apps", "v1", "replicasets", True),
    "StatefulSet": ("apps", "v1", "statefulsets", True),
    "DaemonSet": ("apps", "v1", "daemonsets", True),
    "Job": ("batch", "v1", "jobs", True),
    "RuntimeClass": ("node.k8s.io", "v1", "runtimeclasses", False),
    "StorageClass": ("storage.k8s.io", "v1", "storageclasses", False),
    "CSINode": ("storage.k8s.io", "v1", "csinodes", False),
    "CSIDriver": ("storage.k8s.io", "v1", "csidrivers", False),
    "CSIStorageCapacity": ("storage.k8s.io", "v1", "csistoragecapacities", True),
    "Lease": ("coordination.k8s.io", "v1", "leases", True),
    "Event": ("events.k8s.io", "v1", "events", True),
    "NodeResourceTopology": ("topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", False),
    "PodGroup": ("scheduling.x-k8s.io", "v1alpha1", "podgroups", True),
}

#: the restore order of a snapshot, kind by kind (kinds of one entry share a rank)
RESTORE_ORDER = [
    {"Namespace"}, {"PriorityClass"}, {"Node"}, {"NodeResourceTopology"}, {"ResourceQuota"}, {"Service"},
    {"PodDisruptionBudget"}, {"StorageClass"}, {"CSIDriver"}, {"CSINode"},
    {"RuntimeClass", "Scenario", "Event", "Lease"},
    {"PersistentVolume"}, {"PersistentVolumeClaim"}, {"CSIStorageCapacity"}, {"PodGroup"},
    {"Pod"}, {"ReplicationController"}, {"ReplicaSet"}, {"StatefulSet"}, {"DaemonSet"}, {"Job"}, {"Deployment"},
]


def test_every_kind_but_kubesched_s_own_is_served_as_upstream_serves_it() -> None:
    assert set(KINDS) == set(UPSTREAM) | {"Scenario"}
    for name, (group, version, plural, namespaced) in UPSTREAM.items():
        kind = KINDS[name]
        assert (kind.group, kind.version, kind.plural, kind.namespaced) == (group, version, plural, namespaced), name
        assert is_namespaced(name) is namespaced


@pytest.mark.parametrize(("kind", "version", "resource"), [
    ("Pod", "v1", "pods"), ("Node", "v1", "nodes"), ("PersistentVolumeClaim", "v1", "persistentvolumeclaims"),
    ("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses.scheduling.k8s.io"),
    ("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets.policy"),
    ("CSINode", "storage.k8s.io/v1", "csinodes.storage.k8s.io"),
    ("StorageClass", "storage.k8s.io/v1", "storageclasses.storage.k8s.io"),
    ("RuntimeClass", "node.k8s.io/v1", "runtimeclasses.node.k8s.io"),
    ("Deployment", "apps/v1", "deployments.apps"),
])
def test_api_version_and_the_resource_api_server_messages_name(kind: str, version: str, resource: str) -> None:
    assert api_version(kind) == version
    assert resource_name(kind) == resource


def test_the_real_cluster_backend_talks_to_each_kind_s_upstream_paths() -> None:
    for name, (group, version, plural, namespaced) in UPSTREAM.items():
        resource = Resource.of(name)
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        assert resource.collection_path() == f"{prefix}/{plural}"
        in_namespace = f"{prefix}/namespaces/ns/{plural}/x" if namespaced else f"{prefix}/{plural}/x"
        assert resource.object_path("ns", "x") == in_namespace
        assert resource.api_version == (f"{group}/{version}" if group else version)


def test_what_the_real_cluster_backend_reads_the_loader_accepts() -> None:
    """A snapshot of a cluster (``kubesched snapshot``) and what the scheduler watches load back."""
    for resource in (*SNAPSHOT_RESOURCES, *INFORMED, *OPTIONAL_INFORMED):
        assert resource.kind in MANIFEST_KINDS, resource.kind


def test_the_loader_accepts_the_manifest_kinds_and_no_other() -> None:
    for name, kind in KINDS.items():
        obj = {"apiVersion": kind.api_version, "kind": name, "metadata": {"name": "x"}}
        refused = [msg for _, msg in validate_object(obj) if msg.startswith("unsupported kind")]
        assert bool(refused) is not kind.in_manifests, name
    assert set(KINDS) - set(MANIFEST_KINDS) == {"Event", "Lease"}


def test_every_kind_of_the_examples_is_a_manifest_kind() -> None:
    docs = [doc for path in EXAMPLES.rglob("*.yaml") for doc in yaml.safe_load_all(path.read_text())
            if isinstance(doc, dict)]
    kinds = {obj["kind"] for doc in docs for obj in (doc.get("items") if doc.get("kind") == "List" else [doc])}
    not_objects = {"KubeSchedulerConfiguration", "Sweep", "Plan"}  # a scheduler's or the sweep's own documents
    assert kinds - not_objects <= set(MANIFEST_KINDS)


def test_every_kubernetes_kind_of_a_manifest_has_its_known_field_names() -> None:
    """The generated ``known_fields_data`` (``tools/gen_known_fields.py``) covers the table's kinds."""
    assert {name for name, kind in KINDS.items() if kind.has_known_fields} == set(KIND_TYPES)
    assert not KINDS["Scenario"].has_known_fields


def test_restore_ranks_keep_the_order() -> None:
    ranks = [{restore_rank(kind) for kind in group} for group in RESTORE_ORDER]
    assert all(len(rank) == 1 for rank in ranks)
    assert [rank.pop() for rank in ranks] == sorted({kind.restore_rank for kind in KINDS.values()})
    assert set().union(*RESTORE_ORDER) == set(KINDS)


def _existing(kind: str, name: str) -> dict:
    meta = {"name": name, "uid": f"uid-{kind}-{name}", "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z"}
    if is_namespaced(kind):
        meta["namespace"] = "ns"
    return {"apiVersion": api_version(kind), "kind": kind, "metadata": meta}


def test_a_snapshot_restores_what_pods_need_before_the_pods_and_their_controllers_after() -> None:
    kinds = [name for name, kind in MANIFEST_KINDS.items() if name != "Scenario"]
    objects = [_existing(kind, "x") for kind in kinds]
    random.Random(7).shuffle(objects)
    order = [obj["kind"] for obj in plan_initial_objects(objects).restore]
    before_pods = ["Namespace", "PriorityClass", "Node", "NodeResourceTopology", "StorageClass", "CSIDriver",
                   "CSINode", "PersistentVolume", "PersistentVolumeClaim", "CSIStorageCapacity", "RuntimeClass",
                   "PodGroup", "ResourceQuota", "PodDisruptionBudget"]
    assert all(order.index(kind) < order.index("Pod") for kind in before_pods)
    assert order.index("Namespace") < order.index("PriorityClass") < order.index("Node")
    assert order.index("StorageClass") < order.index("PersistentVolume") < order.index("PersistentVolumeClaim")
    controllers = ["ReplicationController", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "Deployment"]
    assert [order.index(kind) for kind in ["Pod", *controllers]] == sorted(order.index(k) for k in ["Pod", *controllers])
    assert order[-1] == "Deployment"  # last, so that it finds its ReplicaSets
