"""What the table output groups and adds by, worked out from the finished simulation.

The SimulationResult (the JSON contract) names each pod's node and phase and each node's cpu and
memory, not who owns a pod, what labels a node has or its extended resources; the tables need those
to summarise a production cluster. Rather than grow every result by them, :func:`cluster_facts` reads
them from the finished simulation, for the table output only:

* a pod's workload: its controller (``ownerReferences`` with ``controller: true``), followed up one
  level where the controller is itself managed: a ReplicaSet to its Deployment, a Job to its CronJob.
  A ReplicaSet that is not in the cluster (a dump of pods only) counts as its Deployment's when the pod
  carries the ``pod-template-hash`` label the Deployment controller adds and the ReplicaSet's name ends
  with it. Pods without a controller are judged by name (:func:`workload_by_name`).
* a node's pool: the first of the labels clusters put their pools in (:data:`POOL_LABELS`; or the one
  the user names) that the node has; a node with none of them has no pool here.
* extended resources (``nvidia.com/gpu``, ...): requested and allocatable per node at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: the labels node pools are named by, in the order they are tried: EKS managed node groups, GKE node
#: pools, AKS agent pools (the old label and the new), Karpenter node pools, then the instance type
POOL_LABELS = ("eks.amazonaws.com/nodegroup", "cloud.google.com/gke-nodepool", "agentpool",
               "kubernetes.azure.com/agentpool", "karpenter.sh/nodepool", "node.kubernetes.io/instance-type")
#: the label the Deployment controller puts on its ReplicaSets' pods (their name's suffix)
POD_TEMPLATE_HASH = "pod-template-hash"


@dataclass(frozen=True)
class Workload:
    kind: str  # Deployment, StatefulSet, DaemonSet, CronJob, Job, ReplicaSet, ...; "" when judged by name
    name: str  # namespace/name


@dataclass(frozen=True)
class ClusterFacts:
    #: pod key -> the workload it belongs to (every pod of the result)
    workloads: dict[str, Workload] = field(default_factory=dict)
    #: node -> (label, value) of its pool; nodes without a pool label are left out
    pools: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: node -> extended resource -> (requested, allocatable), for nodes that have any (extended
    #: resources come in whole units: upstream refuses fractions of them)
    extended: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)

    def extended_names(self) -> list[str]:
        """The extended resources present on any node, sorted."""
        return sorted({name for resources in self.extended.values() for name in resources})


def workload_by_name(pod_key: str) -> str:
    """``namespace/name`` with the suffixes controllers generate taken off (``web-7d4b9c5f8-x2k9p`` →
    ``web``, ``batch-12`` → ``batch``): the workload a pod without a controller most likely belongs
    to, judged by its name."""
    namespace, _, name = pod_key.partition("/")
    parts = name.split("-")
    while len(parts) > 1 and (parts[-1].isdigit() or (len(parts[-1]) in (5, 9, 10) and _generated(parts[-1]))):
        parts.pop()
    return f"{namespace}/{'-'.join(parts)}"


def _generated(word: str) -> bool:
    """Characters of a generated name suffix (no vowels, as Kubernetes' name generator uses)."""
    return all(c in "bcdfghjklmnpqrstvwxz2456789" for c in word)


def _controller(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


#: the kinds whose objects are managed by another controller: kind -> (the manager's kind)
_MANAGED_BY = {"ReplicaSet": "Deployment", "Job": "CronJob"}


def workload_of(pod_key: str, owner: tuple[str, str, str, str] | None, labels: Mapping[str, str],
                lookup: Callable[[str, str, str], Mapping[str, Any] | None]) -> Workload:
    """The workload of the pod ``pod_key`` whose controller is ``owner`` (namespace, kind, name, uid;
    None for none) and whose labels are ``labels``; ``lookup(kind, namespace, name)`` finds an object."""
    if owner is None:
        return Workload("", workload_by_name(pod_key))
    namespace, kind, name, _uid = owner
    manager_kind = _MANAGED_BY.get(kind)
    if manager_kind is not None:
        manager = _controller(lookup(kind, namespace, name))
        if manager is not None and manager.get("kind") == manager_kind:
            return Workload(manager_kind, f"{namespace}/{manager.get('name')}")
        pod_hash = labels.get(POD_TEMPLATE_HASH)
        if kind == "ReplicaSet" and manager is None and pod_hash and name.endswith("-" + pod_hash):
            return Workload("Deployment", f"{namespace}/{name[:-len(pod_hash) - 1]}")
    return Workload(kind, f"{namespace}/{name}")


def pool_of(labels: Mapping[str, str], pool_labels: tuple[str, ...]) -> tuple[str, str] | None:
    """(label, value) of the first of ``pool_labels`` the node has, or None."""
    return next(((key, labels[key]) for key in pool_labels if labels.get(key)), None)


def pool_by_name(node: str) -> str:
    """A node's pool judged by its name, for nodes without a pool label: the name without its last
    dash-separated part (``pool-a-007`` → ``pool-a``)."""
    head, sep, _ = node.rpartition("-")
    return head if sep and head else node


def cluster_facts(outcome: Any, pool_label: str | None = None) -> ClusterFacts:
    """The facts of a finished simulation (a ``SimulationOutcome``); ``pool_label``: the label that
    names node pools (default: the first of :data:`POOL_LABELS` each node has)."""
    sim = outcome.simulation
    cluster, history = sim.cluster, sim.history
    # a pod's workload depends on its controller (and the pod-template-hash label) only: found once
    # per controller, not per pod (the API server's reads copy the object read)
    found: dict[tuple[tuple[str, str, str, str], str | None], Workload] = {}
    workloads = {}
    for key in outcome.result["pods"]:
        owner, labels = history.owners.get(key), history.labels.get(key) or {}
        if owner is None:
            workloads[key] = workload_of(key, None, labels, cluster.get)
            continue
        memo = (owner, labels.get(POD_TEMPLATE_HASH))
        workload = found.get(memo)
        if workload is None:
            workload = found[memo] = workload_of(key, owner, labels, cluster.get)
        workloads[key] = workload
    labels = (pool_label,) if pool_label else POOL_LABELS
    pools: dict[str, tuple[str, str]] = {}
    for node in cluster.list("Node"):
        pool = pool_of(node["metadata"].get("labels") or {}, labels)
        if pool is not None:
            pools[node["metadata"]["name"]] = pool
    return ClusterFacts(workloads, pools, outcome.extended_resources())
