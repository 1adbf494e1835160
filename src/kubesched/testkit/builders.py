"""Generators for synthetic nodes and pods (benchmarks, property tests, demos)."""

from __future__ import annotations

from typing import Any


def make_node(name: str, cpu: str = "4", memory: str = "32Gi", pods: int = 110,
              labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)},
                   "capacity": {"cpu": cpu, "memory": memory, "pods": str(pods)}},
    }


def make_pod(name: str, cpu: str | None = "100m", memory: str | None = "500Mi", *,
             namespace: str = "default", priority_class: str | None = None,
             grace: int | None = None, node: str | None = None,
             labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    container: dict[str, Any] = {"name": "app", "image": "registry.k8s.io/pause:3.9"}
    if requests:
        container["resources"] = {"requests": requests}
    spec: dict[str, Any] = {"containers": [container]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if node:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def make_priority_class(name: str, value: int, policy: str | None = None) -> dict[str, Any]:
    pc: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                          "metadata": {"name": name}, "value": value}
    if policy:
        pc["preemptionPolicy"] = policy
    return pc
