"""The kubelet pod resources API (``podresources/v1``) of one simulated node, as a Python API.

- :meth:`PodResourcesServer.list` — ``List``: every pod the kubelet runs, per container its devices
  (with their NUMA zone), its exclusive CPU ids and the memory pinned per zone.
- :meth:`PodResourcesServer.get_allocatable_resources` — ``GetAllocatableResources``: the devices,
  CPU ids (reserved CPUs excluded) and memory per zone the kubelet may hand out.
- :meth:`PodResourcesServer.watch` — ``Watch`` (KEP 2043's proposed stream): a callback per allocation
  change (``ADDED`` when a pod got its resources, ``DELETED`` when it gave them back).

Messages are frozen dataclasses named after the protobuf messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubesched.cluster.embedded.kubelet.managers import ContainerAssignment, NodeAllocator, PodAssignment
from kubesched.k8s.objects import object_key

ADDED = "ADDED"
DELETED = "DELETED"
MEMORY_TYPE = "memory"


@dataclass(frozen=True, slots=True)
class ContainerDevices:
    resource_name: str
    device_ids: tuple[str, ...]
    topology: tuple[int, ...]  # NUMA zone ids


@dataclass(frozen=True, slots=True)
class ContainerMemory:
    memory_type: str
    size: int
    topology: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ContainerResources:
    name: str
    devices: tuple[ContainerDevices, ...] = ()
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[ContainerMemory, ...] = ()


@dataclass(frozen=True, slots=True)
class PodResources:
    name: str
    namespace: str
    containers: tuple[ContainerResources, ...]

    @property
    def key(self) -> str:
        return object_key("Pod", self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class AllocatableResources:
    devices: tuple[ContainerDevices, ...]
    cpu_ids: tuple[int, ...]
    memory: tuple[ContainerMemory, ...]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    action: str  # ADDED | DELETED
    time: float
    pod: PodResources


WatchCallback = Callable[[WatchEvent], None]


def _container(a: ContainerAssignment) -> ContainerResources:
    by_zone: dict[tuple[str, int], list[str]] = {}
    for resource, device, zone in a.devices:
        by_zone.setdefault((resource, zone), []).append(device)
    return ContainerResources(
        name=a.name,
        devices=tuple(
            ContainerDevices(resource, tuple(ids), (zone,)) for (resource, zone), ids in sorted(by_zone.items())
        ),
        cpu_ids=a.cpus,
        memory=tuple(ContainerMemory(MEMORY_TYPE, size, (zone,)) for zone, size in a.memory),
    )


def pod_resources(assignment: PodAssignment) -> PodResources:
    return PodResources(assignment.name, assignment.namespace, tuple(_container(a) for a in assignment.containers))


class PodResourcesServer:
    def __init__(self, allocator: NodeAllocator, clock: Callable[[], float]) -> None:
        self._allocator = allocator
        self._clock = clock
        self._watchers: list[WatchCallback] = []
        self.calls: dict[str, int] = {"List": 0, "GetAllocatableResources": 0, "Watch": 0}

    def list(self) -> list[PodResources]:
        """``List``: the pods holding resources, by namespace/name."""
        self.calls["List"] += 1
        pods = [pod_resources(a) for a in self._allocator.assignments.values()]
        return sorted(pods, key=lambda p: (p.namespace, p.name))

    def get_allocatable_resources(self) -> AllocatableResources:
        self.calls["GetAllocatableResources"] += 1
        spec = self._allocator.spec
        devices = tuple(
            ContainerDevices(resource, z.device_ids(resource), (z.numa_id,))
            for resource in spec.device_resources
            for z in spec.zones
            if z.device_ids(resource)
        )
        cpus = tuple(sorted(c for z in spec.zones for c in z.allocatable_cpus))
        memory = tuple(ContainerMemory(MEMORY_TYPE, z.allocatable_memory, (z.numa_id,)) for z in spec.zones)
        return AllocatableResources(devices, cpus, memory)

    def watch(self, callback: WatchCallback) -> Callable[[], None]:
        """``Watch``: ``callback`` gets every later allocation change; returns a function that
        ends the stream."""
        self.calls["Watch"] += 1
        self._watchers.append(callback)

        def cancel() -> None:
            if callback in self._watchers:
                self._watchers.remove(callback)

        return cancel

    def publish(self, action: str, assignment: PodAssignment) -> None:
        """Called by the kubelet when ``assignment`` was committed (ADDED) or released (DELETED)."""
        event = WatchEvent(action, self._clock(), pod_resources(assignment))
        for callback in list(self._watchers):
            callback(event)
