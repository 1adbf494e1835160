"""Builders and a runner for the cluster-autoscaler tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubesched.testkit.scenarios import SimRun, create_step
from kubesched.testkit.scenarios import scenario_document as scenario  # noqa: F401  (used by the tests)

Obj = dict[str, Any]
PAUSE = "registry.k8s.io/pause:3.9"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GROUP_LABEL = "kubesched.io/node-group"


def pclass(name: str, value: int, policy: str | None = None) -> Obj:
    obj: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value}
    if policy:
        obj["preemptionPolicy"] = policy
    return obj


def group(name: str = "pool", *, max_size: int = 3, min_size: int = 0, initial: int = 1, cpu: str = "4",
          memory: str = "16Gi", delay: str = "30s", startup: str = "30s", **extra: Any) -> Obj:
    return {"name": name, "minSize": min_size, "maxSize": max_size, "initialSize": initial,
            "scaleUpDelay": delay, "nodeStartupTime": startup,
            "template": {"status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}, **extra}


def autoscaler(*groups: Obj, **settings: Any) -> Obj:
    return {"autoscaler": {"nodeGroups": list(groups) or [group()], **settings}}


def pod(name: str, cpu: str = "1", *, cls: str | None = None, on: str | None = None, grace: int | None = None,
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        owner: Obj | None = None, **spec_extra: Any) -> Obj:
    spec: Obj = {"containers": [{"name": "app", "image": PAUSE, "resources": {"requests": {"cpu": cpu}}}],
                 **spec_extra}
    if cls:
        spec["priorityClassName"] = cls
    if on:
        spec["nodeName"] = on
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def deployment(name: str, replicas: int, cpu: str = "1", *, cls: str | None = None, grace: int = 30,
               node_selector: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"terminationGracePeriodSeconds": grace,
                 "containers": [{"name": "app", "image": PAUSE, "resources": {"requests": {"cpu": cpu}}}]}
    if cls:
        spec["priorityClassName"] = cls
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def node(name: str, cpu: str = "4", group_name: str | None = None) -> Obj:
    labels = {"kubernetes.io/hostname": name}
    if group_name:
        labels[GROUP_LABEL] = group_name
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


create = create_step


def scale(at: str, name: str, replicas: int) -> Obj:
    return {"at": at, "patch": {"kind": "Deployment", "name": name, "merge": {"spec": {"replicas": replicas}}}}


class Run(SimRun):
    @property
    def ca(self) -> Obj:
        return dict(self.result["cluster"]["autoscaler"])


run_path = Run.from_path


@pytest.fixture
def simulate(tmp_path: Path) -> Callable[..., Run]:
    def run(*docs: Obj | list[Obj], until: float | None = None) -> Run:
        return Run.from_docs(tmp_path, docs, until=until)

    return run
