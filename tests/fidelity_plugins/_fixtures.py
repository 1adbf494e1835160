"""Small builders shared by the fidelity tests (pods, nodes, a fake handle/snapshot)."""

from __future__ import annotations

from typing import Any

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.types import NodeInfo, PodInfo


def pod_obj(name: str = "p", *, containers: list[dict[str, Any]] | None = None,
            init: list[dict[str, Any]] | None = None, spec: dict[str, Any] | None = None,
            labels: dict[str, str] | None = None, ns: str = "default", node: str | None = None) -> dict[str, Any]:
    full: dict[str, Any] = {"containers": containers if containers is not None else [{"name": "c", "image": "img"}]}
    if init:
        full["initContainers"] = init
    if node:
        full["nodeName"] = node
    full.update(spec or {})
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"{ns}/{name}"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": full}


def container(name: str = "c", requests: dict[str, Any] | None = None, *, image: str = "img",
              sidecar: bool = False, ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image}
    if requests is not None:
        c["resources"] = {"requests": requests}
    if sidecar:
        c["restartPolicy"] = "Always"
    if ports:
        c["ports"] = ports
    return c


def node_obj(name: str, allocatable: dict[str, Any] | None = None, *, labels: dict[str, str] | None = None,
             taints: list[dict[str, Any]] | None = None, images: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": allocatable or {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    if taints:
        obj["spec"] = {"taints": taints}
    if images:
        obj["status"]["images"] = images
    return obj


def cache_of(nodes: list[dict[str, Any]], pods: list[dict[str, Any]] | None = None) -> Cache:
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    for p in pods or []:
        cache.add_pod(PodInfo.from_pod(p))
    cache.update_snapshot()
    return cache


def node_info(obj: dict[str, Any], *pods: dict[str, Any]) -> NodeInfo:
    info = NodeInfo.from_node(obj)
    for p in pods:
        info.add_pod(PodInfo.from_pod(p))
    return info
