"""Scheduling-queue behaviours of kube-scheduler v1.28 (upstream `pkg/scheduler/internal/queue/
scheduling_queue.go`, `pkg/scheduler/schedule_one.go`): pop order, backoff, the unschedulable-pods
timeout, scheduling gates and pods already being deleted. (The leader-election Lease is pinned in
tests/kube/test_kube_leader_election.py.)"""

from __future__ import annotations

import pytest

from kubesched.testkit.builders import make_container, make_taint
from kubesched.testkit.scenarios import create_step, delete_step, patch_step

from .conftest import node, pod, scenario, std_classes

NOT_ENOUGH = "0/1 nodes are available: 1 Insufficient cpu."
NO_VICTIMS = " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."


# -- queue order -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cls_a", "cls_b", "first"),
    [
        pytest.param("low", "high", "b", id="higher-priority-later-in-file-goes-first"),
        pytest.param("high", "low", "a", id="higher-priority-earlier-in-file-goes-first"),
        pytest.param("low", "low", "a", id="equal-priority-earlier-enqueued-goes-first"),
    ],
)
def test_queue_order_priority_then_enqueue_order(simulate, cls_a, cls_b, first):
    """PrioritySort pops the initial pending pods by priority, ties by enqueue order (file order)
(upstream `pkg/scheduler/framework/plugins/queuesort/priority_sort.go`)."""
    run = simulate(std_classes(), node("n1", cpu="4"), pod("a", "1", priority_class=cls_a), pod("b", "1", priority_class=cls_b))
    order = [e["pod"].split("/")[1] for e in run.ev("Scheduled")]
    assert order[0] == first
    assert sorted(order) == ["a", "b"]


def test_queue_order_equal_priority_uses_enqueue_timestamp_not_creation(simulate):
    """With equal priority the earlier *enqueue Timestamp* wins, not the creation time, and that
    Timestamp is reset by every failed attempt (v1.28 `AddUnschedulableIfNotPresent`). ``x`` is created first (t=0) but fails again at t=5 (a NodeAdd
    moves only ``x``: ``y``'s nodeSelector fails the precheck); ``y`` last failed at t=2. When the
    node frees up at t=10 both are retried and ``y`` (Timestamp 2) must win the single slot."""
    docs = [
        *std_classes(),
        node("n1", cpu="2"),
        pod("v", "2", priority_class="low", node="n1"),
        pod("x", "2", priority_class="low"),
        scenario([
            create_step(2, pod("y", "2", priority_class="low", nodeSelector={"kubernetes.io/hostname": "n1"})),
            create_step(5, node("n2", cpu="4", taints=[make_taint(effect="NoExecute")])),
            delete_step(10, "Pod", "v", namespace="default", grace=0),
        ]),
    ]
    run = simulate(docs)
    assert [t for t, _ in run.failed("x")][:2] == [0.0, 5.0], "x must be retried (alone) at the NodeAdd"
    assert [t for t, _ in run.failed("y")][:1] == [2.0]
    assert run.scheduled("y") == [(10.0, "n1")]
    assert run.scheduled("x") == []
    assert run.phase("x") == "Pending"


# -- backoff growth --------------------------------------------------------------------------
def test_backoff_growth_1_2_4_8_10_10_seconds(simulate):
    """Backoff is podInitialBackoffSeconds (1 s) doubled per attempt up to podMaxBackoffSeconds
    (10 s), and backoffQ is flushed every second (`calculateBackoffDuration`,
    `flushBackoffQCompleted`): a pod that keeps failing while AssignedPodDelete events keep arriving
    (a churn pod created and deleted every 0.5 s) is re-attempted no sooner than 1, 2, 4, 8, 10, 10 … s
    after each failure, and at most ~1 s (flush period) later."""
    steps = []
    for i in range(120):
        t = round(i * 0.5 + 0.1, 3)
        steps.append(create_step(t, pod(f"churn{i}", node="n1")))
        steps.append(delete_step(round(t + 0.2, 3), "Pod", f"churn{i}", namespace="default", grace=0))
    run = simulate(node("n1", cpu="1"), pod("p", "2"), scenario(steps, until=60))
    times = [t for t, _ in run.failed("p")]
    assert times[0] == 0.0
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert len(gaps) >= 7, times
    for k, gap in enumerate(gaps, start=1):
        backoff = min(2 ** (k - 1), 10)
        assert backoff <= gap <= backoff + 1.0 + 1e-9, (k, gap, times)


# -- unschedulable timeout -------------------------------------------------------------------
def test_unschedulable_pod_retried_once_between_300_and_330s_in_quiet_cluster(simulate):
    """Rejected by NodeResourcesFit, no later relevant event → one retry once the pod has spent
    DefaultPodMaxInUnschedulablePodsDuration (5 min) in unschedulablePods, which
    `flushUnschedulablePodsLeftover` checks every 30 s: i.e. in (300 s, 330 s]."""
    run = simulate(node("n1", cpu="1"), pod("p", "2"), scenario(until=400))
    times = [t for t, _ in run.failed("p")]
    assert times[0] == 0.0
    assert len(times) == 2, times
    assert 300.0 < times[1] <= 330.0
    assert run.failed("p")[1][1] == NOT_ENOUGH + NO_VICTIMS


# -- scheduling gates ------------------------------------------------------------------------
GATE = [{"name": "example.com/wait"}]


def test_gated_pod_is_never_attempted_and_counted_as_gated(simulate):
    """KEP-3521 (PodSchedulingReadiness, beta in v1.28): gated → no attempt, no FailedScheduling, PodScheduled=False/SchedulingGated,
    pending_pods{queue="gated"}."""
    run = simulate(node("n1"), pod("g", "1", schedulingGates=GATE), scenario(until=20), deep=True)
    assert run.ev("FailedScheduling", "g") == []
    assert run.ev("Scheduled", "g") == []
    assert run.attempts("g") == []
    assert run.phase("g") == "Pending"
    assert run.conditions("g", "PodScheduled")[-1][1] == {
        "status": "False",
        "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates",
    }
    counts = run.sim.scheduler.queue.pending_counts()
    assert counts["gated"] == 1
    assert counts["unschedulable"] == 0


@pytest.mark.parametrize("ungate_at", [1, 7, 42])
def test_removing_last_gate_schedules_immediately_without_backoff(simulate, ungate_at):
    """Removing the last gate is a spec update → the SchedulingGates PreEnqueue passes → activeQ at
    once, with no backoff penalty."""
    docs = [
        node("n1"),
        pod("g", "1", schedulingGates=GATE),
        scenario([patch_step(ungate_at, "Pod", "g", {"spec": {"schedulingGates": None}}, namespace="default")]),
    ]
    run = simulate(docs)
    assert run.ev("FailedScheduling", "g") == []
    assert run.scheduled("g") == [(float(ungate_at), "n1")]


def test_removing_one_of_two_gates_keeps_pod_gated(simulate):
    """SchedulingGates' PreEnqueue fails while any gate remains
    (`pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go`)."""
    gates = [{"name": "example.com/a"}, {"name": "example.com/b"}]
    docs = [
        node("n1"),
        pod("g", "1", schedulingGates=gates),
        scenario([patch_step(3, "Pod", "g", {"spec": {"schedulingGates": [{"name": "example.com/b"}]}}, namespace="default")],
                 until=30),
    ]
    run = simulate(docs)
    assert run.ev("Scheduled", "g") == []
    assert run.ev("FailedScheduling", "g") == []


# -- deleting pod skipped --------------------------------------------------------------------
def test_pending_pod_with_deletion_timestamp_is_skipped(simulate):
    """`scheduleOne` skips a popped pod that has a deletionTimestamp: event "skip schedule deleting
    pod: ns/name", no binding (`pkg/scheduler/schedule_one.go`)."""
    doomed = pod("d", containers=[make_container("app", "1")])
    doomed["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    doomed["metadata"]["finalizers"] = ["example.com/keep"]
    run = simulate(node("n1"), doomed, scenario(until=10))
    assert run.messages("d") == ["skip schedule deleting pod: default/d"]
    assert run.ev("Scheduled", "d") == []

