"""The machine a simulated kubelet manages (its NUMA zones), from the scenario's
``spec.cluster.topology`` entry or from a NodeResourceTopology object the user wrote."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubesched.api.cluster_settings.topology import NodeEntry, ZoneInput
from kubesched.topology.model import NodeTopologySpec, build_spec
from kubesched.topology.nrt import parse_nrt
from kubesched.topology.qos import is_hugepages


def spec_from_settings(entry: NodeEntry) -> NodeTopologySpec:
    """The machine a ``nodes`` entry of ``spec.cluster.topology`` describes."""
    return build_spec(
        list(entry.zones),
        policy=entry.policy,
        scope=entry.scope,
        cpu_manager_policy=entry.cpu_manager_policy,
        memory_manager_policy=entry.memory_manager_policy,
        reserved_cpus=entry.reserved_cpus,
    )


def spec_from_nrt(obj: Mapping[str, Any]) -> NodeTopologySpec | None:
    """A machine description from a NodeResourceTopology object written by the user: per zone the
    CPU count and memory from ``capacity``, reserved = capacity - allocatable (the zone's lowest CPU
    ids), device resources from the other extended resources, distances from ``costs``."""
    view = parse_nrt(obj)
    if not view.zones:
        return None
    zones = sorted(view.zones, key=lambda z: z.numa_id)
    inputs: list[ZoneInput] = []
    reserved: list[int] = []
    next_cpu = 0
    position = {z.numa_id: i for i, z in enumerate(zones)}
    for z in zones:
        cpus = math.ceil(z.capacity.get("cpu", 0) / 1000)
        allocatable = math.ceil(z.allocatable.get("cpu", z.capacity.get("cpu", 0)) / 1000)
        reserved += list(range(next_cpu, next_cpu + max(0, cpus - allocatable)))
        next_cpu += cpus
        memory = z.capacity.get("memory", 0)
        devices = tuple(
            (name, amount) for name, amount in sorted(z.capacity.items())
            if "/" in name and not is_hugepages(name) and amount > 0
        )
        distances = tuple(z.costs.get(other.numa_id, 255) for other in zones) if z.costs else ()
        inputs.append(ZoneInput(cpus, memory, max(0, memory - z.allocatable.get("memory", memory)), devices, distances))
    spec = build_spec(inputs, policy=view.policy, scope=view.scope, reserved_cpus=reserved)
    # keep the object's zone ids (build_spec numbers zones by position)
    if any(position[z.numa_id] != z.numa_id for z in zones):
        renumbered = tuple(
            replace(zs, numa_id=z.numa_id, distances=tuple((zones[i].numa_id, c) for i, c in zs.distances))
            for zs, z in zip(spec.zones, zones)
        )
        spec = replace(spec, zones=renumbered)
    return spec
