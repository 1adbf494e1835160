"""NodeResourcesFit / BalancedAllocation / pod requests pinned against upstream v1.28."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.api.resources import (
    is_extended_resource_name,
    is_scalar_resource_name,
    pod_nonzero_requests,
    pod_requests,
)
from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from kubesched.testkit.framework import FakeHandle, cache_of, node_info

from ._fixtures import container, node_obj, pod_obj

MI = 1024 * 1024


def fit(args: dict | None = None) -> NodeResourcesFit:
    return NodeResourcesFit(args or {}, FakeHandle())


def reasons(plugin: NodeResourcesFit, pod: dict, node: dict) -> tuple[str, ...]:
    info = node_info(node)
    state = CycleState()
    p = PodInfo.from_pod(pod)
    plugin.pre_filter(state, p)
    status = plugin.filter(state, p, info)
    return () if status is None else status.reasons


def test_empty_resource_list_and_zero_weight_default_like_v1_defaults() -> None:
    """``SetDefaults_NodeResourcesFitArgs`` (pkg/scheduler/apis/config/v1/defaults.go): an empty
    ``scoringStrategy.resources`` becomes cpu:1, memory:1 and a zero weight becomes 1."""
    node = node_info(node_obj("n", {"cpu": "4", "memory": "8Gi", "pods": "10"}))
    pod = PodInfo.from_pod(pod_obj(containers=[container("c", {"cpu": "1", "memory": "1Gi"})]))
    default = fit().score(CycleState(), pod, node)
    empty = fit({"scoringStrategy": {"type": "LeastAllocated", "resources": []}}).score(CycleState(), pod, node)
    zero = fit({"scoringStrategy": {"type": "LeastAllocated", "resources": [
        {"name": "cpu", "weight": 0}, {"name": "memory"}]}}).score(CycleState(), pod, node)
    assert default == empty == zero == (75 + 87) // 2
    with pytest.raises(ValueError):
        fit({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}})
    balanced = NodeResourcesBalancedAllocation({"resources": []}, FakeHandle())
    assert balanced.resources == ["cpu", "memory"]


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        ("example.com/gpu", True, True),
        ("nvidia.com/gpu", True, True),
        ("kubernetes.io/foo", False, True),         # prefixed native
        ("foo.kubernetes.io/bar", False, True),     # contains "kubernetes.io/": native, not extended
        ("hugepages-2Mi", False, True),
        ("attachable-volumes-aws-ebs", False, True),
        ("requests.example.com/x", False, False),
        ("cpu", False, False),
        ("foo", False, False),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    """``v1helper.IsExtendedResourceName`` / ``IsPrefixedNativeResource`` (a *contains* check) and
    ``schedutil.IsScalarResourceName``."""
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar


def test_only_extended_resources_can_be_ignored() -> None:
    """``fitsRequest`` (noderesources/fit.go): ignoredResources / ignoredResourceGroups apply only to
    names for which ``IsExtendedResourceName`` holds; hugepages and ``*kubernetes.io/*`` names are
    always checked."""
    node = node_obj("n", {"cpu": "4", "memory": "8Gi", "pods": "10"})
    pod = pod_obj(containers=[container("c", {"cpu": "1", "example.com/gpu": "1", "hugepages-2Mi": "2Mi",
                                              "foo.kubernetes.io/bar": "1"})])
    plugin = fit({"ignoredResources": ["hugepages-2Mi"], "ignoredResourceGroups": ["example.com", "foo.kubernetes.io"]})
    assert sorted(reasons(plugin, pod, node)) == ["Insufficient foo.kubernetes.io/bar", "Insufficient hugepages-2Mi"]
    assert sorted(reasons(fit(), pod, node)) == [
        "Insufficient example.com/gpu", "Insufficient foo.kubernetes.io/bar", "Insufficient hugepages-2Mi"]


def test_non_scalar_unknown_names_are_not_checked() -> None:
    """``Resource.SetMaxResource`` (framework/types.go) keeps only cpu, memory, ephemeral-storage and
    ``IsScalarResourceName`` names, so a request for e.g. ``foo`` never fails the filter."""
    node = node_obj("n", {"cpu": "4", "memory": "8Gi", "pods": "10"})
    pod = pod_obj(containers=[container("c", {"cpu": "1", "foo": "3"})])
    assert reasons(fit(), pod, node) == ()


def test_pod_requests_sum_quantities_exactly_then_round_up() -> None:
    """``resource.PodRequests`` adds ``resource.Quantity`` values exactly; ``MilliValue``/``Value``
    round up once, on the pod total (two 0.1m containers request 1m, not 2m)."""
    p = pod_obj(containers=[container("a", {"cpu": "100u", "memory": "0.5"}),
                            container("b", {"cpu": "100u", "memory": "0.5"})])
    assert pod_requests(p) == {"cpu": 1, "memory": 1}


def test_nonzero_requests_of_a_pod_with_sidecars_follow_calculate_resource() -> None:
    """``framework.calculateResource`` (framework/types.go, v1.28): regular containers' non-zero
    requests are summed; sidecars only count through the init-phase max (cumulative sidecar requests,
    100m/200Mi when the phase lacks cpu/memory)."""
    p = pod_obj(containers=[container("c", {"cpu": "500m"})],
                init=[container("s1", {"cpu": "1"}, sidecar=True), container("i", {"memory": "1Gi"}),
                      container("s2", {"memory": "300Mi"}, sidecar=True)])
    # regular: 500m / 200Mi; phases: s1 -> 1000m / 200Mi(missing), i -> 1000m / 1Gi,
    # s2 -> 1000m / 300Mi  => max: 1000m, 1Gi
    assert pod_nonzero_requests(p) == (1000, 1024 * MI)
    # the filter request (PodRequests) sums sidecars with the regular containers
    assert pod_requests(p)["cpu"] == 1500


def test_vector_forms_equal_per_node_with_scalar_resources() -> None:
    """score_vector/filter_vector == score/filter with extended, hugepages and unknown resources, for
    each strategy (upstream ``calculateResourceAllocatableRequest``: a scalar the pod does not request
    or the node lacks is skipped)."""
    alloc_a = {"cpu": "4", "memory": "8Gi", "pods": "10", "example.com/gpu": "4", "hugepages-2Mi": "64Mi"}
    alloc_b = {"cpu": "8", "memory": "4Gi", "pods": "10"}
    nodes = [node_obj("a", alloc_a), node_obj("b", alloc_b), node_obj("c", dict(alloc_a, **{"example.com/gpu": "1"}))]
    existing = [pod_obj("e1", containers=[container("c", {"cpu": "1", "example.com/gpu": "1"})], node="a"),
                pod_obj("e2", containers=[container("c", {"memory": "1Gi"})], node="b")]
    cache = cache_of(nodes, existing)
    resources = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 2}, {"name": "example.com/gpu", "weight": 3},
                 {"name": "hugepages-2Mi", "weight": 1}, {"name": "foo", "weight": 1}]
    strategies = [
        {"type": "LeastAllocated", "resources": resources},
        {"type": "MostAllocated", "resources": resources},
        {"type": "RequestedToCapacityRatio", "resources": resources,
         "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}},
    ]
    incoming = [
        pod_obj("x", containers=[container("c", {"cpu": "1", "example.com/gpu": "1", "foo": "1"})]),
        pod_obj("y", containers=[container("c", {"hugepages-2Mi": "2Mi"})]),
        pod_obj("z", containers=[container("c")]),
    ]
    idx = np.arange(len(cache.node_infos))
    for strategy in strategies:
        plugin = fit({"scoringStrategy": strategy})
        balanced = NodeResourcesBalancedAllocation({"resources": [{"name": r["name"]} for r in resources]},
                                                   FakeHandle())
        for obj in incoming:
            p = PodInfo.from_pod(obj)
            state = CycleState()
            plugin.pre_filter(state, p)
            assert list(plugin.filter_vector(state, p, cache)) == [
                plugin.filter(state, p, n) is None for n in cache.node_infos]
            assert list(plugin.score_vector(state, p, cache, idx)) == [
                plugin.score(state, p, n) for n in cache.node_infos]
            assert list(balanced.score_vector(state, p, cache, idx)) == [
                balanced.score(state, p, n) for n in cache.node_infos]
