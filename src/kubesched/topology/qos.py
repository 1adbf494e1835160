"""Pod facts the kubelet's resource managers and the topology plugin both need: QoS class,
per-container requests, the pod's effective request, which resources are NUMA-affine.

Amounts are kubesched's integer units (cpu in milli-cpu, memory in bytes, devices as counts).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.quantity import resource_amount
from kubesched.api.resources import container_requests, is_restartable_init_container
from kubesched.k8s.objects import namespace_of, object_key

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"
CPU = "cpu"
MEMORY = "memory"
_QOS_RESOURCES = (CPU, MEMORY)


def is_native(resource: str) -> bool:
    """Upstream ``IsNativeResource``: no domain, or a ``kubernetes.io/`` one."""
    return "/" not in resource or "kubernetes.io/" in resource


def is_hugepages(resource: str) -> bool:
    return resource.startswith("hugepages-")


def is_numa_affine(resource: str) -> bool:
    """Resources that must be bound to NUMA zones when exclusive: cpu, memory, hugepages."""
    return resource in _QOS_RESOURCES or is_hugepages(resource)


def is_host_level(resource: str) -> bool:
    """Resources that may carry no NUMA affinity: storage and extended (device) resources."""
    return resource in ("ephemeral-storage", "storage") or not is_native(resource)


def _limits(container: Mapping[str, Any]) -> dict[str, int]:
    raw = (container.get("resources") or {}).get("limits") or {}
    return {name: resource_amount(name, q) for name, q in raw.items()}


def requests_of(container: Mapping[str, Any]) -> dict[str, int]:
    """The container's requests, a missing request defaulting to its limit (API-server defaulting,
    for objects that did not come through it)."""
    out = _limits(container)
    out.update(container_requests(container))
    return out


def _containers(pod: Mapping[str, Any], field: str) -> list[Mapping[str, Any]]:
    return [c for c in (pod.get("spec") or {}).get(field) or [] if isinstance(c, Mapping)]


def pod_qos(pod: Mapping[str, Any]) -> str:
    """The pod's QoS class (upstream ``GetPodQOS``, cpu and memory only)."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for c in _containers(pod, "initContainers") + _containers(pod, "containers"):
        for name, amount in requests_of(c).items():
            if name in _QOS_RESOURCES and amount != 0:
                requests[name] = requests.get(name, 0) + amount
        found: set[str] = set()
        for name, amount in _limits(c).items():
            if name in _QOS_RESOURCES and amount != 0:
                found.add(name)
                limits[name] = limits.get(name, 0) + amount
        if found != set(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and requests == limits:
        return GUARANTEED
    return BURSTABLE


@dataclass(frozen=True, slots=True)
class ContainerRequest:
    name: str
    requests: dict[str, int]
    init: bool = False
    sidecar: bool = False  # an init container with restartPolicy Always

    @property
    def integral_cpus(self) -> int:
        """Whole CPUs requested (0 if the cpu request is not a positive integer)."""
        cpu = self.requests.get(CPU, 0)
        return cpu // 1000 if cpu > 0 and cpu % 1000 == 0 else 0


@dataclass(frozen=True, slots=True)
class PodRequest:
    """A pod as the resource managers see it."""

    namespace: str
    name: str
    uid: str
    qos: str
    init_containers: tuple[ContainerRequest, ...]
    containers: tuple[ContainerRequest, ...]

    @property
    def key(self) -> str:
        return object_key("Pod", self.namespace, self.name)

    @property
    def guaranteed(self) -> bool:
        return self.qos == GUARANTEED

    def all_containers(self) -> tuple[ContainerRequest, ...]:
        return self.init_containers + self.containers

    def effective(self) -> dict[str, int]:
        """max(Σ containers, max init container) per resource (overhead not included)."""
        return effective_request(self.containers, self.init_containers)


def effective_request(
    containers: tuple[ContainerRequest, ...], init_containers: tuple[ContainerRequest, ...] = ()
) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in containers:
        for name, amount in c.requests.items():
            total[name] = total.get(name, 0) + amount
    for c in init_containers:
        for name, amount in c.requests.items():
            if name not in total or amount > total[name]:
                total[name] = amount
    return total


def pod_request(pod: Mapping[str, Any]) -> PodRequest:
    meta = pod.get("metadata") or {}
    namespace = namespace_of(pod)
    return PodRequest(
        namespace=namespace,
        name=meta.get("name", ""),
        uid=meta.get("uid") or object_key("Pod", namespace, meta.get("name", "")),
        qos=pod_qos(pod),
        init_containers=tuple(
            ContainerRequest(c.get("name", ""), requests_of(c), init=True, sidecar=is_restartable_init_container(c))
            for c in _containers(pod, "initContainers")
        ),
        containers=tuple(
            ContainerRequest(c.get("name", ""), requests_of(c)) for c in _containers(pod, "containers")
        ),
    )


def is_exclusive(qos: str, resource: str, amount: int, nrt_resources: Collection[str]) -> bool:
    """scheduler-plugins' ``IsExclusive``: is this request held exclusively (so in one zone)? A
    device (extended) resource if the node's NodeResourceTopology reports it; for Guaranteed pods
    also integral cpu, memory and hugepages."""
    if not is_native(resource):
        return resource in nrt_resources
    if qos != GUARANTEED or amount <= 0:
        return False
    if resource == CPU:
        return amount % 1000 == 0
    return resource == MEMORY or is_hugepages(resource)


def pinned_containers(request: PodRequest, nrt_resources: Collection[str]) -> tuple[str, ...]:
    """The containers of a pod that hold exclusive resources while it runs (sidecars, then app
    containers; scheduler-plugins' ``PinnedContainers``): those the exporter places in a zone."""
    running = [c for c in request.init_containers if c.sidecar] + list(request.containers)
    return tuple(
        c.name for c in running
        if any(is_exclusive(request.qos, r, amount, nrt_resources) for r, amount in c.requests.items())
    )
