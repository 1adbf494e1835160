"""Optional subsystems of the embedded cluster, switched on by a Scenario's ``spec.cluster`` keys.

Each entry maps a key to ``(module, factory)``; the factory is called as ``factory(cluster, settings)``
once the cluster exists and returns an object that may offer ``report() -> dict`` (merged into the
SimulationResult under ``cluster.<key>``). Modules are imported only when their key is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

SUBSYSTEMS: dict[str, tuple[str, str]] = {
    "eviction": ("kubesched.cluster.embedded.kubelet.eviction", "start_eviction"),
    "autoscaler": ("kubesched.cluster.embedded.autoscaler.autoscaler", "start_autoscaler"),
    "topology": ("kubesched.cluster.embedded.kubelet.topology", "start_topology"),
}


def factory(key: str) -> Callable[[EmbeddedCluster, dict[str, Any]], Any] | None:
    entry = SUBSYSTEMS.get(key)
    if entry is None:
        return None
    module, name = entry
    found: Callable[[EmbeddedCluster, dict[str, Any]], Any] = getattr(importlib.import_module(module), name)
    return found
