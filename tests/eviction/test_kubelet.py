"""Kubelet details around eviction: admission under pressure, the pressure taint, soft thresholds,
disk pressure, per-node thresholds, usage profiles and controllers replacing evicted pods."""

from __future__ import annotations

from kubesched.k8s.timefmt import rfc3339
from kubesched.testkit.builders import make_deployment, make_priority_class
from kubesched.testkit.scenarios import create_step, delete_step
from kubesched.testkit.scenarios import scenario_document as scenario

from .conftest import node, pod


def stuck_pressure(name: str = "n1") -> list:
    """A node under memory pressure the kubelet cannot relieve (only a critical pod uses memory)."""
    return [node(name), pod("system", usage="memory=2200Mi", priority_class="system-node-critical", node=name)]


def test_kubelet_admission_refuses_best_effort_pods_under_memory_pressure(simulate):
    run = simulate(stuck_pressure(), scenario({"eviction": {}}, [
        create_step("12s", pod("be", node="n1")),
        create_step("12s", pod("burstable", memory="64Mi", node="n1")),
        create_step("12s", pod("tolerant", node="n1", tolerations=[
            {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}])),
    ], until="15s"))  # (at 20 s the kubelet would start evicting the admitted ones)
    assert run.phase("be") == "Failed"
    assert run.phase("burstable") == "Running" and run.phase("tolerant") == "Running"
    status = run.live("be")["status"]  # type: ignore[index]
    assert (status["reason"], status["message"]) == ("Evicted", "Pod was rejected: The node had condition: [MemoryPressure]. ")


def test_the_pressure_taint_keeps_the_scheduler_away_once_reported(simulate):
    run = simulate(stuck_pressure(), scenario({"eviction": {}}, [
        create_step("12s", pod("early", memory="64Mi")),   # before the status update at 15 s
        create_step("16s", pod("late", memory="64Mi")),
    ], until="30s"))
    assert [(e["time"], e["node"]) for e in run.ev("Scheduled", "early")] == [(12.0, "n1")]
    assert run.ev("Scheduled", "late") == []
    assert "untolerated taint {node.kubernetes.io/memory-pressure: }" in run.ev("FailedScheduling", "late")[0]["message"]


def test_taint_nodes_by_condition_can_be_switched_off(simulate):
    run = simulate(stuck_pressure(), scenario({"eviction": {"taintNodesByCondition": False}}, [
        create_step("16s", pod("late", memory="64Mi"))], until="30s"))
    assert [e["node"] for e in run.ev("Scheduled", "late")] == ["n1"]


def test_soft_threshold_waits_for_its_grace_period_and_kills_with_the_max_pod_grace(simulate):
    run = simulate(node("n1"), pod("a", usage="memory=1800Mi", node="n1"), scenario({"eviction": {
        "evictionSoft": {"memory.available": "500Mi"}, "evictionSoftGracePeriod": {"memory.available": "30s"},
        "evictionMaxPodGracePeriod": 5}}))
    # available = 2Gi + 100Mi - 1800Mi = 348Mi: below the soft 500Mi, above the hard 100Mi
    assert run.evicted() == [(40.0, "a")]  # first seen at 10 s, met for 30 s at 40 s
    target = next(c for c in run.live("a")["status"]["conditions"] if c["type"] == "DisruptionTarget")  # type: ignore[index]
    assert target["lastTransitionTime"] == rfc3339(45)


def test_disk_pressure_uses_ephemeral_storage_usage(simulate):
    n = node("n1", capacity={"cpu": "4", "memory": "2Gi", "ephemeral-storage": "10Gi", "pods": "110"})
    n["status"]["allocatable"]["ephemeral-storage"] = "9Gi"
    run = simulate(n, pod("logs", usage="ephemeral-storage=9500Mi", node="n1"),
                   pod("quiet", usage="ephemeral-storage=100Mi", node="n1"), scenario({"eviction": {}}))
    assert run.evicted() == [(10.0, "logs")]
    assert run.ev("Evicted")[0]["message"].startswith("The node was low on resource: ephemeral-storage. ")
    assert run.eviction["nodeConditions"][0]["type"] == "DiskPressure"


def test_thresholds_per_node(simulate):
    run = simulate(node("n1"), node("n2", labels={"pool": "tight"}),
                   pod("a", usage="memory=1900Mi", node="n1"), pod("b", usage="memory=1900Mi", node="n2"),
                   scenario({"eviction": {"nodes": [{"nodeSelector": {"matchLabels": {"pool": "tight"}},
                                                     "evictionHard": {"memory.available": "500Mi"}}]}}))
    # n2 reserves 500Mi: capacity 2548Mi, available 648Mi... not below 500Mi; n1: 248Mi, not below 100Mi
    assert run.evicted() == []
    run = simulate(node("n1"), node("n2"),
                   pod("a", usage="memory=1900Mi", node="n1"), pod("b", usage="memory=1900Mi", node="n2"),
                   scenario({"eviction": {"nodes": [{"names": ["n2"], "evictionHard": {"memory.available": "500Mi"}}]}}))
    assert run.evicted() == []  # capacity derives from the node's own threshold
    n2 = node("n2", capacity={"cpu": "4", "memory": "2148Mi", "pods": "110"})
    run = simulate(node("n1"), n2, pod("a", usage="memory=1900Mi", node="n1"), pod("b", usage="memory=1900Mi", node="n2"),
                   scenario({"eviction": {"nodes": [{"names": ["n2"], "evictionHard": {"memory.available": "500Mi"}}]}}))
    assert run.evicted() == [(10.0, "b")]  # 248Mi available < 500Mi on n2 only


def test_usage_profile_steps_are_observed_at_the_next_monitoring_period(simulate):
    run = simulate(node("n1"), pod("grow", usage="memory=1Gi@0s,3Gi@25s", node="n1"), scenario({"eviction": {}}))
    assert run.evicted() == [(30.0, "grow")]


def test_default_usage_of_pods_without_annotation(simulate):
    greedy = [node("n1"), pod("a", memory="1500Mi", node="n1"), pod("b", usage="memory=700Mi", node="n1")]
    run = simulate(greedy, scenario({"eviction": {}}))
    assert run.evicted() == [(10.0, "b")]  # a uses its request: 2200Mi in all
    run = simulate(greedy, scenario({"eviction": {"defaultUsage": "zero"}}))
    assert run.evicted() == []


def test_controllers_replace_evicted_pods(simulate):
    template = pod("x", memory="256Mi", usage="memory=3Gi")
    run = simulate(make_priority_class("p", 10), node("n1"), make_deployment("web", 1, template),
                   scenario({"eviction": {}}, until="25s"))
    # evicted at 10 s; each replacement runs on n1 and is evicted a second later (the cleanup check),
    # until the pressure taint reaches the Node at 15 s and keeps the next one Pending
    evicted = [(e["time"], e["pod"]) for e in run.ev("Evicted")]
    assert [t for t, _ in evicted] == [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]
    created = [e["pod"] for e in run.ev("Created") if e["pod"].startswith("default/web-")]
    assert len(created) == 7 and [p for _, p in evicted] == created[:6]


def test_a_terminating_pod_still_counts_and_can_be_evicted(simulate):
    run = simulate(node("n1"), pod("leaving", usage="memory=1500Mi", node="n1", grace=60),
                   pod("staying", memory="1Gi", usage="memory=800Mi", node="n1"),
                   scenario({"eviction": {}}, [delete_step("5s", "Pod", "leaving", namespace="default")]))
    assert run.evicted() == [(10.0, "leaving")]  # killed at once instead of at 65 s
    assert run.phase("staying") == "Running"
    assert [e["time"] for e in run.ev("Deleted", "leaving")] == [10.0]


def test_a_met_threshold_stays_met_until_the_minimum_reclaim_is_available(simulate):
    pods = [pod(name, usage="memory=520Mi", node="n1") for name in ("a", "b", "c", "d")]
    settings = {"evictionHard": {"memory.available": "300Mi"}}
    # capacity = 2Gi allocatable + the 300Mi threshold = 2348Mi; 4 × 520Mi used: 268Mi available
    without = simulate(node("n1"), *pods, scenario({"eviction": settings}, [], until="60s"))
    assert [t for t, _ in without.evicted()] == [10.0]  # 788Mi available afterwards: resolved
    reclaim = {**settings, "evictionMinimumReclaim": {"memory.available": "1Gi"}}
    run = simulate(node("n1"), *pods, scenario({"eviction": reclaim}, [], until="60s"))
    # resolved only once 300Mi + 1Gi = 1324Mi are available: 788Mi, then 1308Mi, then 1828Mi (each
    # synchronize right after the previous victim was cleaned up)
    assert [t for t, _ in run.evicted()] == [10.0, 11.0, 12.0]


def test_minimum_reclaim_is_validated_like_a_threshold(tmp_path):
    import pytest

    from kubesched.api.errors import ManifestError
    from kubesched.testkit.runs import run_docs

    with pytest.raises(ManifestError, match=r"spec\.cluster\.eviction\.evictionMinimumReclaim\[memory\.available\]: invalid threshold"):
        run_docs(tmp_path, [node("n1"), scenario({"eviction": {"evictionMinimumReclaim": {"memory.available": "x"}}})])
