"""Builders and a runner for the kubelet-eviction tests (scenarios written to ``tmp_path``)."""

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


def pclass(name: str, value: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def node(name: str, memory: str = "2Gi", cpu: str = "4", *, labels: dict[str, str] | None = None,
         capacity: dict[str, str] | None = None) -> Obj:
    status: Obj = {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}
    if capacity:
        status["capacity"] = capacity
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "status": status}


def pod(name: str, *, memory: str | None = None, cpu: str | None = None, usage: str | None = None,
        cls: str | None = None, on: str | None = None, grace: int | None = None,
        annotations: dict[str, str] | None = None, **spec_extra: Any) -> Obj:
    container: Obj = {"name": "app", "image": PAUSE}
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if requests:
        container["resources"] = {"requests": requests}
    spec: Obj = {"containers": [container], **spec_extra}
    if cls:
        spec["priorityClassName"] = cls
    if on:
        spec["nodeName"] = on
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    meta: Obj = {"name": name}
    notes = dict(annotations or {})
    if usage:
        notes["kubesched.io/usage"] = usage
    if notes:
        meta["annotations"] = notes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def deployment(name: str, replicas: int, template: Obj) -> Obj:
    tmeta = dict(template["metadata"])
    tmeta.pop("name", None)
    tmeta["labels"] = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": tmeta, "spec": template["spec"]}}}


create = create_step


class Run(SimRun):
    def evicted(self) -> list[tuple[float, str]]:
        return [(e["time"], e["pod"].split("/", 1)[1]) for e in self.ev("Evicted")]

    def live(self, name: str) -> Obj | None:
        return self.sim.cluster.store.get("Pod", "default", name)

    @property
    def eviction(self) -> Obj:
        return dict(self.result["cluster"]["eviction"])


run_path = Run.from_path


@pytest.fixture
def simulate(tmp_path: Path) -> Callable[..., Run]:
    def run(*docs: Obj | list[Obj], until: float | None = None) -> Run:
        return Run.from_docs(tmp_path, docs, until=until)

    return run
