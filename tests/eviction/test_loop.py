"""The eviction manager's loop (upstream v1.28 ``managerImpl.Start`` and ``waitForPodsCleanup``):
synchronize; after an eviction, kill the pod (blocking), check every second whether it is cleaned up
(30 s at most) and synchronize again at once; otherwise sleep ``monitoringPeriod``. Nodes that never
evicted share the ``k × period`` grid; a node that evicted keeps its own phase."""

from __future__ import annotations

import functools

import pytest

from kubesched.cluster.embedded.kubelet.usage import NodeUsage
from kubesched.k8s.timefmt import rfc3339
from kubesched.testkit.scenarios import delete_step
from kubesched.testkit.scenarios import scenario_document as scenario

from .conftest import node, pod


def killed_at(run, name: str) -> str:
    """When the kubelet killed the pod (its DisruptionTarget condition's transition time)."""
    status = run.live(name)["status"]
    return next(c for c in status["conditions"] if c["type"] == "DisruptionTarget")["lastTransitionTime"]


def eight_pods() -> list:
    # capacity 4148Mi, 8 × 500Mi used: 148Mi available; each eviction frees 500Mi, so it takes four
    # to have 2000Mi available again (ties in the ranking go by name)
    n1 = node("n1", capacity={"cpu": "4", "memory": "4148Mi", "pods": "110"})
    return [n1, *(pod(f"p{i}", usage="memory=500Mi", node="n1") for i in range(8))]


def test_hard_threshold_evictions_come_a_second_apart(simulate):
    run = simulate(eight_pods(), scenario({"eviction": {"evictionHard": {"memory.available": "2000Mi"}}}))
    # the first on the 10 s grid; each next one at the first cleanup check after the previous kill
    assert run.evicted() == [(10.0, "p0"), (11.0, "p1"), (12.0, "p2"), (13.0, "p3")]
    assert [killed_at(run, f"p{i}") for i in range(4)] == [rfc3339(t) for t in (10, 11, 12, 13)]
    assert [run.phase(f"p{i}") for i in range(4, 8)] == ["Running"] * 4


def test_soft_threshold_next_eviction_after_the_max_pod_grace_period_and_a_second(simulate):
    settings = {"evictionSoft": {"memory.available": "2000Mi"}, "evictionSoftGracePeriod": {"memory.available": "10s"},
                "evictionMaxPodGracePeriod": 5}
    run = simulate(eight_pods(), scenario({"eviction": settings}))
    # below the soft 2000Mi (above the hard 100Mi), first observed at 10 s: met for its grace period
    # at 20 s. Each kill blocks the loop for the 5 s max pod grace period; the cleanup check comes a
    # second later and the next synchronize evicts again: one eviction every 6 s instead of every 10 s
    assert run.evicted() == [(20.0, "p0"), (26.0, "p1"), (32.0, "p2"), (38.0, "p3")]
    assert [killed_at(run, f"p{i}") for i in range(4)] == [rfc3339(t) for t in (25, 31, 37, 43)]
    assert [run.phase(f"p{i}") for i in range(4, 8)] == ["Running"] * 4


def test_the_cleanup_wait_gives_up_after_30_seconds(simulate, monkeypatch: pytest.MonkeyPatch):
    docs = [node("n1"), pod("a", usage="memory=1200Mi", node="n1"), pod("b", usage="memory=600Mi", node="n1"),
            pod("c", usage="memory=300Mi", node="n1"), scenario({"eviction": {}}, until="2m")]
    # capacity 2148Mi, 2100Mi used: 48Mi available; evicting a (the largest) leaves 1248Mi
    assert simulate(docs).evicted() == [(10.0, "a")]
    # The model cleans a killed pod up at once (no finalizers, container removal or volume teardown):
    # here a's containers stay behind after its kill (the usage tracker keeps it), so it is never
    # cleaned up and its memory still counts. The loop waits out podCleanupTimeout (no synchronize in
    # between), then the next synchronize evicts b — a, already killed, is no candidate.
    stopped = NodeUsage.pod_stopped

    def keep_a(self: NodeUsage, p: dict, node_name: str) -> None:
        if p["metadata"]["name"] != "a":
            stopped(self, p, node_name)

    monkeypatch.setattr(NodeUsage, "pod_stopped", keep_a)
    run = simulate(docs)
    assert run.evicted() == [(10.0, "a"), (40.0, "b")]
    assert run.phase("a") == "Failed" and run.phase("c") == "Running"


def test_a_node_that_evicted_keeps_its_own_phase_the_others_the_grid(simulate):
    docs = [node("n1"), node("n2"),
            # n1: 2200Mi used at once, a evicted at 10 s, the next synchronize at 11 s evicts nothing:
            # from then on n1 synchronizes at 21, 31, 41 s...
            pod("a", usage="memory=1200Mi", node="n1"), pod("b", usage="memory=1000Mi", node="n1"),
            pod("late", usage="memory=1Mi@0s,1500Mi@35s", node="n1"),
            # n2 never evicted before: still on the shared 10 s grid
            pod("grow", usage="memory=1Gi@0s,3Gi@35s", node="n2"),
            scenario({"eviction": {}})]
    run = simulate(docs)
    assert run.evicted() == [(10.0, "a"), (40.0, "grow"), (41.0, "late")]
    assert run.phase("b") == "Running"
    # the run still ends: the loops sleep in the background once the pressure conditions cleared
    # (last met at 41 s on n1, so cleared at its synchronize at 341 s, reported at 345 s)
    conditions = [(c["time"], c["node"], c["status"]) for c in run.eviction["nodeConditions"]]
    assert conditions == [(15.0, "n1", "True"), (45.0, "n2", "True"), (345.0, "n2", "False"),
                          (345.0, "n1", "False")]


def test_a_usage_change_wakes_a_node_sleeping_on_its_own_phase(simulate):
    # a evicted at 10 s; n1 then synchronizes at 11, 21, 31 s... With a 5 s transition period its
    # MemoryPressure clears at 21 s, and from then on its loop sleeps in the background: only the
    # usage step at 95 s brings it back to the foreground, so the run lasts until its 101 s synchronize
    docs = [node("n1"), pod("a", usage="memory=1200Mi", node="n1"), pod("b", usage="memory=1000Mi", node="n1"),
            pod("late", usage="memory=1Mi@0s,1500Mi@95s", node="n1"),
            scenario({"eviction": {"evictionPressureTransitionPeriod": "5s"}})]
    run = simulate(docs)
    assert run.evicted() == [(10.0, "a"), (101.0, "late")]
    assert [(c["time"], c["status"]) for c in run.eviction["nodeConditions"]][:2] == [(15.0, "True"), (25.0, "False")]


def test_the_loop_of_a_deleted_node_ends(simulate):
    docs = [node("n1"), pod("a", usage="memory=1200Mi", node="n1", grace=0),
            pod("b", usage="memory=1000Mi", node="n1", grace=0),
            scenario({"eviction": {"evictionPressureTransitionPeriod": "5s"}}, [
                delete_step("60s", "Pod", "b", namespace="default"), delete_step("65s", "Node", "n1")], until="2m")]
    run = simulate(docs)
    assert run.evicted() == [(10.0, "a")]
    manager = run.sim.cluster.subsystems["eviction"]
    assert manager.nodes == {}  # its own loop noticed at 71 s and stopped
    assert not any(t.callback.func == manager._wake for t in run.sim.loop._heap
                   if not t.cancelled and isinstance(t.callback, functools.partial))
