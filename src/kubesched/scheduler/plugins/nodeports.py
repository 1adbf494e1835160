"""NodePorts: a pod's hostPorts must be free on the node."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.scheduler.framework.capabilities import FailureStatusesVector, FilterVector, FilterVectorAt
from kubesched.scheduler.framework.interface import (
    ADD,
    DELETE,
    UPDATE,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    Status,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import NodeTableSnapshot

REASON = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"


def port_conflicts(used: list[tuple[str, str, int]], wanted: tuple[str, str, int]) -> bool:
    ip, protocol, port = wanted
    if port <= 0:
        return False
    for used_ip, used_protocol, used_port in used:
        if used_port != port or used_protocol != protocol:
            continue
        if ip == ANY_IP or used_ip == ANY_IP or used_ip == ip:
            return True
    return False


class NodePorts(
    PreFilterPlugin, FilterPlugin, FilterVector, FilterVectorAt, FailureStatusesVector, EnqueueExtensions,
):
    name = "NodePorts"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        pass

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", DELETE), ClusterEvent("Node", ADD | UPDATE)]

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        # upstream getContainerPorts keeps only the ports with a hostPort: a pod whose containers
        # declare container ports alone is skipped
        if not pod.host_ports:
            return None, Status.skip()
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.used_ports:
            return None
        for wanted in pod.host_ports:
            if port_conflicts(node.used_ports, wanted):
                return Status.unschedulable(REASON)
        return None

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot) -> np.ndarray | None:
        return self.filter_vector_at(state, pod, snapshot, np.arange(snapshot.table.n))

    def filter_vector_at(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, where: np.ndarray
    ) -> np.ndarray | None:
        """Only nodes whose pods use host ports can conflict; those are checked one by one."""
        mask = np.ones(len(where), dtype=bool)
        if pod.host_ports:
            nodes = snapshot.node_infos
            for k in np.flatnonzero(snapshot.table.has_ports[where]).tolist():
                if self.filter(state, pod, nodes[int(where[k])]) is not None:
                    mask[k] = False
        return mask

    def failure_statuses(
        self, state: CycleState, pod: PodInfo, snapshot: NodeTableSnapshot, idx: np.ndarray
    ) -> list[Status]:
        return [Status.unschedulable(REASON)] * len(idx)
