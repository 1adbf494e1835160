"""Scale-up: which pending pods make the simulated cluster autoscaler add nodes, and when nodes come.

The Pod Preemption design ("Interactions with Cluster Autoscaler"): no scale-up for pods that are
nominated (they already preempted) or whose priority is below a cutoff (the real autoscaler's
expendable-pods-priority-cutoff, default -10)."""

from __future__ import annotations

from kubesched.testkit.builders import make_priority_class
from kubesched.testkit.scenarios import create_step
from kubesched.testkit.scenarios import scenario_document as scenario

from .conftest import autoscaler, group, pod

CLASSES = [make_priority_class("low", 100), make_priority_class("high", 1000), make_priority_class("cheap", -20), make_priority_class("edge", -10),
           make_priority_class("high-never", 1000, "Never")]


def full_node() -> list:
    """pool-1 (created Ready at 0 by initialSize) fully used by a low-priority pod with a long grace."""
    return [pod("occupant", cpu="4", priority_class="low", node="pool-1", grace=120)]


def test_an_unschedulable_pod_triggers_a_scale_up_and_lands_on_the_new_node(simulate):
    run = simulate(CLASSES, full_node(), scenario(autoscaler(), [create_step("1s", pod("p", cpu="2", priority_class="low"))]))
    assert run.times("TriggeredScaleUp", "p") == [10.0]
    assert run.ev("TriggeredScaleUp", "p")[0]["message"] == "pod triggered scale-up: [{pool 1->2 (max: 3)}]"
    assert run.times("NodeAdded", "Node/pool-2") == [40.0]       # scaleUpDelay 30 s
    assert run.times("NodeReady", "Node/pool-2") == [70.0]       # nodeStartupTime 30 s
    assert [(e["time"], e["node"]) for e in run.ev("Scheduled", "p")] == [(70.0, "pool-2")]
    assert run.autoscaler["nodeCount"] == [[0.0, 1], [40.0, 2]]
    assert run.autoscaler["scaleUps"] == [{"time": 10.0, "group": "pool", "from": 1, "to": 2, "pods": ["default/p"]}]


def test_a_nominated_pod_never_triggers_a_scale_up(simulate):
    run = simulate(CLASSES, full_node(), scenario(autoscaler(), [create_step("1s", pod("p", cpu="2", priority_class="high"))]))
    assert [e["node"] for e in run.ev("Nominated", "p")] == ["pool-1"]   # it preempted the occupant
    assert run.ev("TriggeredScaleUp") == [] and run.autoscaler["scaleUps"] == []
    assert [(e["time"], e["node"]) for e in run.ev("Scheduled", "p")] == [(121.0, "pool-1")]
    assert run.autoscaler["nodeCount"] == [[0.0, 1]]


def test_the_same_pod_without_preemption_does_trigger_a_scale_up(simulate):
    run = simulate(CLASSES, full_node(), scenario(autoscaler(), [create_step("1s", pod("p", cpu="2", priority_class="high-never"))]))
    assert run.ev("Nominated", "p") == []
    assert run.times("TriggeredScaleUp", "p") == [10.0]
    assert run.node_of("p") == "pool-2"


def test_the_space_a_nominated_pod_waits_for_is_not_offered_to_others(simulate):
    # p (nominated to pool-1) will take the whole node; q cannot preempt and needs a new node
    run = simulate(CLASSES, full_node(), scenario(autoscaler(), [
        create_step("1s", pod("p", cpu="4", priority_class="high")), create_step("1s", pod("q", cpu="4", priority_class="high-never"))]))
    assert run.ev("TriggeredScaleUp", "p") == []
    assert run.times("TriggeredScaleUp", "q") == [10.0]
    assert (run.node_of("p"), run.node_of("q")) == ("pool-1", "pool-2")


def test_pods_below_the_expendable_cutoff_never_trigger_a_scale_up(simulate):
    run = simulate(CLASSES, full_node(), scenario(autoscaler(), [create_step("1s", pod("p", cpu="2", priority_class="cheap"))],
                                                  until="10m"))
    assert run.ev("TriggeredScaleUp") == [] and run.ev("NotTriggerScaleUp") == []
    assert run.phase("p") == "Pending"
    assert run.autoscaler["nodeCount"] == [[0.0, 1]]


def test_a_pod_at_the_cutoff_is_not_expendable(simulate):
    run = simulate(CLASSES, full_node(), scenario(autoscaler(), [create_step("1s", pod("p", cpu="2", priority_class="edge"))]))
    assert run.times("TriggeredScaleUp", "p") == [10.0]


def test_the_cutoff_is_configurable(simulate):
    run = simulate(CLASSES, full_node(), scenario(autoscaler(expendablePodsPriorityCutoff=-100),
                                                  [create_step("1s", pod("p", cpu="2", priority_class="cheap"))]))
    assert run.times("TriggeredScaleUp", "p") == [10.0]


def test_binpacking_adds_as_many_nodes_as_needed_up_to_max_size(simulate):
    pods = [create_step("1s", pod(f"p{i}", cpu="3", priority_class="low")) for i in range(4)]
    run = simulate(CLASSES, full_node(), scenario(autoscaler(group(max_size=3)), pods))
    assert run.autoscaler["scaleUps"][0]["to"] == 3
    assert len(run.autoscaler["scaleUps"]) == 1
    pending = [f"p{i}" for i in range(4) if run.phase(f"p{i}") == "Pending"]
    assert len(pending) == 2
    for name in pending:
        assert [e["message"] for e in run.ev("NotTriggerScaleUp", name)] == [
            "pod didn't trigger scale-up: 1 max node group size reached"]


def test_a_pod_no_template_can_hold_does_not_trigger_a_scale_up(simulate):
    run = simulate(CLASSES, full_node(), scenario(autoscaler(), [create_step("1s", pod("huge", cpu="8", priority_class="low"))]))
    assert run.ev("TriggeredScaleUp") == []
    assert [e["message"] for e in run.ev("NotTriggerScaleUp", "huge")] == [
        "pod didn't trigger scale-up: 1 node(s) didn't fit a new node of the group"]


def test_the_expander_picks_among_groups(simulate):
    small = group("small", cpu="2", initial=0)
    big = group("big", cpu="8", initial=0, priority=10)
    steps = [create_step("1s", pod(f"p{i}", cpu="2", priority_class="low")) for i in range(3)]
    run = simulate(CLASSES, scenario(autoscaler(small, big, expander="least-waste"), steps))
    assert [(s["group"], s["to"]) for s in run.autoscaler["scaleUps"]] == [("small", 3)]  # no waste at all
    run = simulate(CLASSES, scenario(autoscaler(small, big, expander="priority"), steps))
    assert [(s["group"], s["to"]) for s in run.autoscaler["scaleUps"]] == [("big", 1)]


def test_new_pod_scale_up_delay(simulate):
    run = simulate(CLASSES, full_node(), scenario(autoscaler(newPodScaleUpDelay="1m"),
                                                  [create_step("1s", pod("p", cpu="2", priority_class="low"))]))
    assert run.times("TriggeredScaleUp", "p") == [70.0]


def test_pods_that_fit_an_upcoming_node_do_not_scale_up_again(simulate):
    run = simulate(CLASSES, full_node(), scenario(autoscaler(group(delay="5m")), [
        create_step("1s", pod("a", cpu="2", priority_class="low")), create_step("30s", pod("b", cpu="2", priority_class="low"))]))
    assert [s["to"] for s in run.autoscaler["scaleUps"]] == [2]
    assert run.node_of("a") == run.node_of("b") == "pool-2"


def test_pods_marked_unschedulable_a_moment_ago_wait_for_the_next_loop(simulate):
    # marked at 9 s: 1 s old at the 10 s scan, all of them "new" (upstream's 2 s buffer): the
    # autoscaler waits one loop for more to come; marked at 7 s, they are 3 s old and scale up at 10 s
    late = simulate(CLASSES, full_node(), scenario(autoscaler(), [create_step("9s", pod("p", cpu="2", priority_class="low"))]))
    assert [s["time"] for s in late.autoscaler["scaleUps"]] == [20.0]
    early = simulate(CLASSES, full_node(), scenario(autoscaler(), [create_step("7s", pod("p", cpu="2", priority_class="low"))]))
    assert [s["time"] for s in early.autoscaler["scaleUps"]] == [10.0]
