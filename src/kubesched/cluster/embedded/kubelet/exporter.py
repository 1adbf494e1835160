"""The resource topology exporter: NodeResourceTopology objects from the pod resources API.

Like the resource-topology-exporter / NFD topology-updater daemons, it knows the machine (zones, CPU
ids, memory and devices per zone: :class:`NodeTopologySpec`, what sysfs tells them) and the kubelet's
Topology Manager settings, and asks the kubelet's pod resources API what is allocatable and what each
pod holds. Per zone it publishes ``capacity`` (everything), ``allocatable`` (capacity minus reserved)
and ``available`` (allocatable minus what is assigned exclusively), the policy and scope attributes,
the pod set fingerprint and, on ``single-numa-node`` nodes unless ``podPlacement: false``, the zone
of every container holding exclusive resources in the ``numaplacement`` encoding
(:mod:`kubesched.topology.numaplacement`): the zone of its first exclusive CPU, else of its first
device, else of its pinned memory. Other policies may spread a container over zones, which the
encoding cannot say (and scheduler-plugins decodes it only for ``single-numa-node``).

Two ways to stay current (a trade-off between API writes and staleness):

- ``Poll``: every ``interval`` (all nodes on the same grid: t = interval, 2·interval, ...). Between
  two polls the objects are stale.
- ``Watch``: subscribed to the pod resources ``Watch`` stream; an allocation change is published
  ``delay`` later (changes within that window are coalesced). One API write per change.

Start-up: an object is created as soon as a node is known; the pods already running at time 0 (pods
created bound, i.e. running before the simulation started) are reflected at time 0, before the
scheduler's first cycle, in either mode — as if the exporter had been running all along.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.cluster_settings.topology import POLL, WATCH, ExporterSettings
from kubesched.api.quantity import format_quantity
from kubesched.cluster.embedded.kubelet.podresources import ContainerResources, PodResourcesServer, WatchEvent
from kubesched.k8s.objects import ApiError
from kubesched.topology.hints import SINGLE_NUMA_NODE
from kubesched.topology.model import NodeTopologySpec, zone_name
from kubesched.topology.nrt import (
    API_VERSION,
    ATTR_FINGERPRINT,
    ATTR_FINGERPRINT_METHOD,
    ATTR_POLICY,
    ATTR_SCOPE,
    KIND,
    METHOD_ALL,
    ZONE_TYPE,
    legacy_policy,
    pods_fingerprint,
)
from kubesched.topology.numaplacement import ATTR_METADATA, ATTR_VECTOR, ContainerID, Payload, encode

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

def _resource(name: str, capacity: int, allocatable: int, available: int) -> dict[str, Any]:
    return {
        "name": name,
        "capacity": format_quantity(name, capacity),
        "allocatable": format_quantity(name, allocatable),
        "available": format_quantity(name, max(0, available)),
    }


def _zone_of(container: ContainerResources, cpu_zone: dict[int, int]) -> int | None:
    """The zone a container's exclusive resources are in (None: it holds none)."""
    if container.cpu_ids:
        return cpu_zone[container.cpu_ids[0]]
    for d in container.devices:
        if d.device_ids and d.topology:
            return d.topology[0]
    return next((m.topology[0] for m in container.memory if m.topology), None)


def build_nrt(node: str, spec: NodeTopologySpec, server: PodResourcesServer, *, placement: bool = True) -> dict[str, Any]:
    """The NodeResourceTopology body (without metadata) the exporter publishes for ``node`` now."""
    allocatable = server.get_allocatable_resources()
    pods = server.list()
    cpu_zone = {c: z.numa_id for z in spec.zones for c in z.cpus}
    alloc_cpus: dict[int, int] = {}
    for cpu in allocatable.cpu_ids:
        alloc_cpus[cpu_zone[cpu]] = alloc_cpus.get(cpu_zone[cpu], 0) + 1
    alloc_memory = {m.topology[0]: m.size for m in allocatable.memory if m.topology}
    alloc_devices: dict[tuple[str, int], int] = {}
    for d in allocatable.devices:
        for zone in d.topology:
            alloc_devices[(d.resource_name, zone)] = alloc_devices.get((d.resource_name, zone), 0) + len(d.device_ids)
    used: dict[tuple[str, int], int] = {}
    placed: dict[ContainerID, int] = {}

    def use(resource: str, zone: int, amount: int) -> None:
        used[(resource, zone)] = used.get((resource, zone), 0) + amount

    for pod in pods:
        for c in pod.containers:
            for cpu in c.cpu_ids:
                use("cpu", cpu_zone[cpu], 1000)
            for m in c.memory:
                for zone in m.topology:
                    use("memory", zone, m.size // len(m.topology))
            for d in c.devices:
                for zone in d.topology:
                    use(d.resource_name, zone, len(d.device_ids) // len(d.topology))
            zone_of = _zone_of(c, cpu_zone)
            if zone_of is not None:
                placed[(pod.namespace, pod.name, c.name)] = zone_of
    payload: Payload | None = None
    if placement and spec.policy == SINGLE_NUMA_NODE:
        payload = encode(max(z.numa_id for z in spec.zones) + 1, placed)  # zone ids may have holes
    zones: list[dict[str, Any]] = []
    for z in spec.zones:
        cpu_alloc = alloc_cpus.get(z.numa_id, 0) * 1000
        mem_alloc = alloc_memory.get(z.numa_id, 0)
        resources = [
            _resource("cpu", len(z.cpus) * 1000, cpu_alloc, cpu_alloc - used.get(("cpu", z.numa_id), 0)),
            _resource("memory", z.memory, mem_alloc, mem_alloc - used.get(("memory", z.numa_id), 0)),
        ]
        for resource, ids in z.devices:
            alloc = alloc_devices.get((resource, z.numa_id), 0)
            resources.append(_resource(resource, len(ids), alloc, alloc - used.get((resource, z.numa_id), 0)))
        entry: dict[str, Any] = {
            "name": z.name,
            "type": ZONE_TYPE,
            "costs": [{"name": zone_name(other), "value": cost} for other, cost in z.distances],
            "resources": resources,
        }
        if payload is not None and z.numa_id in payload.vectors:
            entry["attributes"] = [{"name": ATTR_VECTOR, "value": payload.vectors[z.numa_id]}]
        zones.append(entry)
    attributes = [
        {"name": ATTR_POLICY, "value": spec.policy},
        {"name": ATTR_SCOPE, "value": spec.scope},
        {"name": ATTR_FINGERPRINT, "value": pods_fingerprint(p.key for p in pods)},
        {"name": ATTR_FINGERPRINT_METHOD, "value": METHOD_ALL},
    ]
    if payload is not None:
        attributes.append({"name": ATTR_METADATA, "value": payload.metadata()})
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "topologyPolicies": [legacy_policy(spec.policy, spec.scope)],
        "attributes": attributes,
        "zones": zones,
    }


@dataclass(slots=True)
class _Node:
    spec: NodeTopologySpec
    server: PodResourcesServer
    cancel: Callable[[], None]
    updates: int = 0


@dataclass(slots=True)
class Exporter:
    cluster: EmbeddedCluster
    settings: ExporterSettings
    nodes: dict[str, _Node] = field(default_factory=dict)
    updates: int = 0
    _pending: set[str] = field(default_factory=set)
    _poll_armed: bool = False
    _initial_sync: bool = True  # still before the first reflection of the time-0 pods

    def register(self, name: str, spec: NodeTopologySpec, server: PodResourcesServer) -> None:
        cancel = server.watch(lambda event: self._changed(name, event))
        self.nodes[name] = _Node(spec, server, cancel)
        self.publish(name)
        if self.settings.mode == POLL and not self._poll_armed:
            self._poll_armed = True
            self._arm_poll()

    def unregister(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is None:
            return
        node.cancel()
        try:
            self.cluster.delete(KIND, None, name)
        except ApiError:
            pass

    # -- keeping objects current ----------------------------------------------------------------
    def _changed(self, name: str, event: WatchEvent) -> None:
        if self.settings.mode == WATCH and name not in self._pending:
            self._pending.add(name)
            self.cluster.loop.call_later(self.settings.delay, lambda: self._flush(name))

    def initial_sync(self) -> None:
        """A pod that was running before the simulation started got its resources (time 0): publish
        every node once they all have, before the scheduler's first cycle."""
        if self._initial_sync and self.cluster.now() == 0.0:
            self._initial_sync = False
            self.cluster.loop.call_at(0.0, self._publish_all)

    def _flush(self, name: str) -> None:
        self._pending.discard(name)
        if name in self.nodes:
            self.publish(name)

    def _arm_poll(self) -> None:
        loop = self.cluster.loop
        interval = self.settings.interval
        ticks = int(loop.now() // interval) + 1
        loop.call_at(ticks * interval, self._poll, background=True)

    def _poll(self) -> None:
        self._publish_all()
        if self.nodes:
            self._arm_poll()
        else:
            self._poll_armed = False

    def _publish_all(self) -> None:
        for name in sorted(self.nodes):
            self.publish(name)

    def publish(self, name: str) -> bool:
        """Write ``name``'s object if its content changed; return whether it did."""
        node = self.nodes[name]
        body = build_nrt(name, node.spec, node.server, placement=self.settings.placement)
        api = self.cluster.api
        current = api.get(KIND, None, name)
        if current is None:
            api.create({**body, "metadata": {"name": name}})
        else:
            if {k: v for k, v in current.items() if k != "metadata"} == body:
                return False
            api.update({**body, "metadata": current["metadata"]})
        node.updates += 1
        self.updates += 1
        return True
