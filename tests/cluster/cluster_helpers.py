"""Helpers for the embedded-cluster tests: a cluster factory, running the loop, and the objects these
tests create (the kit's builders with this area's defaults)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.cluster.embedded.apiserver.admission import ensure_system_priority_classes
from kubesched.cluster.embedded.cluster import EmbeddedCluster
from kubesched.cluster.embedded.eventlog import EventLog
from kubesched.des.clock import EventLoop
from kubesched.testkit.builders import (
    make_container,
    make_daemonset,
    make_deployment,
    make_job,
    make_node,
    make_pdb,
    make_pod,
    make_quota,
    make_replicaset,
    make_statefulset,
)

Obj = dict[str, Any]


def make_cluster(*, controllers: bool = True) -> EmbeddedCluster:
    loop = EventLoop()
    cluster = EmbeddedCluster(loop, EventLog(loop.now), np.random.default_rng(0))
    ensure_system_priority_classes(cluster.api)
    if controllers:
        cluster.start_controllers()
    return cluster


def run(cluster: EmbeddedCluster, until: float) -> None:
    """Run the simulation loop up to ``until`` (seconds)."""
    loop = cluster.loop
    loop.run_due()
    while loop.advance(until):
        loop.run_due()


def bind(cluster: EmbeddedCluster, pod_or_name: dict[str, Any] | str, node_name: str = "n1") -> None:
    """Bind a pod and let the node agent start it (it does so at the same instant)."""
    name = pod_or_name if isinstance(pod_or_name, str) else pod_or_name["metadata"]["name"]
    ns = "default" if isinstance(pod_or_name, str) else pod_or_name["metadata"].get("namespace", "default")
    cluster.bind(get_pod(cluster, name, ns), node_name)
    run(cluster, cluster.now())


# -- the controllers' and admission tests' objects (namespace default) ----------------------------------
def node(name: str, cpu: str = "4", memory: str = "8Gi", *, labels: dict[str, str] | None = None,
         spec: Obj | None = None) -> Obj:
    """A node of 4 cpu and 8Gi with a spec (empty unless given) and no capacity."""
    return make_node(name, cpu, memory, labels=labels, spec=spec if spec is not None else {}, capacity=None)


def container(name: str = "c", cpu: str | None = None, memory: str | None = None, **resources: Any) -> Obj:
    """A busybox container; its resources stanza is written even when empty."""
    return make_container(name, cpu, memory, image="busybox", resources=resources)


def pod(name: str, *, cpu: str | None = None, memory: str | None = None, namespace: str = "default",
        labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    """A pod of one :func:`container`, labelled (with no labels unless given); other keywords are spec fields."""
    return make_pod(name, namespace=namespace, labels=labels or {}, containers=[container(cpu=cpu, memory=memory)],
                    **spec)


def template_pod(name: str, cpu: str = "100m", **spec: Any) -> Obj:
    """What the controllers' templates are made of: a pod of one 100m container."""
    return pod(name, cpu=cpu, **spec)


def quota(name: str, hard: dict[str, str], *, namespace: str = "default", **spec: Any) -> Obj:
    return make_quota(name, hard, namespace=namespace, **spec)


def pdb(name: str, labels: dict[str, str], status: Obj | None = None, **spec: Any) -> Obj:
    """A PodDisruptionBudget selecting ``labels``; other keywords are spec fields."""
    return make_pdb(name, {"matchLabels": labels}, namespace="default", status=status, **spec)


def replicaset(name: str, replicas: int, **template: Any) -> Obj:
    return make_replicaset(name, replicas, template_pod(name, **template), namespace="default")


def deployment(name: str, replicas: int, **template: Any) -> Obj:
    return make_deployment(name, replicas, template_pod(name, **template), namespace="default")


def statefulset(name: str, replicas: int, **spec: Any) -> Obj:
    return make_statefulset(name, replicas, template_pod(name), namespace="default", **spec)


def daemonset(name: str, **template: Any) -> Obj:
    return make_daemonset(name, template_pod(name, **template), namespace="default")


def job(name: str, **spec: Any) -> Obj:
    return make_job(name, template_pod(name, restartPolicy="Never"), namespace="default", **spec)


def pods_of(cluster: EmbeddedCluster, kind: str, name: str) -> list[dict[str, Any]]:
    """Pods whose controller is ``kind/name``, sorted by name."""
    out = []
    for p in cluster.api.list("Pod"):
        for ref in p["metadata"].get("ownerReferences") or []:
            if ref.get("controller") and ref["kind"] == kind and ref["name"] == name:
                out.append(p)
    return sorted(out, key=lambda p: p["metadata"]["name"])


def get_pod(cluster: EmbeddedCluster, name: str, ns: str = "default") -> dict[str, Any]:
    found = cluster.api.get("Pod", ns, name)
    assert found is not None, name
    return found
