"""The machine a simulated kubelet manages: NUMA zones with CPU ids, memory and devices.

CPU ids are numbered zone by zone (zone 0 holds ``0..n0-1``, zone 1 the next ones, ...); SMT siblings
and sockets are not modelled. Zones are named ``node-<id>`` as the NodeResourceTopology API and the
resource topology exporters name them.

A NUMA *mask* is a sorted tuple of zone ids; masks are compared the way the kubelet's bitmask is
(fewer zones first, then lexicographically by zone id).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kubesched.api.cluster_settings.topology import ZoneInput

Mask = tuple[int, ...]

ZONE_PREFIX = "node-"
DEFAULT_LOCAL_DISTANCE = 10
DEFAULT_REMOTE_DISTANCE = 20


def zone_name(numa_id: int) -> str:
    return f"{ZONE_PREFIX}{numa_id}"


def zone_id(name: str) -> int | None:
    """``node-3`` -> 3; None for anything else."""
    if not name.startswith(ZONE_PREFIX):
        return None
    digits = name[len(ZONE_PREFIX):]
    return int(digits) if digits.isdigit() else None


def masks(numa_ids: Iterable[int]) -> Iterator[Mask]:
    """Every non-empty mask over ``numa_ids``: by size, then lexicographically (the kubelet's
    ``IterateBitMasks`` order)."""
    ids = sorted(numa_ids)
    for size in range(1, len(ids) + 1):
        yield from itertools.combinations(ids, size)


def narrower(a: Mask, b: Mask) -> bool:
    """The kubelet's ``IsNarrowerThan``: fewer zones, or as many with lower zone ids."""
    if len(a) != len(b):
        return len(a) < len(b)
    return a < b


@dataclass(frozen=True, slots=True)
class ZoneSpec:
    numa_id: int
    cpus: tuple[int, ...]
    memory: int  # bytes
    reserved_cpus: tuple[int, ...] = ()
    reserved_memory: int = 0
    devices: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (resource, device ids)
    distances: tuple[tuple[int, int], ...] = ()  # (numa id, cost)

    @property
    def name(self) -> str:
        return zone_name(self.numa_id)

    @property
    def allocatable_cpus(self) -> tuple[int, ...]:
        reserved = set(self.reserved_cpus)
        return tuple(c for c in self.cpus if c not in reserved)

    @property
    def allocatable_memory(self) -> int:
        return max(0, self.memory - self.reserved_memory)

    def device_ids(self, resource: str) -> tuple[str, ...]:
        for name, ids in self.devices:
            if name == resource:
                return ids
        return ()


@dataclass(frozen=True, slots=True)
class NodeTopologySpec:
    """What one kubelet knows about its machine and how its resource managers are configured."""

    zones: tuple[ZoneSpec, ...]
    policy: str = "none"
    scope: str = "container"
    cpu_manager_policy: str = "static"
    memory_manager_policy: str = "Static"
    device_resources: tuple[str, ...] = field(default=())

    @property
    def numa_ids(self) -> tuple[int, ...]:
        return tuple(z.numa_id for z in self.zones)

    def zone(self, numa_id: int) -> ZoneSpec:
        for z in self.zones:
            if z.numa_id == numa_id:
                return z
        raise KeyError(numa_id)

    def zone_of_cpu(self, cpu: int) -> int:
        for z in self.zones:
            if cpu in z.cpus:
                return z.numa_id
        raise KeyError(cpu)


def build_spec(
    zones: list[ZoneInput],
    *,
    policy: str = "none",
    scope: str = "container",
    cpu_manager_policy: str = "static",
    memory_manager_policy: str = "Static",
    reserved_cpus: Iterable[int] = (),
) -> NodeTopologySpec:
    """A spec from zone descriptions: zone ids are the list positions, CPU ids are assigned zone
    after zone, device ids are ``<short resource name><n>`` numbered across the node, distances
    default to 10 (local) and 20 (remote)."""
    reserved = set(reserved_cpus)
    next_cpu = 0
    device_counter: dict[str, int] = {}
    out: list[ZoneSpec] = []
    n = len(zones)
    for numa_id, raw in enumerate(zones):
        cpus = tuple(range(next_cpu, next_cpu + raw.cpus))
        next_cpu += raw.cpus
        devices: list[tuple[str, tuple[str, ...]]] = []
        for resource, amount in sorted(raw.devices):
            start = device_counter.get(resource, 0)
            short = resource.rsplit("/", 1)[-1]
            devices.append((resource, tuple(f"{short}{i}" for i in range(start, start + amount))))
            device_counter[resource] = start + amount
        if raw.distances:
            distances = tuple(enumerate(raw.distances))
        else:
            distances = tuple(
                (i, DEFAULT_LOCAL_DISTANCE if i == numa_id else DEFAULT_REMOTE_DISTANCE) for i in range(n)
            )
        out.append(ZoneSpec(
            numa_id=numa_id,
            cpus=cpus,
            memory=raw.memory,
            reserved_cpus=tuple(c for c in cpus if c in reserved),
            reserved_memory=raw.reserved_memory,
            devices=tuple(devices),
            distances=distances,
        ))
    return NodeTopologySpec(
        zones=tuple(out),
        policy=policy,
        scope=scope,
        cpu_manager_policy=cpu_manager_policy,
        memory_manager_policy=memory_manager_policy,
        device_resources=tuple(sorted({r for z in out for r, _ in z.devices})),
    )
