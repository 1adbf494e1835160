"""Scale-down: underutilised nodes whose pods fit elsewhere are removed after
``scaleDownUnneededTime``; what blocks it; node count over time and node-hours."""

from __future__ import annotations

from kubesched.testkit.builders import make_pdb, make_priority_class
from kubesched.testkit.scenarios import create_step, delete_step, patch_step
from kubesched.testkit.scenarios import scenario_document as scenario

from .conftest import autoscaler, deployment, group, node, pod

FAST = {"scaleDownUnneededTime": "2m", "scaleDownDelayAfterAdd": "3m"}


def test_underutilised_node_is_removed_after_the_unneeded_time(simulate):
    run = simulate(deployment("web", 6), scenario(
        autoscaler(group(min_size=1, max_size=3), **FAST), [patch_step("5m", "Deployment", "web", {"spec": {"replicas": 2}})]))
    assert run.autoscaler["scaleUps"] == [{"time": 10.0, "group": "pool", "from": 1, "to": 2,
                                   "pods": sorted(e["pod"] for e in run.ev("TriggeredScaleUp"))}]
    # 4 pods of pool-1 deleted at 5m (gone at 5m30s): pool-1 empty and unneeded from the 300 s scan
    assert run.times("NodeRemoved", "Node/pool-1") == [420.0]
    assert run.autoscaler["nodeCount"] == [[0.0, 1], [40.0, 2], [420.0, 1]]
    assert run.autoscaler["scaleDowns"] == [{"time": 420.0, "node": "pool-1", "group": "pool", "pods": []}]
    # 1 node for 40 s, 2 for 380 s, 1 until the run ends (420 s: nothing else left to do)
    assert run.result["endTime"] == 420.0
    assert run.autoscaler["nodeHours"] == round((40 + 2 * 380) / 3600, 4)
    assert run.autoscaler["groups"]["pool"]["nodeHours"] == run.autoscaler["nodeHours"]


def test_never_below_min_size(simulate):
    run = simulate(deployment("web", 1), scenario(autoscaler(group(min_size=2, initial=2), **FAST), until="30m"))
    assert run.ev("NodeRemoved") == [] and run.autoscaler["scaleDowns"] == []


def test_no_scale_down_shortly_after_a_scale_up(simulate):
    run = simulate(deployment("web", 6), scenario(
        autoscaler(group(min_size=1), scaleDownUnneededTime="1m", scaleDownDelayAfterAdd="10m"),
        [patch_step("2m", "Deployment", "web", {"spec": {"replicas": 2}})]))
    assert run.times("NodeRemoved") == [610.0]  # cooldown after the scale-up at 10 s


def test_a_non_empty_node_is_drained_then_removed(simulate):
    # pool-1: one web pod (25 %); pool-2 (from initialSize) has room for it
    run = simulate(deployment("web", 1, grace=20), pod("big", cpu="2", priority_class=None, node="pool-2",
                                                       annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}),
                   make_priority_class("x", 1),
                   scenario(autoscaler(group(initial=2, min_size=1), **FAST)))
    web = [e for e in run.ev("Scheduled") if e["pod"].startswith("default/web-")]
    assert [(e["time"], e["node"]) for e in web] == [(0.0, "pool-1"), (120.0, "pool-2")]
    assert [(e["time"], e["pod"].split("/")[0]) for e in run.ev("ScaleDown")] == [(120.0, "Node"), (120.0, "default")]
    assert run.ev("ScaleDown")[1]["message"] == "deleting pod for node scale down"
    assert run.times("NodeRemoved", "Node/pool-1") == [140.0]  # once the pod's 20 s grace is over
    node_obj = run.sim.cluster.api.get("Node", None, "pool-1")
    assert node_obj is None


def test_a_pod_that_fits_nowhere_else_blocks_scale_down(simulate):
    run = simulate(deployment("a", 1, cpu="1"), deployment("b", 1, cpu="3500m"),
                   scenario(autoscaler(group(initial=2, min_size=0), **FAST), until="20m"))
    # 1 cpu on one node, 3.5 on the other: the small node is unneeded but its pod does not fit
    assert run.autoscaler["scaleDowns"] == []


def anchored(*docs, until="20m"):
    """pool-1 .. pool-3; pool-2 carries an unmovable 3-cpu pod (utilization 75 %, a destination with
    1 cpu free); pool-3 is empty; the docs put something on pool-1."""
    anchor = pod("anchor", cpu="3", node="pool-2", annotations={SAFE: "false"})
    return [anchor, *docs, scenario(autoscaler(group(initial=3, min_size=0), **FAST), until=until)]


SAFE = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def test_unreplicated_pods_block_unless_safe_to_evict(simulate):
    blocked = simulate(anchored(pod("bare", node="pool-1")))
    assert [(s["time"], s["node"]) for s in blocked.autoscaler["scaleDowns"]] == [(120.0, "pool-3")]
    safe = simulate(anchored(pod("bare", node="pool-1", annotations={SAFE: "true"})))
    # empty nodes go in bulk and the non-empty one is drained in the same loop (parallel drain,
    # cluster-autoscaler 1.28's default); the pod is deleted
    assert [(s["time"], s["node"], s["pods"]) for s in safe.autoscaler["scaleDowns"]] == [
        (120.0, "pool-3", []), (120.0, "pool-1", ["default/bare"])]
    assert safe.phase("bare") == "Deleted"
    evict_false = simulate(anchored(pod("bare", node="pool-1", annotations={SAFE: "false"})))
    assert [s["node"] for s in evict_false.autoscaler["scaleDowns"]] == ["pool-3"]


def test_a_pod_disruption_budget_without_budget_blocks(simulate):
    run = simulate(anchored(deployment("web", 1), make_pdb("web", {"matchLabels": {"app": "web"}}, min_available=1)))
    web_node = next(e["node"] for e in run.ev("Scheduled") if e["pod"].startswith("default/web-"))
    empty = ({"pool-1", "pool-3"} - {web_node}).pop()
    assert [s["node"] for s in run.autoscaler["scaleDowns"]] == [empty]  # disruptionsAllowed 0
    run = simulate(anchored(deployment("web", 1), make_pdb("web", {"matchLabels": {"app": "web"}}, max_unavailable=1)))
    assert [(s["node"], len(s["pods"])) for s in run.autoscaler["scaleDowns"]] == [(empty, 0), (web_node, 1)]
    web = [e for e in run.ev("Scheduled") if e["pod"].startswith("default/web-")]
    assert [e["node"] for e in web] == [web_node, "pool-2"]


def test_kube_system_pods_without_a_budget_block(simulate):
    system = pod("dns", node="pool-1")
    system["metadata"]["namespace"] = "kube-system"
    system["metadata"]["annotations"] = {}
    system["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "dns",
                                              "uid": "dns-uid", "controller": True}]
    run = simulate(anchored(system))
    assert [s["node"] for s in run.autoscaler["scaleDowns"]] == ["pool-3"]


def test_expendable_pods_do_not_block_scale_down(simulate):
    run = simulate(make_priority_class("cheap", -20), pod("bare", priority_class="cheap", node="pool-1"),
                   scenario(autoscaler(group(initial=1, min_size=0), **FAST), until="20m"))
    assert [s["node"] for s in run.autoscaler["scaleDowns"]] == ["pool-1"]
    assert run.phase("bare") == "Deleted"
    assert run.autoscaler["nodeCount"][-1][1] == 0


def test_scenario_nodes_join_a_group_by_label_and_others_are_left_alone(simulate):
    run = simulate(node("static"), node("member", group_name="pool"),
                   scenario(autoscaler(group(initial=0, min_size=0), **FAST), until="20m"))
    assert [s["node"] for s in run.autoscaler["scaleDowns"]] == ["member"]
    assert run.autoscaler["nodeCount"] == [[0.0, 2], [120.0, 1]]
    assert run.autoscaler["groups"]["pool"]["nodeCount"] == [[0.0, 1], [120.0, 0]]


def test_scale_down_disabled_annotation_and_setting(simulate):
    member = node("member", group_name="pool")
    member["metadata"]["annotations"] = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
    run = simulate(member, scenario(autoscaler(group(initial=0), **FAST), until="20m"))
    assert run.autoscaler["scaleDowns"] == []
    run = simulate(node("member", group_name="pool"),
                   scenario(autoscaler(group(initial=0), scaleDownEnabled=False, **FAST), until="20m"))
    assert run.autoscaler["scaleDowns"] == []


def test_pending_pods_keep_the_space_they_would_take(simulate):
    # pool-2 is empty but a pending pod (scheduled only when pool-2 is ready) needs it
    run = simulate(make_priority_class("low", 1), pod("occupant", cpu="4", priority_class="low", node="pool-1"),
                   scenario(autoscaler(group(initial=1, min_size=0), **FAST),
                            [create_step("1s", pod("late", cpu="3", priority_class="low"))], until="20m"))
    assert run.node_of("late") == "pool-2"
    assert "pool-2" not in [s["node"] for s in run.autoscaler["scaleDowns"]]


def test_a_node_running_only_expendable_pods_is_empty(simulate):
    # pool-1 runs a 3-cpu pod of priority -100 (below the default cutoff of -10): left out of the
    # autoscaler's snapshot, so pool-1 is empty (utilization 0) and goes with the empty ones
    run = simulate(make_priority_class("filler", -100),
                   *anchored(pod("spare", cpu="3", node="pool-1", priority_class="filler")))
    assert [(s["time"], s["node"], s["pods"]) for s in run.autoscaler["scaleDowns"]] == [
        (120.0, "pool-1", []), (120.0, "pool-3", [])]
    assert run.phase("spare") == "Deleted"


def test_a_node_that_failed_the_removal_simulation_is_rechecked_after_five_minutes(simulate):
    # pool-1's pod (1.5 cpu) cannot move while pool-2 and pool-3 carry 3-cpu anchors: pool-1 fails the
    # removal simulation. At 3m pool-3's anchor is replaced by a 1-cpu one, so the pod would
    # fit there, but pool-1 is looked at again only 5 minutes after it failed.
    def docs(**settings):
        return [pod("a2", cpu="3", node="pool-2", annotations={SAFE: "false"}),
                pod("a3", cpu="3", node="pool-3", grace=0, annotations={SAFE: "false"}),
                deployment("web", 1, cpu="1500m"),
                scenario(autoscaler(group(initial=3, min_size=0), scaleDownUnneededTime="1m",
                                    scaleDownDelayAfterAdd="0s", **settings),
                         [delete_step("3m", "Pod", "a3"),
                          create_step("3m", pod("small", cpu="1", node="pool-3", annotations={SAFE: "false"}))],
                         until="10m")]

    def drained(run):
        return [s["time"] for s in run.autoscaler["scaleDowns"] if s["node"] == "pool-1"]

    # first found unremovable at the 10 s scan (the pod is bound after the scan at 0 s): looked at
    # again at 310 s, unneeded from then, removed 1m later
    assert drained(simulate(*docs())) == [370.0]
    assert drained(simulate(*docs(unremovableNodeRecheckTimeout="10s"))) == [240.0]  # unneeded from 3m


def test_node_hours_including_provisioning(simulate):
    run = simulate(deployment("web", 6), scenario(autoscaler(group(min_size=1, max_size=3, delay="30s"), **FAST),
                                                  [patch_step("5m", "Deployment", "web", {"spec": {"replicas": 2}})]))
    # the second node was asked for at 10 s and registered at 40 s: 30 s billed before it is a Node
    assert run.autoscaler["nodeHoursIncludingProvisioning"] == round((40 + 2 * 380 + 30) / 3600, 4)
