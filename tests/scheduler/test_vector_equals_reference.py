"""Differential tests: each vectorised filter/score equals its per-node reference on generated clusters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from kubesched.scheduler.plugins.tainttoleration import TaintToleration
from kubesched.testkit.builders import make_node, make_pod, make_taint
from kubesched.testkit.framework import cache_of

STRATEGIES = [
    {},
    {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}},
    {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                         "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}}},
    {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                         "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 7},
                                                                {"utilization": 100, "score": 10}]}}},
]

node_st = st.tuples(st.integers(1, 64), st.integers(1, 256), st.booleans())
pod_st = st.tuples(st.one_of(st.none(), st.integers(0, 8000)), st.one_of(st.none(), st.integers(0, 16384)))


def build(nodes: list[tuple[int, int, bool]], pods: list[tuple[int, tuple[int | None, int | None]]]) -> Cache:
    taints = [make_taint("k", "v", "PreferNoSchedule"), {"key": "h", "effect": "NoSchedule"}]
    return cache_of(
        [make_node(f"n{i}", cpu=str(cpu), memory=f"{mem}Gi", pods=8, taints=taints if tainted else None)
         for i, (cpu, mem, tainted) in enumerate(nodes)],
        [make_pod(f"p{j}", None if cpu is None else f"{cpu}m", None if mem is None else f"{mem}Mi",
                  uid=f"u{j}", node=f"n{i % len(nodes)}") for j, (i, (cpu, mem)) in enumerate(pods)])


@settings(max_examples=80, deadline=None, derandomize=True)
@given(nodes=st.lists(node_st, min_size=1, max_size=6), pods=st.lists(st.tuples(st.integers(0, 5), pod_st), max_size=12),
       incoming=pod_st, strategy=st.sampled_from(STRATEGIES))
def test_fit_and_balanced_vector_forms_equal_reference(nodes, pods, incoming, strategy) -> None:
    cache = build(nodes, pods)
    cpu, mem = incoming
    pod = PodInfo.from_pod(make_pod("x", None if cpu is None else f"{cpu}m", None if mem is None else f"{mem}Mi"))
    handle = object()
    state = CycleState()
    fit = NodeResourcesFit(strategy, handle)  # type: ignore[arg-type]
    fit.pre_filter(state, pod)
    mask = fit.filter_vector(state, pod, cache)
    assert list(mask) == [fit.filter(state, pod, n) is None for n in cache.node_infos]
    idx = np.arange(len(cache.node_infos))
    failing = np.flatnonzero(~mask)
    expected = [fit.filter(state, pod, cache.node_infos[j]) for j in failing]
    assert [st.reasons for st in fit.failure_statuses(state, pod, cache, failing).per_node()] == [st.reasons for st in expected]
    assert list(fit.score_vector(state, pod, cache, idx)) == [fit.score(state, pod, n) for n in cache.node_infos]
    balanced = NodeResourcesBalancedAllocation({}, handle)  # type: ignore[arg-type]
    assert list(balanced.score_vector(state, pod, cache, idx)) == [balanced.score(state, pod, n) for n in cache.node_infos]
    taints = TaintToleration({}, handle)  # type: ignore[arg-type]
    assert list(taints.filter_vector(state, pod, cache)) == [taints.filter(state, pod, n) is None for n in cache.node_infos]
    assert list(taints.score_vector(state, pod, cache, idx)) == [taints.score(state, pod, n) for n in cache.node_infos]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_scores_of_overcommitted_nodes_equal_reference(strategy: dict) -> None:
    """Nodes the pod would overcommit (its requests beyond what is left) score as per node."""
    cache = build([(1, 1, False), (4, 2, False), (64, 256, False)], [(0, (900, 512)), (1, (3500, None))])
    pod = PodInfo.from_pod(make_pod("x", "2", "1536Mi"))
    state = CycleState()
    fit = NodeResourcesFit(strategy, object())  # type: ignore[arg-type]
    fit.pre_filter(state, pod)
    idx = np.arange(len(cache.node_infos))
    assert list(fit.score_vector(state, pod, cache, idx)) == [fit.score(state, pod, n) for n in cache.node_infos]
    balanced = NodeResourcesBalancedAllocation({}, object())  # type: ignore[arg-type]
    assert list(balanced.score_vector(state, pod, cache, idx)) == [balanced.score(state, pod, n) for n in cache.node_infos]
