"""NodeResourceTopology objects (``topology.node.k8s.io/v1alpha2``): attribute names, the pod set
fingerprint, and the parsed view the scheduler plugin works on.

The Topology Manager configuration is read the way scheduler-plugins' ``nodeconfig`` reads it: the
deprecated ``topologyPolicies`` first, then the ``topologyManagerPolicy`` / ``topologyManagerScope`` /
``topologyManagerMaxNUMANodes`` attributes; defaults policy ``none``, scope ``container``, 8 NUMA
nodes. Only zones of type ``Node`` named ``node-<id>`` count.

The ``numaplacement`` attributes (:mod:`kubesched.topology.numaplacement`) tell which zone each
container holding exclusive resources is in; :func:`placement_of` decodes them the way
scheduler-plugins' cache store does (``getNUMAPlacementInfo``), for the plugin's preemption dry runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.cluster_settings.topology import POLICIES, SCOPES
from kubesched.api.errors import InvalidQuantity
from kubesched.api.quantity import resource_amount
from kubesched.api.selectors import parse_int64
from kubesched.topology.fingerprint import fingerprint
from kubesched.topology.hints import SINGLE_NUMA_NODE
from kubesched.topology.model import ZONE_PREFIX, zone_id
from kubesched.topology.numaplacement import (
    ATTR_METADATA,
    ATTR_VECTOR,
    Placement,
    PlacementError,
    decode,
    parse_metadata,
)

API_VERSION = "topology.node.k8s.io/v1alpha2"
KIND = "NodeResourceTopology"
ZONE_TYPE = "Node"
ATTR_POLICY = "topologyManagerPolicy"
ATTR_SCOPE = "topologyManagerScope"
ATTR_MAX_NUMA_NODES = "topologyManagerMaxNUMANodes"
ATTR_FINGERPRINT = "nodeTopologyPodsFingerprint"
ATTR_FINGERPRINT_METHOD = "nodeTopologyPodsFingerprintMethod"
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

    def copy(self) -> Zone:
        return Zone(self.numa_id, self.name, dict(self.available), self.allocatable, self.capacity, self.costs)


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
    #: the resources any zone reports (what makes a device resource exclusive)
    resource_names: frozenset[str] = frozenset()
    #: the ``numaplacement`` metadata, kept only when the ``topologyManagerPolicy`` attribute is
    #: ``single-numa-node`` (the only policy scheduler-plugins decodes it for)
    placement_metadata: str = ""
    #: zone name -> ``numaplacement`` vector, for every zone that has one
    placement_vectors: dict[str, str] = field(default_factory=dict)

    def copy(self) -> TopologyView:
        return TopologyView(self.node, [z.copy() for z in self.zones], self.policy, self.scope,
                            self.max_numa_nodes, self.fingerprint, self.fingerprint_method,
                            self.resource_version, self.resource_names, self.placement_metadata,
                            self.placement_vectors)


@dataclass(frozen=True, slots=True)
class PodData:
    """A pod on a node as the plugin's cache sees it (scheduler-plugins' ``podData``)."""

    namespace: str
    name: str
    #: its containers holding exclusive resources (:func:`~kubesched.topology.qos.pinned_containers`)
    pinned: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def exclusive(self) -> bool:
        return bool(self.pinned)


def placement_of(view: TopologyView, pods: Sequence[PodData]) -> Placement | None:
    """The zone of each pinned container of ``pods`` (the pods on the node when ``view`` was taken),
    decoded from the object's ``numaplacement`` attributes; None when there are no pods, the policy
    attribute is not ``single-numa-node``, the attributes are missing or malformed, or the pinned
    containers are not as many as the object says it encoded — as scheduler-plugins' cache store."""
    if not pods or not view.placement_metadata:
        return None
    try:
        payload = parse_metadata(view.placement_metadata)
        for name, vector in view.placement_vectors.items():
            number = parse_int64(name.removeprefix(ZONE_PREFIX))  # Go's strconv.Atoi
            if number is None:
                return None
            payload.vectors[number] = vector
        containers = [(p.namespace, p.name, c) for p in pods for c in p.pinned]
        return decode(payload, containers) if containers else None
    except PlacementError:
        return None


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
    if attrs.get(ATTR_POLICY) == SINGLE_NUMA_NODE:
        view.placement_metadata = attrs.get(ATTR_METADATA, "")
    names: set[str] = set()
    for raw in obj.get("zones") or ():
        if not isinstance(raw, Mapping):
            continue
        names.update(r["name"] for r in raw.get("resources") or ()
                     if isinstance(r, Mapping) and isinstance(r.get("name"), str))
        zattrs = _attributes(raw.get("attributes"))
        if ATTR_VECTOR in zattrs:
            view.placement_vectors[str(raw.get("name", ""))] = zattrs[ATTR_VECTOR]
        if raw.get("type") != ZONE_TYPE:
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
        view.zones.append(zone)
    view.resource_names = frozenset(names)
    return view
