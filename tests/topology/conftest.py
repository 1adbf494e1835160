"""Builders for the topology tests: nodes with NUMA zones, Guaranteed/Burstable pods, the compact
``spec.cluster.topology`` section, NodeResourceTopology objects, and a ``simulate`` fixture that runs
a scenario written to ``tmp_path``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.scheduler.framework.types import NodeInfo
from kubesched.sim import simulate as simulate_scenario

Obj = dict[str, Any]
PAUSE = "registry.k8s.io/pause:3.9"
GPU = "nvidia.com/gpu"
PLUGIN = "NodeResourceTopologyMatch"


def node(name: str, cpu: str = "16", memory: str = "64Gi", gpus: int = 0, labels: dict[str, str] | None = None) -> Obj:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus:
        allocatable[GPU] = str(gpus)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": allocatable},
    }


def container(cpu: str | None, memory: str | None = "1Gi", gpu: int = 0, *, name: str = "main",
              guaranteed: bool = True) -> Obj:
    amounts = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if gpu:
        amounts[GPU] = str(gpu)
    key = "limits" if guaranteed else "requests"
    return {"name": name, "image": PAUSE, "resources": {key: amounts} if amounts else {}}


def pod(name: str, cpu: str | None = "2", memory: str | None = "1Gi", gpu: int = 0, *, node_name: str | None = None,
        guaranteed: bool = True, containers: list[Obj] | None = None, init: list[Obj] | None = None,
        priority_class: str | None = None, annotations: dict[str, str] | None = None,
        labels: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"containers": containers or [container(cpu, memory, gpu, guaranteed=guaranteed)]}
    if init:
        spec["initContainers"] = init
    if node_name:
        spec["nodeName"] = node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta: Obj = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def zones(n: int = 2, cpus: int = 8, memory: str = "16Gi", gpus: int = 0) -> list[Obj]:
    zone: Obj = {"cpus": cpus, "memory": memory}
    if gpus:
        zone["devices"] = {GPU: gpus}
    return [dict(zone) for _ in range(n)]


def topology(policy: str = "single-numa-node", scope: str = "container", zone_list: list[Obj] | None = None,
             exporter: Obj | None = None, **entry: Any) -> Obj:
    node_entry: Obj = {"topologyManagerPolicy": policy, "topologyManagerScope": scope,
                       "zones": zone_list if zone_list is not None else zones(), **entry}
    section: Obj = {"nodes": [node_entry]}
    if exporter is not None:
        section["exporter"] = exporter
    return section


def scheduler_config(plugin: bool = True, args: Obj | None = None) -> Obj:
    profile: Obj = {"schedulerName": "default-scheduler"}
    if plugin:
        profile["plugins"] = {"multiPoint": {"enabled": [{"name": PLUGIN}]}}
        if args is not None:
            profile["pluginConfig"] = [{"name": PLUGIN, "args": args}]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [profile]}


def scenario(objects: Iterable[Obj], *, topo: Obj | None = None, plugin: bool = False, args: Obj | None = None,
             steps: list[Obj] | None = None, until: str | None = None, seed: int = 1) -> list[Obj]:
    spec: Obj = {"seed": seed}
    if until:
        spec["until"] = until
    if topo is not None:
        spec["cluster"] = {"topology": topo}
    if plugin:
        spec["schedulerConfiguration"] = scheduler_config(True, args)
    if steps:
        spec["steps"] = steps
    doc = {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "topology"}, "spec": spec}
    return [doc, *objects]


def create(at: str, obj: Obj) -> Obj:
    return {"at": at, "create": obj}


def priority_class(name: str, value: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def deployment(name: str, replicas: int, template_container: Obj) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [template_container]}}},
    }


@pytest.fixture
def simulate(tmp_path: Path) -> Callable[..., Obj]:
    counter = [0]

    def run(docs: list[Obj], **kwargs: Any) -> Obj:
        counter[0] += 1
        path = tmp_path / f"scenario-{counter[0]}.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        return simulate_scenario(str(path), **kwargs).result

    return run


# -- result queries --------------------------------------------------------------------------------
def events(result: Obj, reason: str, pod_name: str | None = None) -> list[Obj]:
    return [e for e in result["events"] if e["reason"] == reason
            and (pod_name is None or e["pod"] == f"default/{pod_name}")]


def rejections(result: Obj) -> list[Obj]:
    return [e for e in events(result, "Failed") if "TopologyAffinityError" in e.get("message", "")]


def phase(result: Obj, pod_name: str) -> str:
    return str(result["pods"][f"default/{pod_name}"]["phase"])


def node_of(result: Obj, pod_name: str) -> str | None:
    node_name = result["pods"][f"default/{pod_name}"]["node"]
    return None if node_name is None else str(node_name)


def start_time(result: Obj, pod_name: str) -> float | None:
    started = events(result, "Started", pod_name)
    return started[0]["time"] if started else None


# -- NodeResourceTopology objects for plugin unit tests ------------------------------------------------
def nrt_zone(numa_id: int, available: dict[str, str], allocatable: dict[str, str] | None = None,
             costs: dict[int, int] | None = None, containers: list[str] | None = None) -> Obj:
    allocatable = allocatable or available
    zone: Obj = {
        "name": f"node-{numa_id}", "type": "Node",
        "resources": [{"name": r, "capacity": allocatable[r], "allocatable": allocatable[r], "available": q}
                      for r, q in available.items()],
    }
    if costs:
        zone["costs"] = [{"name": f"node-{i}", "value": v} for i, v in costs.items()]
    if containers is not None:
        zone["attributes"] = [{"name": "kubesched.io/containers", "value": ",".join(containers)}]
    return zone


def nrt(name: str, zone_list: list[Obj], policy: str = "single-numa-node", scope: str = "container",
        fingerprint: str | None = None, rv: str = "1") -> Obj:
    attrs = [{"name": "topologyManagerPolicy", "value": policy}, {"name": "topologyManagerScope", "value": scope}]
    if fingerprint is not None:
        attrs.append({"name": "nodeTopologyPodsFingerprint", "value": fingerprint})
    return {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
            "metadata": {"name": name, "resourceVersion": rv}, "attributes": attrs, "zones": zone_list}


class FakeSnapshot:
    def __init__(self, nodes: list[NodeInfo]) -> None:
        self._nodes = nodes

    @property
    def node_infos(self) -> list[NodeInfo]:
        return self._nodes

    def get(self, name: str) -> NodeInfo | None:
        return next((n for n in self._nodes if n.name == name), None)


class FakeHandle:
    """What the plugin uses from the framework: NRT objects, the snapshot and the clock."""

    def __init__(self, objects: list[Obj] | None = None, nodes: list[NodeInfo] | None = None) -> None:
        self.objects = objects or []
        self.nodes = nodes or []
        self.time = 0.0

    def list(self, kind: str) -> list[Obj]:
        return list(self.objects) if kind == "NodeResourceTopology" else []

    def snapshot(self) -> FakeSnapshot:
        return FakeSnapshot(self.nodes)

    def now(self) -> float:
        return self.time
