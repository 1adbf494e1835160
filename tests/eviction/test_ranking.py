"""Kubelet memory-pressure eviction order, as kubelet v1.28 ranks pods (`rankMemoryPressure` in
upstream `pkg/kubelet/eviction/helpers.go`): pods whose usage exceeds their memory request first, then
lower priority, then larger usage above the request; one eviction per synchronize
(`pkg/kubelet/eviction/eviction_manager.go`; the loop's timing is in test_loop.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.cluster.embedded.kubelet.eviction_rank import (
    Candidate,
    container_usages,
    eviction_message,
    rank_for_eviction,
)
from kubesched.testkit.builders import make_priority_class
from kubesched.testkit.scenarios import scenario_document as scenario

from .conftest import node, pod

MI = 1024 * 1024
CLASSES = [make_priority_class("low", 100), make_priority_class("high", 1000)]


def keys(cands: list[Candidate]) -> list[str]:
    return [c.key for c in rank_for_eviction(cands)]


# -- the pure ranking ---------------------------------------------------------------------------
def test_over_request_before_within_request_whatever_the_priority():
    high_over = Candidate("high-over", 1000, 1200 * MI, 256 * MI)
    low_within = Candidate("low-within", 100, 1000 * MI, 1024 * MI)
    assert keys([low_within, high_over]) == ["high-over", "low-within"]


def test_both_over_request_lower_priority_first_even_with_smaller_excess():
    low = Candidate("low", 100, 300 * MI, 256 * MI)
    high = Candidate("high", 1000, 2000 * MI, 256 * MI)
    assert keys([high, low]) == ["low", "high"]


def test_same_priority_larger_usage_minus_request_first():
    a = Candidate("a", 100, 600 * MI, 500 * MI)
    b = Candidate("b", 100, 900 * MI, 500 * MI)
    c = Candidate("c", 100, 400 * MI, 0)  # best effort: any usage is above its request
    assert keys([a, b, c]) == ["b", "c", "a"]


def test_within_request_pods_ordered_by_priority_then_usage_minus_request():
    a = Candidate("a", 100, 100 * MI, 500 * MI)  # -400Mi
    b = Candidate("b", 100, 450 * MI, 500 * MI)  # -50Mi
    c = Candidate("c", 50, 10 * MI, 500 * MI)
    assert keys([a, b, c]) == ["c", "b", "a"]


def test_full_ties_are_broken_by_name():
    assert keys([Candidate("b", 1, 5, 0), Candidate("a", 1, 5, 0)]) == ["a", "b"]


def test_eviction_message_names_containers_over_their_request():
    c = {"spec": {"containers": [
        {"name": "main", "resources": {"requests": {"memory": "512Mi"}}},
        {"name": "side", "resources": {"requests": {"memory": "512Mi"}}}]}}
    shares = container_usages(c, "memory", 1536 * MI)
    assert shares == [("main", 768 * MI, 512 * MI), ("side", 768 * MI, 512 * MI)]
    assert eviction_message("memory", 100 * MI, 12 * MI, shares) == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 12Mi. "
        "Container main was using 768Mi, request is 512Mi, has larger consumption of memory. "
        "Container side was using 768Mi, request is 512Mi, has larger consumption of memory. ")


# -- the same order on a simulated kubelet -----------------------------------------------------------
def test_high_priority_pod_over_request_is_evicted_before_low_priority_pod_within_request(simulate):
    run = simulate(CLASSES, node("n1"),
                   pod("hi", memory="256Mi", usage="memory=1200Mi", priority_class="high", node="n1"),
                   pod("lo", memory="1Gi", usage="memory=1000Mi", priority_class="low", node="n1"),
                   scenario({"eviction": {}}))
    assert run.evicted() == [(10.0, "hi")]
    assert run.phase("hi") == "Failed" and run.phase("lo") == "Running"


def test_of_two_pods_over_request_the_lower_priority_one_goes_first(simulate):
    run = simulate(CLASSES, node("n1"),
                   pod("lo", memory="256Mi", usage="memory=1Gi", priority_class="low", node="n1"),
                   pod("hi", memory="256Mi", usage="memory=1200Mi", priority_class="high", node="n1"),
                   scenario({"eviction": {}}))
    assert run.evicted() == [(10.0, "lo")]
    assert run.phase("hi") == "Running"


def test_one_pod_per_synchronize(simulate):
    pods = [pod(f"be-{i}", usage="memory=700Mi", node="n1") for i in range(4)]  # 2800Mi on a 2Gi node
    run = simulate(node("n1"), pods, scenario({"eviction": {}}))
    # usage-minus-request ties -> by name; after one eviction 2100Mi is still above 2Gi, and the next
    # synchronize runs a second later, once be-0 is cleaned up
    assert run.evicted() == [(10.0, "be-0"), (11.0, "be-1")]
    assert [run.phase(f"be-{i}") for i in range(4)] == ["Failed", "Failed", "Running", "Running"]


def test_monitoring_period_is_configurable(simulate):
    run = simulate(node("n1"), pod("a", usage="memory=3Gi", node="n1"),
                   scenario({"eviction": {"monitoringPeriod": "25s"}}))
    assert run.evicted() == [(25.0, "a")]


def test_critical_pods_are_spared(simulate):
    run = simulate(node("n1"),
                   pod("system", memory="128Mi", usage="memory=1500Mi", priority_class="system-cluster-critical", node="n1"),
                   pod("app", memory="1Gi", usage="memory=700Mi", node="n1"),
                   scenario({"eviction": {}}))
    assert run.evicted() == [(10.0, "app")]
    assert run.phase("system") == "Running"


def test_nothing_but_critical_pods_means_no_eviction_and_the_run_ends(simulate):
    run = simulate(node("n1"), pod("system", usage="memory=3Gi", priority_class="system-node-critical", node="n1"),
                   scenario({"eviction": {}}))
    assert run.evicted() == []
    assert run.result["endTime"] < 400  # no endless ticking for a pressure nobody can relieve


def test_no_pressure_no_eviction(simulate):
    # pods may use the whole allocatable: the node keeps the 100Mi threshold on top of it
    run = simulate(node("n1"), pod("a", usage="memory=2Gi", node="n1"), scenario({"eviction": {}}))
    assert run.evicted() == []
    assert run.result["cluster"]["eviction"] == {"evictions": [], "nodeConditions": []}


# -- properties ------------------------------------------------------------------------------------
candidates_strategy = st.lists(
    st.builds(Candidate, key=st.text("abcdef", min_size=1, max_size=4), priority=st.integers(-5, 5),
              usage=st.integers(0, 10), request=st.integers(0, 10)),
    max_size=12, unique_by=lambda c: c.key)


@given(candidates_strategy)
@settings(max_examples=200, deadline=None, derandomize=True)
def test_ranking_is_lexicographic(cands):
    ranked = rank_for_eviction(cands)
    assert sorted(c.key for c in ranked) == sorted(c.key for c in cands)
    for a, b in zip(ranked, ranked[1:], strict=False):
        ka = (not a.exceeds_request, a.priority, -(a.usage - a.request))
        kb = (not b.exceeds_request, b.priority, -(b.usage - b.request))
        assert ka <= kb
    assert rank_for_eviction(list(reversed(cands))) == ranked  # input order never matters
