"""NodePorts: a pod's hostPorts must be free on the node."""

from __future__ import annotations

from typing import Any

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


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = "NodePorts"

    def __init__(self, args: dict[str, Any], handle: Handle) -> None:
        pass

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", DELETE), ClusterEvent("Node", ADD | UPDATE)]

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        has_ports = any(c.get("ports") for c in pod.spec.get("containers") or ())
        if not has_ports:
            return None, Status.skip()
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.used_ports:
            return None
        for wanted in pod.host_ports:
            if port_conflicts(node.used_ports, wanted):
                return Status.unschedulable(REASON)
        return None
