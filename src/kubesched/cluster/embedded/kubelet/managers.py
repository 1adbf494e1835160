"""The kubelet's resource managers on one simulated node, behind the Topology Manager.

- **CPU manager, policy static**: a container of a Guaranteed pod with an integral cpu request gets
  that many exclusive CPUs, taken from the free CPUs of the zones in its NUMA affinity first (lowest
  ids first), then from the other zones (only possible under ``best-effort``/``none``). Reserved
  CPUs are never handed out. Every other container runs on the shared pool (all CPUs not assigned
  exclusively) and takes nothing from a zone.
- **Memory manager, policy Static**: a container of a Guaranteed pod gets its memory request from
  the zones of its affinity (in zone order), spilling to other zones only if they cannot hold it.
- **Devices**: device resources the node declares per zone are assigned like CPUs (affinity
  first), for any QoS class.
- **Topology Manager** (:mod:`kubesched.topology.hints`): with scope ``container`` each container
  is aligned and allocated in turn (init containers first; their resources are handed back before
  the next container, as the kubelet lets app containers reuse them); with scope ``pod`` the pod's
  effective request is aligned once and every container is allocated with that affinity.

:meth:`NodeAllocator.admit` plans a pod without changing anything; :meth:`commit` applies a plan;
:meth:`release` gives a pod's resources back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubesched.topology.hints import (
    NONE,
    TOPOLOGY_AFFINITY_ERROR,
    TOPOLOGY_AFFINITY_MESSAGE,
    ResourceHints,
    TopologyHint,
    admits,
    merge_hints,
    resource_hints,
)
from kubesched.topology.model import Mask, NodeTopologySpec
from kubesched.topology.qos import CPU, MEMORY, ContainerRequest, PodRequest, effective_request

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


@dataclass(frozen=True, slots=True)
class ContainerAssignment:
    name: str
    cpus: tuple[int, ...] = ()  # exclusive CPU ids
    memory: tuple[tuple[int, int], ...] = ()  # (zone, bytes)
    devices: tuple[tuple[str, str, int], ...] = ()  # (resource, device id, zone)


@dataclass(frozen=True, slots=True)
class PodAssignment:
    uid: str
    namespace: str
    name: str
    containers: tuple[ContainerAssignment, ...]
    affinity: Mask | None = None  # the merged hint (scope pod) or None


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: str
    message: str


@dataclass(slots=True)
class _Free:
    """Free resources: exclusive-able CPUs, memory per zone, device ids per resource and zone."""

    cpus: set[int]
    memory: dict[int, int]
    devices: dict[str, dict[int, list[str]]]

    def copy(self) -> _Free:
        return _Free(
            set(self.cpus),
            dict(self.memory),
            {r: {z: list(ids) for z, ids in per.items()} for r, per in self.devices.items()},
        )


@dataclass(slots=True)
class NodeAllocator:
    spec: NodeTopologySpec
    assignments: dict[str, PodAssignment] = field(default_factory=dict)
    _free: _Free = field(init=False)

    def __post_init__(self) -> None:
        self._free = _Free(
            cpus={c for z in self.spec.zones for c in z.allocatable_cpus},
            memory={z.numa_id: z.allocatable_memory for z in self.spec.zones},
            devices={
                r: {z.numa_id: list(z.device_ids(r)) for z in self.spec.zones} for r in self.spec.device_resources
            },
        )

    # -- views --------------------------------------------------------------------------------
    def free_cpus(self) -> tuple[int, ...]:
        return tuple(sorted(self._free.cpus))

    def free_memory(self) -> dict[int, int]:
        return dict(self._free.memory)

    def free_devices(self) -> dict[str, dict[int, tuple[str, ...]]]:
        return {r: {z: tuple(ids) for z, ids in per.items()} for r, per in self._free.devices.items()}

    # -- hints ----------------------------------------------------------------------------------
    def _static_cpus(self, pod: PodRequest, request: Mapping[str, int]) -> int:
        if self.spec.cpu_manager_policy != "static" or not pod.guaranteed:
            return 0
        cpu = request.get(CPU, 0)
        return cpu // 1000 if cpu > 0 and cpu % 1000 == 0 else 0

    def _static_memory(self, pod: PodRequest, request: Mapping[str, int]) -> int:
        if self.spec.memory_manager_policy != "Static" or not pod.guaranteed:
            return 0
        return max(0, request.get(MEMORY, 0))

    def _hints(self, pod: PodRequest, request: Mapping[str, int], free: _Free) -> list[ResourceHints]:
        spec = self.spec
        out: list[ResourceHints] = []
        cpus = self._static_cpus(pod, request)
        if cpus:
            total = {z.numa_id: len(z.cpus) for z in spec.zones}
            available = {z.numa_id: sum(1 for c in z.cpus if c in free.cpus) for z in spec.zones}
            out.append(resource_hints(cpus, total, available))
        memory = self._static_memory(pod, request)
        if memory:
            total = {z.numa_id: z.allocatable_memory for z in spec.zones}
            out.append(resource_hints(memory, total, free.memory))
        for resource in spec.device_resources:
            amount = request.get(resource, 0)
            if amount > 0:
                total = {z.numa_id: len(z.device_ids(resource)) for z in spec.zones}
                available = {z: len(ids) for z, ids in free.devices[resource].items()}
                out.append(resource_hints(amount, total, available))
        return out

    def _align(self, pod: PodRequest, request: Mapping[str, int], free: _Free) -> TopologyHint | Rejection:
        policy = self.spec.policy
        if policy == NONE:
            return TopologyHint(None, True)
        hint = merge_hints(policy, self._hints(pod, request, free), self.spec.numa_ids)
        if not admits(policy, hint):
            return Rejection(TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE)
        return hint

    # -- allocation -------------------------------------------------------------------------------
    def _order(self, affinity: Mask | None) -> list[int]:
        """Zones in allocation order: the affinity's zones, then the others."""
        ids = list(self.spec.numa_ids)
        if affinity is None:
            return ids
        return [z for z in ids if z in affinity] + [z for z in ids if z not in affinity]

    def _allocate(
        self, pod: PodRequest, c: ContainerRequest, affinity: Mask | None, free: _Free
    ) -> ContainerAssignment | Rejection:
        order = self._order(affinity)
        cpus: list[int] = []
        wanted = self._static_cpus(pod, c.requests)
        if wanted:
            for zone in order:
                cpus += [cpu for cpu in self.spec.zone(zone).cpus if cpu in free.cpus][: wanted - len(cpus)]
            if len(cpus) < wanted:
                return Rejection(
                    UNEXPECTED_ADMISSION_ERROR,
                    f"Allocate failed due to not enough cpus available to satisfy request: requested={wanted}, "
                    f"available={len(free.cpus)}, which is unexpected",
                )
            free.cpus.difference_update(cpus)
        memory: list[tuple[int, int]] = []
        left = self._static_memory(pod, c.requests)
        if left:
            for zone in order:
                take = min(left, free.memory[zone])
                if take:
                    memory.append((zone, take))
                    free.memory[zone] -= take
                    left -= take
            if left:
                return Rejection(
                    UNEXPECTED_ADMISSION_ERROR,
                    "Allocate failed due to not enough memory available to satisfy request, which is unexpected",
                )
        devices: list[tuple[str, str, int]] = []
        for resource in self.spec.device_resources:
            need = c.requests.get(resource, 0)
            if need <= 0:
                continue
            available = sum(len(ids) for ids in free.devices[resource].values())
            for zone in order:
                while need and free.devices[resource][zone]:
                    devices.append((resource, free.devices[resource][zone].pop(0), zone))
                    need -= 1
            if need:
                return Rejection(
                    UNEXPECTED_ADMISSION_ERROR,
                    f"Allocate failed due to requested number of devices unavailable for {resource}. "
                    f"Requested: {c.requests[resource]}, Available: {available}, which is unexpected",
                )
        return ContainerAssignment(c.name, tuple(sorted(cpus)), tuple(memory), tuple(devices))

    def _give_back(self, a: ContainerAssignment, free: _Free) -> None:
        free.cpus.update(a.cpus)
        for zone, amount in a.memory:
            free.memory[zone] += amount
        for resource, device, zone in a.devices:
            ids = free.devices[resource][zone]
            ids.append(device)
            ids.sort(key=_device_order)

    def admit(self, pod: PodRequest) -> PodAssignment | Rejection:
        """Plan ``pod`` against the current state: its assignment, or why the kubelet rejects it."""
        free = self._free.copy()
        if pod.uid in self.assignments:
            for a in self.assignments[pod.uid].containers:
                self._give_back(a, free)
        pod_affinity: Mask | None = None
        if self.spec.scope == "pod":
            hint = self._align(pod, _pod_request(pod), free)
            if isinstance(hint, Rejection):
                return hint
            pod_affinity = hint.affinity
        done: list[ContainerAssignment] = []
        for c in pod.init_containers + pod.containers:
            affinity = pod_affinity
            if self.spec.scope != "pod":
                hint = self._align(pod, c.requests, free)
                if isinstance(hint, Rejection):
                    return hint
                affinity = hint.affinity
            assigned = self._allocate(pod, c, affinity, free)
            if isinstance(assigned, Rejection):
                return assigned
            if c.init:
                self._give_back(assigned, free)  # reused by the containers that follow
            else:
                done.append(assigned)
        return PodAssignment(pod.uid, pod.namespace, pod.name, tuple(done), pod_affinity)

    def commit(self, assignment: PodAssignment) -> None:
        self.release(assignment.uid)
        for a in assignment.containers:
            self._free.cpus.difference_update(a.cpus)
            for zone, amount in a.memory:
                self._free.memory[zone] -= amount
            for resource, device, zone in a.devices:
                self._free.devices[resource][zone].remove(device)
        self.assignments[assignment.uid] = assignment

    def release(self, uid: str) -> PodAssignment | None:
        assignment = self.assignments.pop(uid, None)
        if assignment is not None:
            for a in assignment.containers:
                self._give_back(a, self._free)
        return assignment


def _pod_request(pod: PodRequest) -> dict[str, int]:
    """What scope ``pod`` aligns: the effective request, with cpu counting only the containers that
    get exclusive CPUs (upstream ``podGuaranteedCPUs``)."""
    request = effective_request(pod.containers, pod.init_containers)
    cpus = max(sum(c.integral_cpus for c in pod.containers), max((c.integral_cpus for c in pod.init_containers), default=0))
    request[CPU] = cpus * 1000
    return request


def _device_order(device: str) -> tuple[str, int]:
    digits = len(device) - len(device.rstrip("0123456789"))
    stem, number = device[: len(device) - digits], device[len(device) - digits:]
    return stem, int(number) if number else -1
