from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api import resources
from kubesched.api.resources import (
    default_pod_requests_from_limits,
    default_requests_from_limits,
    has_restartable_init_container,
    node_allocatable,
    pod_host_ports,
    pod_nonzero_requests,
    pod_requests,
)
from kubesched.testkit.builders import make_container, make_pod

MI = 1024 * 1024


def c(name: str = "c", requests: dict | None = None, limits: dict | None = None, **fields: Any) -> dict[str, Any]:
    """A container of image ``img``."""
    return make_container(name, image="img", requests=requests, limits=limits, **fields)


def sidecar(name: str, requests: dict) -> dict[str, Any]:
    return c(name, requests, restart_policy="Always")


def pod(containers: list, init: list | None = None, overhead: dict | None = None) -> dict[str, Any]:
    """Pod ``p`` (no namespace) of these containers."""
    return make_pod("p", namespace=None, containers=containers, init_containers=init,
                    **({"overhead": overhead} if overhead is not None else {}))


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (pod([c()]), {}),
        (pod([c(requests={"cpu": "1", "memory": "1Gi"})]), {"cpu": 1000, "memory": 1024 * MI}),
        (pod([c("a", {"cpu": "1"}), c("b", {"cpu": "500m", "memory": "100Mi"})]), {"cpu": 1500, "memory": 100 * MI}),
        # init 2 cpu vs containers 1+1, plus overhead 250m (upstream PodRequests: max, then + overhead)
        (pod([c("a", {"cpu": "1"}), c("b", {"cpu": "1"})], [c("i", {"cpu": "2"})], {"cpu": "250m"}), {"cpu": 2250}),
        (pod([c("a", {"cpu": "1"})], [c("i", {"cpu": "3"}), c("j", {"cpu": "2", "memory": "1Mi"})]),
         {"cpu": 3000, "memory": MI}),
        (pod([c("a", {"cpu": "4"})], [c("i", {"cpu": "3"})]), {"cpu": 4000}),
        (pod([c("a", {"nvidia.com/gpu": 1})]), {"nvidia.com/gpu": 1}),
        (pod([c("a", {"cpu": "1"})], overhead={"cpu": "100m", "memory": "10Mi"}), {"cpu": 1100, "memory": 10 * MI}),
        # limits are not requests here (the loader defaults them)
        (pod([c("a", limits={"cpu": "2"})]), {}),
    ],
)
def test_pod_requests_combine_containers_init_containers_and_overhead(p: dict, expected: dict) -> None:
    assert pod_requests(p) == expected


@pytest.mark.parametrize(
    ("p", "cpu"),
    [
        # sidecar adds to the regular sum: 1 + 1 = 2
        (pod([c("a", {"cpu": "1"})], [sidecar("s", {"cpu": "1"})]), 2000),
        # init after a sidecar runs alongside it: max(1 + 1, 3 + 1) = 4
        (pod([c("a", {"cpu": "1"})], [sidecar("s", {"cpu": "1"}), c("i", {"cpu": "3"})]), 4000),
        # init before the sidecar does not: max(1 + 1, 3) = 3
        (pod([c("a", {"cpu": "1"})], [c("i", {"cpu": "3"}), sidecar("s", {"cpu": "1"})]), 3000),
        # two sidecars then init: max(1+1+2, 2+1+2) = 5
        (pod([c("a", {"cpu": "1"})], [sidecar("s1", {"cpu": "1"}), sidecar("s2", {"cpu": "2"}),
                                      c("i", {"cpu": "2"})]), 5000),
    ],
)
def test_pod_requests_handle_restartable_init_containers(p: dict, cpu: int) -> None:
    assert pod_requests(p)["cpu"] == cpu


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (pod([c()]), (100, 200 * MI)),
        (pod([c(), c("b")]), (200, 400 * MI)),
        (pod([c(requests={"cpu": "0", "memory": "0"})]), (0, 0)),
        (pod([c(requests={"cpu": "1"})]), (1000, 200 * MI)),
        (pod([c(requests={"memory": "1Gi"})]), (100, 1024 * MI)),
        (pod([c()], [c("i", {"cpu": "2"})]), (2000, 200 * MI)),
        (pod([c()], [c("i")]), (100, 200 * MI)),
        (pod([c()], overhead={"cpu": "50m", "memory": "1Mi"}), (150, 201 * MI)),
        # framework.calculateResource: sidecars only enter through the init-phase max (upstream
        # NodeInfo.NonZeroRequested): max(100m, 1) cpu, max(200Mi, 200Mi [missing]) memory
        (pod([c()], [sidecar("s", {"cpu": "1"})]), (1000, 200 * MI)),
    ],
)
def test_pod_nonzero_requests_default_missing_cpu_and_memory(p: dict, expected: tuple[int, int]) -> None:
    assert pod_nonzero_requests(p) == expected


@pytest.mark.parametrize(
    ("p", "expected"),
    [(pod([c()]), False), (pod([c()], [c("i")]), False), (pod([c()], [sidecar("s", {})]), True)],
)
def test_has_restartable_init_container(p: dict, expected: bool) -> None:
    assert has_restartable_init_container(p) is expected


def test_pod_host_ports_lists_regular_container_host_ports_with_defaults() -> None:
    p = pod(
        [
            c("a", ports=[{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}]),
            c("b", ports=[{"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
                          {"containerPort": 9, "hostPort": 0}]),
        ],
        [c("i", ports=[{"containerPort": 1, "hostPort": 1}])],
    )
    assert pod_host_ports(p) == [("0.0.0.0", "TCP", 8080), ("10.0.0.1", "UDP", 53)]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}}, {"cpu": 4000, "memory": 8 * 1024 * MI, "pods": 110}),
        ({"capacity": {"cpu": "2", "pods": "10"}}, {"cpu": 2000, "pods": 10}),
        ({"allocatable": {"cpu": "3"}, "capacity": {"cpu": "4"}}, {"cpu": 3000}),
        ({"allocatable": {}, "capacity": {"cpu": "4"}}, {"cpu": 4000}),
        ({}, {}),
    ],
)
def test_node_allocatable_prefers_allocatable_over_capacity(status: dict, expected: dict) -> None:
    assert node_allocatable({"kind": "Node", "metadata": {"name": "n"}, "status": status}) == expected


@pytest.mark.parametrize(
    ("container", "expected_requests"),
    [
        (c(limits={"cpu": "2", "memory": "1Gi"}), {"cpu": "2", "memory": "1Gi"}),
        (c(requests={"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"}), {"cpu": "1", "memory": "1Gi"}),
        (c(requests={"cpu": "1"}), {"cpu": "1"}),
        (c(), None),
    ],
)
def test_default_requests_from_limits_fills_only_missing_resources(container: dict, expected_requests: dict | None) -> None:
    default_requests_from_limits(container)
    assert (container.get("resources") or {}).get("requests") == expected_requests


def test_default_pod_requests_from_limits_covers_init_containers() -> None:
    p = pod([c("a", limits={"cpu": "1"})], [c("i", limits={"memory": "1Mi"})])
    default_pod_requests_from_limits(p)
    assert pod_requests(p) == {"cpu": 1000, "memory": MI}


_QUANTITIES = st.one_of(
    st.integers(min_value=0, max_value=2**40),
    st.builds(lambda n, suffix: f"{n}{suffix}", st.integers(0, 10**6),
              st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "n", "u", "E", "Ei"])),
    st.builds(lambda a, b, suffix: f"{a}.{b}{suffix}", st.integers(0, 999), st.integers(0, 999),
              st.sampled_from(["", "m", "Mi", "Gi", "k"])),
)


@settings(max_examples=300, deadline=None)
@given(requests=st.dictionaries(st.sampled_from(["cpu", "memory", "ephemeral-storage", "example.com/gpu", "pods"]),
                                _QUANTITIES, max_size=4),
       more=st.sampled_from(["", "init", "overhead", "second"]))
def test_the_one_container_shortcut_equals_the_general_walk(requests: dict, more: str) -> None:
    """Pods with one container skip the exact sums; their requests (and non-zero requests) are what
    the walk over containers, init containers and overhead gives — with fractions of a milli-cpu,
    huge values and missing cpu/memory."""
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if more == "init":
        spec["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "1500m"}}}]
    elif more == "overhead":
        spec["overhead"] = {"cpu": "250m", "memory": "1Mi"}
    elif more == "second":
        spec["containers"].append({"name": "d", "resources": {"requests": requests}})
    p = {"spec": spec}
    assert pod_requests(p) == resources._pod_requests_walk(p)
    assert pod_nonzero_requests(p) == resources._pod_nonzero_requests_walk(p)
