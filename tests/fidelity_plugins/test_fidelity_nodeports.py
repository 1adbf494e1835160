"""NodePorts as v1.28.7's ``node_ports.go``: PreFilter looks only at container ports with a
hostPort (``getContainerPorts``) and skips the plugin for a pod without any, so a pod declaring only
``containerPort`` (as most Deployments do) is not NodePorts' concern at all — which also leaves
NodeResourcesFit the only pod-dependent filter, and preemption dry runs by arithmetic."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.scheduler.framework.interface import Code, CycleState
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.nodeports import NodePorts
from kubesched.testkit.builders import make_container, make_pod


def pod_with_ports(ports: list[dict[str, Any]]) -> PodInfo:
    return PodInfo.from_pod(make_pod("p", containers=[make_container("app", "100m", "64Mi", ports=ports)]))


@pytest.mark.parametrize("ports, skipped", [
    ([], True),
    ([{"containerPort": 80}], True),
    ([{"containerPort": 80, "hostPort": 0}], True),
    ([{"containerPort": 80, "hostPort": 8080}], False),
    ([{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 80, "hostPort": 80}], False),
])
def test_prefilter_skips_pods_without_host_ports(ports: list[dict[str, Any]], skipped: bool) -> None:
    _, status = NodePorts({}, object()).pre_filter(CycleState(), pod_with_ports(ports))  # type: ignore[arg-type]
    assert (status is not None and status.code == Code.SKIP) == skipped
