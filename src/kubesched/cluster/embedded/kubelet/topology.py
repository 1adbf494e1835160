"""The ``topology`` subsystem of the embedded cluster: per matching node a simulated kubelet with
the CPU/memory/device managers behind a Topology Manager, its pod resources API and the exporter
that publishes NodeResourceTopology objects.

- A node gets a topology when it is created and matches an entry of ``spec.cluster.topology.nodes``
  or, with ``adoptNodeResourceTopologies`` (default), when a NodeResourceTopology object named after
  it was written by the user (the machine is then read from that object).
- Kubelet admission (a ``PodAdmitHandler`` of the node agent): the Topology Manager aligns the pod
  per the node's policy and scope; a pod it cannot align fails with reason ``TopologyAffinityError``.
- When the pod starts (a ``PodLifecycleHandler``) its plan is committed and the pod resources API
  streams ``ADDED``; when it stops, its resources come back and the stream says ``DELETED``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.cluster_settings.topology import parse_config
from kubesched.api.cpuset import format_cpuset
from kubesched.api.quantity import format_quantity
from kubesched.cluster.embedded.kubelet.exporter import Exporter
from kubesched.cluster.embedded.kubelet.lifecycle import ADMIT, PodAdmitResult
from kubesched.cluster.embedded.kubelet.machine import spec_from_nrt, spec_from_settings
from kubesched.cluster.embedded.kubelet.managers import NodeAllocator, PodAssignment, Rejection
from kubesched.cluster.embedded.kubelet.podresources import ADDED, DELETED, PodResourcesServer
from kubesched.k8s.objects import Obj, key_of
from kubesched.topology.model import NodeTopologySpec
from kubesched.topology.nrt import KIND
from kubesched.topology.qos import pod_request

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster


@dataclass(slots=True)
class SimulatedKubelet:
    """The topology-relevant half of one node's kubelet."""

    name: str
    spec: NodeTopologySpec
    allocator: NodeAllocator
    server: PodResourcesServer
    pending: PodAssignment | None = None  # admitted, not started yet (admission and start are one step)
    admitted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


class TopologySubsystem:
    def __init__(self, cluster: EmbeddedCluster, section: dict[str, Any]) -> None:
        self.cluster = cluster
        self.config = parse_config(section)
        #: the machine of each ``nodes`` entry, in entry order
        self._machines = [(entry, spec_from_settings(entry)) for entry in self.config.nodes]
        self.exporter = Exporter(cluster, self.config.exporter)
        self.kubelets: dict[str, SimulatedKubelet] = {}
        self._created_bound: set[str] = set()  # pods that exist bound from the start (time 0)
        cluster.api.watch(self)
        cluster.node_agent.add_pod_admit_handler(self)
        cluster.node_agent.add_lifecycle_handler(self)

    # -- nodes ------------------------------------------------------------------------------------
    def on_add(self, kind: str, obj: Obj) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        if kind == "Pod":
            if (obj.get("spec") or {}).get("nodeName") and self.cluster.now() == 0.0:
                self._created_bound.add(obj["metadata"].get("uid", ""))
        elif kind == "Node" and name not in self.kubelets:
            spec = self._machine_for(obj)
            if spec is None and self.config.adopt:
                nrt = self.cluster.api.get(KIND, None, name)
                spec = spec_from_nrt(nrt) if nrt is not None else None
            if spec is not None:
                self._start_kubelet(name, spec)
        elif kind == KIND and self.config.adopt and name not in self.kubelets:
            if self.cluster.api.get("Node", None, name) is not None:
                spec = spec_from_nrt(obj)
                if spec is not None:
                    self._start_kubelet(name, spec)

    def on_update(self, kind: str, old: Obj, new: Obj) -> None:
        pass

    def on_delete(self, kind: str, obj: Obj) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        if kind == "Node" and name in self.kubelets:
            del self.kubelets[name]
            self.exporter.unregister(name)

    def _machine_for(self, node: Obj) -> NodeTopologySpec | None:
        """The machine of the first ``nodes`` entry that matches ``node``."""
        return next((spec for entry, spec in self._machines if entry.matches(node)), None)

    def _start_kubelet(self, name: str, spec: NodeTopologySpec) -> None:
        allocator = NodeAllocator(spec)
        server = PodResourcesServer(allocator, self.cluster.now)
        self.kubelets[name] = SimulatedKubelet(name, spec, allocator, server)
        self.exporter.register(name, spec, server)

    def server(self, node: str) -> PodResourcesServer | None:
        """The pod resources API of ``node`` (None if the node has no simulated topology)."""
        kubelet = self.kubelets.get(node)
        return kubelet.server if kubelet is not None else None

    # -- kubelet admission and pod lifecycle ---------------------------------------------------
    def admit(self, pod: Obj, node: Obj) -> PodAdmitResult:
        kubelet = self.kubelets.get((node.get("metadata") or {}).get("name", ""))
        if kubelet is None:
            return ADMIT
        request = pod_request(pod)
        plan = kubelet.allocator.admit(request)
        if isinstance(plan, Rejection):
            kubelet.rejected[plan.reason] = kubelet.rejected.get(plan.reason, 0) + 1
            return PodAdmitResult.refuse(plan.reason, plan.message)
        kubelet.pending = plan
        return ADMIT

    def pod_started(self, pod: Obj, node: str) -> None:
        kubelet = self.kubelets.get(node)
        if kubelet is None:
            return
        request = pod_request(pod)
        plan = kubelet.pending if kubelet.pending is not None and kubelet.pending.uid == request.uid else None
        kubelet.pending = None
        if plan is None:
            fresh = kubelet.allocator.admit(request)
            if isinstance(fresh, Rejection):
                return
            plan = fresh
        kubelet.allocator.commit(plan)
        kubelet.admitted += 1
        kubelet.server.publish(ADDED, plan)
        if request.uid in self._created_bound:
            self._created_bound.discard(request.uid)
            self.exporter.initial_sync()

    def pod_stopped(self, pod: Obj, node: str) -> None:
        kubelet = self.kubelets.get(node)
        if kubelet is None:
            return
        uid = (pod.get("metadata") or {}).get("uid") or key_of(pod)
        released = kubelet.allocator.release(uid)
        if released is not None:
            kubelet.server.publish(DELETED, released)

    # -- result ---------------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        rejected: dict[str, int] = {}
        nodes = []
        for name in sorted(self.kubelets):
            k = self.kubelets[name]
            for reason, count in k.rejected.items():
                rejected[reason] = rejected.get(reason, 0) + count
            free_devices = k.allocator.free_devices()
            free_memory = k.allocator.free_memory()
            free_cpus = set(k.allocator.free_cpus())
            zones = []
            for z in k.spec.zones:
                zone: dict[str, Any] = {
                    "name": z.name,
                    "freeCPUs": format_cpuset(c for c in z.cpus if c in free_cpus),
                    "freeMemory": format_quantity("memory", free_memory[z.numa_id]),
                }
                for resource in k.spec.device_resources:
                    zone[resource] = len(free_devices[resource][z.numa_id])
                zones.append(zone)
            nodes.append({
                "node": name,
                "policy": k.spec.policy,
                "scope": k.spec.scope,
                "admitted": k.admitted,
                "rejected": dict(sorted(k.rejected.items())),
                "zones": zones,
            })
        settings = self.config.exporter
        exporter: dict[str, Any] = {
            "mode": settings.mode,
            "updates": self.exporter.updates,
            "listCalls": sum(k.server.calls["List"] for k in self.kubelets.values()),
        }
        if settings.mode == "Poll":
            exporter["interval"] = settings.interval
        else:
            exporter["delay"] = settings.delay
        return {
            "exporter": exporter,
            "admitted": sum(k.admitted for k in self.kubelets.values()),
            "rejected": dict(sorted(rejected.items())),
            "nodes": nodes,
        }


def start_topology(cluster: EmbeddedCluster, section: dict[str, Any]) -> TopologySubsystem:
    """Factory for ``spec.cluster.topology`` (see :mod:`kubesched.cluster.embedded.subsystems`)."""
    return TopologySubsystem(cluster, section)
