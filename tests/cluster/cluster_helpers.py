"""Helpers for the embedded-cluster tests (objects, a cluster factory, running the loop)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.cluster.embedded.apiserver.admission import ensure_system_priority_classes
from kubesched.cluster.embedded.cluster import EmbeddedCluster
from kubesched.cluster.embedded.eventlog import EventLog
from kubesched.des.clock import EventLoop


def make_cluster(*, controllers: bool = True) -> EmbeddedCluster:
    loop = EventLoop()
    cluster = EmbeddedCluster(loop, EventLog(loop.now), np.random.default_rng(0))
    ensure_system_priority_classes(cluster.store)
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


def node(name: str, cpu: str = "4", memory: str = "8Gi", **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **extra.pop("labels", {})}},
        "spec": extra.pop("spec", {}),
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }
    return obj


def container(cpu: str | None = None, memory: str | None = None, name: str = "c", **resources: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    res.update(resources)
    return {"name": name, "image": "busybox", "resources": res}


def pod(name: str, *, cpu: str | None = None, memory: str | None = None, ns: str = "default", **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [container(cpu, memory)], **spec},
    }


def priority_class(name: str, value: int, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


def quota(name: str, hard: dict[str, str], ns: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"hard": hard, **spec},
    }


def template(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [container(spec.pop("cpu", "100m"))], **spec},
    }


def pods_of(cluster: EmbeddedCluster, kind: str, name: str) -> list[dict[str, Any]]:
    """Pods whose controller is ``kind/name``, sorted by name."""
    out = []
    for p in cluster.store.list("Pod"):
        for ref in p["metadata"].get("ownerReferences") or []:
            if ref.get("controller") and ref["kind"] == kind and ref["name"] == name:
                out.append(p)
    return sorted(out, key=lambda p: p["metadata"]["name"])


def get_pod(cluster: EmbeddedCluster, name: str, ns: str = "default") -> dict[str, Any]:
    found = cluster.store.get("Pod", ns, name)
    assert found is not None, name
    return found
