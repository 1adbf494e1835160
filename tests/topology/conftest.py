"""The topology tests' defaults: 16-cpu nodes with GPUs, Guaranteed pods (limits only, container
``main``), the compact ``spec.cluster.topology`` section, and a ``simulate`` fixture returning the
result of a scenario written to ``tmp_path``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from kubesched.testkit.builders import make_container, make_node, make_pod, make_scheduler_config
from kubesched.testkit.runs import events, run_docs
from kubesched.testkit.scenarios import scenario_document

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
PLUGIN = "NodeResourceTopologyMatch"


def node(name: str, cpu: str = "16", memory: str = "64Gi", gpus: int = 0, labels: dict[str, str] | None = None) -> Obj:
    """A node of 16 cpu and 64Gi (and ``gpus`` GPUs) reporting no capacity."""
    return make_node(name, cpu, memory, labels=labels, allocatable={GPU: str(gpus)} if gpus else None, capacity=None)


def container(cpu: str | None, memory: str | None = "1Gi", gpu: int = 0, *, name: str = "main",
              guaranteed: bool = True) -> Obj:
    """A container with limits (Guaranteed) or requests (Burstable); an empty resources stanza when
    it asks for nothing."""
    amounts = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if gpu:
        amounts[GPU] = str(gpu)
    return make_container(name, resources={"limits" if guaranteed else "requests": amounts} if amounts else {})


def pod(name: str, cpu: str | None = "2", memory: str | None = "1Gi", gpu: int = 0, *, guaranteed: bool = True,
        containers: list[Obj] | None = None, **fields: Any) -> Obj:
    """A pod of one :func:`container` (2 cpu, 1Gi) unless ``containers`` are given."""
    return make_pod(name, containers=containers or [container(cpu, memory, gpu, guaranteed=guaranteed)], **fields)


def zones(n: int = 2, cpus: int = 8, memory: str = "16Gi", gpus: int = 0) -> list[Obj]:
    zone: Obj = {"cpus": cpus, "memory": memory}
    if gpus:
        zone["devices"] = {GPU: gpus}
    return [dict(zone) for _ in range(n)]


def topology(policy: str = "single-numa-node", scope: str = "container", zone_list: list[Obj] | None = None,
             exporter: Obj | None = None, **entry: Any) -> Obj:
    """The ``spec.cluster.topology`` section: one node entry (all nodes) and the exporter."""
    node_entry: Obj = {"topologyManagerPolicy": policy, "topologyManagerScope": scope,
                       "zones": zone_list if zone_list is not None else zones(), **entry}
    section: Obj = {"nodes": [node_entry]}
    if exporter is not None:
        section["exporter"] = exporter
    return section


def profile(name: str = "default-scheduler", *, plugin: bool = True, args: Obj | None = None) -> Obj:
    """A scheduler profile, with NodeResourceTopologyMatch enabled (and given ``args``) when ``plugin``."""
    prof: Obj = {"schedulerName": name}
    if plugin:
        prof["plugins"] = {"multiPoint": {"enabled": [{"name": PLUGIN}]}}
        if args is not None:
            prof["pluginConfig"] = [{"name": PLUGIN, "args": args}]
    return prof


def scenario(objects: Iterable[Obj], *, topo: Obj | None = None, plugin: bool = False, args: Obj | None = None,
             steps: list[Obj] | None = None, until: str | None = None, seed: int = 1,
             profiles: Iterable[Obj] = ()) -> list[Obj]:
    """The Scenario document (named ``topology``; with NodeResourceTopologyMatch enabled when
    ``plugin``; ``profiles`` after that first one) followed by ``objects``."""
    config = None
    if plugin or profiles:
        config = make_scheduler_config(profile(plugin=plugin, args=args), *profiles)
    doc = scenario_document({"topology": topo} if topo is not None else None, steps, until=until, seed=seed,
                            name="topology", config=config)
    if not steps:
        del doc["spec"]["steps"]  # these scenarios have never written an empty steps list
    return [doc, *objects]


@pytest.fixture
def simulate(tmp_path: Path) -> Callable[..., Obj]:
    def run(docs: list[Obj], **options: Any) -> Obj:
        return run_docs(tmp_path, docs, **options).result

    return run


# -- result queries --------------------------------------------------------------------------------
def rejections(result: Obj) -> list[Obj]:
    """Pods the kubelet refused with TopologyAffinityError (the event's reason, as the kubelet records it)."""
    return [e for e in events(result, "TopologyAffinityError") if e.get("phase") == "Failed"]


def start_time(result: Obj, pod_name: str) -> float | None:
    started = events(result, "Started", pod_name)
    return started[0]["time"] if started else None
