"""NodeResourceTopology objects (``topology.node.k8s.io/v1alpha2``): attribute names, the pod set
fingerprint, and the parsed view the scheduler plugin works on.

The Topology Manager configuration is read the way scheduler-plugins' ``nodeconfig`` reads it: the
deprecated ``topologyPolicies`` first, then the ``topologyManagerPolicy`` / ``topologyManagerScope`` /
``topologyManagerMaxNUMANodes`` attributes; defaults policy ``none``, scope ``container``, 8 NUMA
nodes. Only zones of type ``Node`` named ``node-<id>`` count.

kubesched's exporter adds, per zone, the attribute ``kubesched.io/containers``: the containers
(``namespace/pod/container``) holding exclusive resources in that zone — kubesched's own encoding
of what upstream publishes with the ``numaplacement`` format; the plugin uses it to simulate
evictions during preemption.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.cluster_settings.topology import POLICIES, SCOPES
from kubesched.api.errors import InvalidQuantity
from kubesched.api.quantity import resource_amount
from kubesched.topology.fingerprint import fingerprint
from kubesched.topology.model import zone_id

API_VERSION = "topology.node.k8s.io/v1alpha2"
KIND = "NodeResourceTopology"
ZONE_TYPE = "Node"
ATTR_POLICY = "topologyManagerPolicy"
ATTR_SCOPE = "topologyManagerScope"
ATTR_MAX_NUMA_NODES = "topologyManagerMaxNUMANodes"
ATTR_FINGERPRINT = "nodeTopologyPodsFingerprint"
ATTR_FINGERPRINT_METHOD = "nodeTopologyPodsFingerprintMethod"
ATTR_CONTAINERS = "kubesched.io/containers"
METHOD_ALL = "all"
METHOD_EXCLUSIVE = "with-exclusive-resources"
DEFAULT_MAX_NUMA_NODES = 8
LIMIT_NUMA_NODES = 1024

#: deprecated ``topologyPolicies`` values -> (policy, scope)
LEGACY_POLICIES: dict[str, tuple[str, str]] = {
    "SingleNUMANodePodLevel": ("single-numa-node", "pod"),
    "SingleNUMANodeContainerLevel": ("single-numa-node", "container"),
    "BestEffortPodLevel": ("best-effort", "pod"),
    "BestEffortContainerLevel": ("best-effort", "container"),
    "RestrictedPodLevel": ("restricted", "pod"),
    "RestrictedContainerLevel": ("restricted", "container"),
    "None": ("none", "container"),
}


def legacy_policy(policy: str, scope: str) -> str:
    for name, pair in LEGACY_POLICIES.items():
        if pair == (policy, scope):
            return name
    return "None"


def pods_fingerprint(pod_keys: Iterable[str]) -> str:
    """The ``nodeTopologyPodsFingerprint`` of a set of ``namespace/name`` pod keys (the exporter
    publishes it; the scheduler computes it from its cache to know whether an object reflects the
    pods it placed)."""
    return fingerprint(key.partition("/")[::2] for key in pod_keys)


@dataclass(slots=True)
class Zone:
    numa_id: int
    name: str
    available: dict[str, int]
    allocatable: dict[str, int] = field(default_factory=dict)
    capacity: dict[str, int] = field(default_factory=dict)
    costs: dict[int, int] = field(default_factory=dict)
    containers: frozenset[str] = frozenset()

    def copy(self) -> Zone:
        return Zone(self.numa_id, self.name, dict(self.available), self.allocatable, self.capacity,
                    self.costs, self.containers)


@dataclass(slots=True)
class TopologyView:
    """One node's NodeResourceTopology, parsed (amounts in kubesched units)."""

    node: str
    zones: list[Zone]
    policy: str = "none"
    scope: str = "container"
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES
    fingerprint: str = ""
    fingerprint_method: str = ""
    resource_version: str = ""
    has_placement: bool = False

    def copy(self) -> TopologyView:
        return TopologyView(self.node, [z.copy() for z in self.zones], self.policy, self.scope,
                            self.max_numa_nodes, self.fingerprint, self.fingerprint_method,
                            self.resource_version, self.has_placement)

    def zone_of_container(self, key: str) -> list[Zone]:
        return [z for z in self.zones if key in z.containers]


def _attributes(raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for attr in raw or ():
        if isinstance(attr, Mapping) and isinstance(attr.get("name"), str):
            out[attr["name"]] = str(attr.get("value", ""))
    return out


def _amount(resource: str, value: Any) -> int:
    try:
        return resource_amount(resource, value)
    except (InvalidQuantity, ValueError, TypeError):
        return 0


def parse_nrt(obj: Mapping[str, Any]) -> TopologyView:
    meta = obj.get("metadata") or {}
    view = TopologyView(node=meta.get("name", ""), zones=[], resource_version=str(meta.get("resourceVersion", "")))
    policies = obj.get("topologyPolicies") or []
    if policies and policies[0] in LEGACY_POLICIES:
        view.policy, view.scope = LEGACY_POLICIES[policies[0]]
    attrs = _attributes(obj.get("attributes"))
    if attrs.get(ATTR_POLICY) in POLICIES:
        view.policy = attrs[ATTR_POLICY]
    if attrs.get(ATTR_SCOPE) in SCOPES:
        view.scope = attrs[ATTR_SCOPE]
    max_nodes = attrs.get(ATTR_MAX_NUMA_NODES, "")
    if max_nodes.isdigit() and int(max_nodes) > 1:
        view.max_numa_nodes = min(int(max_nodes), LIMIT_NUMA_NODES)
    view.fingerprint = attrs.get(ATTR_FINGERPRINT, "")
    view.fingerprint_method = attrs.get(ATTR_FINGERPRINT_METHOD, "")
    for raw in obj.get("zones") or ():
        if not isinstance(raw, Mapping) or raw.get("type") != ZONE_TYPE:
            continue
        numa_id = zone_id(str(raw.get("name", "")))
        if numa_id is None:
            continue
        zone = Zone(numa_id, str(raw["name"]), {})
        for res in raw.get("resources") or ():
            if not isinstance(res, Mapping) or not isinstance(res.get("name"), str):
                continue
            name = res["name"]
            zone.available[name] = _amount(name, res.get("available", 0))
            zone.allocatable[name] = _amount(name, res.get("allocatable", 0))
            zone.capacity[name] = _amount(name, res.get("capacity", 0))
        for cost in raw.get("costs") or ():
            other = zone_id(str((cost or {}).get("name", "")))
            if other is not None and isinstance(cost.get("value"), int):
                zone.costs[other] = cost["value"]
        zattrs = _attributes(raw.get("attributes"))
        if ATTR_CONTAINERS in zattrs:
            view.has_placement = True
            zone.containers = frozenset(k for k in zattrs[ATTR_CONTAINERS].split(",") if k)
        view.zones.append(zone)
    return view
