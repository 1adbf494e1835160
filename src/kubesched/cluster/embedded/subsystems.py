"""Optional subsystems of the embedded cluster, switched on by a Scenario's ``spec.cluster`` keys.

Each key maps to a factory called as ``factory(cluster, settings)`` once the cluster exists; it
returns an object that may offer ``report() -> dict`` (merged into the SimulationResult under
``cluster.<key>``). The settings were validated by :mod:`kubesched.api.cluster_settings`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kubesched.cluster.embedded.autoscaler.autoscaler import start_autoscaler
from kubesched.cluster.embedded.kubelet.eviction import start_eviction
from kubesched.cluster.embedded.kubelet.topology import start_topology

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

Factory = Callable[["EmbeddedCluster", dict[str, Any]], Any]

SUBSYSTEMS: Mapping[str, Factory] = MappingProxyType({
    "eviction": start_eviction,
    "autoscaler": start_autoscaler,
    "topology": start_topology,
})


def factory(key: str) -> Factory | None:
    return SUBSYSTEMS.get(key)
