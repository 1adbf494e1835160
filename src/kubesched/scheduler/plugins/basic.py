"""Small default plugins: PrioritySort, SchedulingGates, NodeUnschedulable, NodeName, DefaultBinder."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.tolerations import is_tolerated
from kubesched.scheduler.framework.capabilities import FilterVector, FilterVectorAt, PodIndependentFilter
from kubesched.scheduler.framework.interface import (
    ADD,
    UPDATE,
    UPDATE_NODE_TAINT,
    BindPlugin,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreEnqueuePlugin,
    QueueSortPlugin,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class PrioritySort(QueueSortPlugin):
    """QueueSort: higher priority first, then earlier queue timestamp."""

    name = "PrioritySort"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        pass

    @staticmethod
    def sort_key(pod: PodInfo, timestamp: float, initial_timestamp: float | None) -> tuple[int, float]:
        return (-pod.priority, timestamp)


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    name = "SchedulingGates"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        pass

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", UPDATE)]

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.gates:
            return None
        return Status.unresolvable(f"waiting for scheduling gates: [{' '.join(pod.gates)}]")


class NodeUnschedulable(FilterPlugin, PodIndependentFilter, FilterVector, FilterVectorAt, EnqueueExtensions):
    name = "NodeUnschedulable"
    depends_on_pods = False  # verdict depends only on the node and the pod
    REASON = "node(s) were unschedulable"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ADD | UPDATE_NODE_TAINT)]

    def _tolerates(self, pod: PodInfo) -> bool:
        return is_tolerated(UNSCHEDULABLE_TAINT, pod.tolerations)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.unschedulable and not self._tolerates(pod):
            return Status.unresolvable(self.REASON)
        return None

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        table = snapshot.table
        if self._tolerates(pod) or not table.unschedulable.any():
            return None if table.n == 0 else np.ones(table.n, dtype=bool)
        mask: np.ndarray = ~table.unschedulable
        return mask

    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        if self._tolerates(pod):
            return np.ones(len(where), dtype=bool)
        mask: np.ndarray = ~snapshot.table.unschedulable[where]
        return mask


class NodeName(FilterPlugin, PodIndependentFilter, FilterVector, FilterVectorAt, EnqueueExtensions):
    name = "NodeName"
    depends_on_pods = False  # verdict depends only on the node and the pod
    REASON = "node(s) didn't match the requested node name"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        pass

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Node", ADD | UPDATE)]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        wanted = pod.spec.get("nodeName")
        if wanted and wanted != node.name:
            return Status.unresolvable(self.REASON)
        return None

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        if pod.spec.get("nodeName"):
            return None
        return np.ones(snapshot.table.n, dtype=bool)

    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        if pod.spec.get("nodeName"):
            return None
        return np.ones(len(where), dtype=bool)


class DefaultBinder(BindPlugin):
    name = "DefaultBinder"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.handle.cluster.bind(pod.obj, node_name)
        return None
