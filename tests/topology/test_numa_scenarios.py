"""End to end: the simulated kubelet and exporter in a scenario, with the default profile and with
NodeResourceTopologyMatch; the examples under examples/numa."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubesched.cluster.embedded.kubelet.topology import TopologySubsystem
from kubesched.sim import simulate as simulate_scenario
from kubesched.testkit.builders import make_deployment, make_priority_class
from kubesched.testkit.runs import events, node_of, phase, run_docs
from kubesched.testkit.scenarios import create_step

from .conftest import container, node, pod, profile, rejections, scenario, start_time, topology, zones

Obj = dict[str, Any]
Simulate = Callable[..., Obj]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "numa"
CANNOT_ALIGN = "0/1 nodes are available: 1 cannot align container."


def test_guaranteed_integral_cpus_are_exclusive_and_from_one_zone(tmp_path: Path) -> None:
    docs = scenario([node("n1"), pod("a", "6"), pod("b", "6"), pod("shared", "1500m")], topo=topology())
    sim = run_docs(tmp_path, docs).sim
    subsystem = sim.cluster.subsystems["topology"]
    assert isinstance(subsystem, TopologySubsystem)
    server = subsystem.server("n1")
    assert server is not None
    cpus = {p.name: p.containers[0].cpu_ids for p in server.list()}
    assert cpus == {"a": (0, 1, 2, 3, 4, 5), "b": (8, 9, 10, 11, 12, 13), "shared": ()}
    assert set(cpus["a"]).isdisjoint(cpus["b"])


def test_fits_the_node_not_a_zone_rejected_by_the_kubelet_filtered_by_the_plugin(simulate: Simulate) -> None:
    objs = [node("n1"), pod("a", "6", node="n1"), pod("b", "6", node="n1")]
    steps = [create_step("5s", pod("c", "3"))]
    default = simulate(scenario(objs, topo=topology(), steps=steps))
    assert [e["pod"] for e in rejections(default)] == ["default/c"]
    assert phase(default, "c") == "Failed"
    assert default["cluster"]["topology"]["rejected"] == {"TopologyAffinityError": 1}
    aware = simulate(scenario(objs, topo=topology(), steps=steps, plugin=True))
    assert rejections(aware) == []
    assert phase(aware, "c") == "Pending"
    assert events(aware, "FailedScheduling", "c")[0]["message"].startswith(CANNOT_ALIGN)


@pytest.mark.parametrize("policy, outcome", [
    ("single-numa-node", "Failed"), ("restricted", "Failed"), ("best-effort", "Running"), ("none", "Running"),
])
def test_kubelet_policies_on_a_pod_that_needs_two_zones_of_what_is_free(simulate: Simulate, policy: str,
                                                                       outcome: str) -> None:
    objs = [node("n1"), pod("a", "5", node="n1"), pod("b", "5", node="n1"),
            pod("c", "6", node="n1")]
    result = simulate(scenario(objs, topo=topology(policy)))
    assert phase(result, "c") == outcome
    if outcome == "Failed":
        assert rejections(result)[0]["pod"] == "default/c"


def test_restricted_admits_what_can_only_span_zones_single_numa_node_rejects(simulate: Simulate) -> None:
    for policy, outcome in (("restricted", "Running"), ("single-numa-node", "Failed")):
        result = simulate(scenario([node("n1"), pod("big", "12", node="n1")], topo=topology(policy)))
        assert phase(result, "big") == outcome


def test_pod_scope_rejects_a_pod_whose_containers_only_fit_apart(simulate: Simulate) -> None:
    two = pod("two", containers=[container("5", name="a"), container("5", name="b")], node="n1")
    assert phase(simulate(scenario([node("n1"), two], topo=topology(scope="container"))), "two") == "Running"
    two = pod("two", containers=[container("5", name="a"), container("5", name="b")], node="n1")
    assert phase(simulate(scenario([node("n1"), two], topo=topology(scope="pod"))), "two") == "Failed"


# -- the exporter's freshness decides ---------------------------------------------------------------------
def _arrivals() -> tuple[list[Obj], list[Obj]]:
    return [node("n1")], [create_step("0s", pod("a", "5")), create_step("2s", pod("b", "5")), create_step("4s", pod("c", "5"))]


@pytest.mark.parametrize("exporter, c_phase", [
    ({"mode": "Watch"}, "Pending"),
    ({"mode": "Poll", "interval": "1s"}, "Pending"),
    ({"mode": "Poll", "interval": "10s"}, "Failed"),  # at 4s the object still shows both zones free
])
def test_polling_interval_changes_outcomes(simulate: Simulate, exporter: Obj, c_phase: str) -> None:
    objs, steps = _arrivals()
    result = simulate(scenario(objs, topo=topology(exporter=exporter), plugin=True, steps=steps, until="60s"))
    assert phase(result, "a") == phase(result, "b") == "Running"
    assert phase(result, "c") == c_phase
    assert len(rejections(result)) == (1 if c_phase == "Failed" else 0)


@pytest.mark.parametrize("args", [{"cacheResyncMode": "OnUpdate"}, {"cacheResyncPeriodSeconds": 5}])
def test_reservation_view_trades_the_rejection_for_waiting_on_the_next_poll(simulate: Simulate, args: Obj) -> None:
    objs, steps = _arrivals()
    result = simulate(scenario(objs, topo=topology(exporter={"mode": "Poll", "interval": "10s"}), plugin=True,
                               args=args, steps=steps, until="60s"))
    assert rejections(result) == []
    assert start_time(result, "a") == 0.0
    # b arrives while a is only reserved (counted against both zones): it waits for the 10s poll
    b_start = start_time(result, "b")
    assert b_start is None or b_start >= 10.0
    assert phase(result, "c") == "Pending"


def test_pods_placed_in_one_burst_are_double_counted_without_the_reservation_view(simulate: Simulate) -> None:
    objs = [node("n1"), pod("a", "6"), pod("b", "6"), pod("c", "3")]
    watch = {"mode": "Watch"}
    passthrough = simulate(scenario(objs, topo=topology(exporter=watch), plugin=True))
    assert [e["pod"] for e in rejections(passthrough)] == ["default/c"]
    reserved = simulate(scenario(objs, topo=topology(exporter=watch), plugin=True, args={"cacheResyncMode": "OnUpdate"},
                                 until="10m"))
    assert rejections(reserved) == []
    assert phase(reserved, "a") == "Running"


def test_a_freed_zone_is_used_once_the_exporter_publishes_it(simulate: Simulate) -> None:
    objs = [node("n1"), pod("a", "6", node="n1", annotations={"kubesched.io/run-for": "10s"}),
            pod("b", "6", node="n1")]
    steps = [create_step("1s", pod("c", "6"))]
    watch = simulate(scenario(objs, topo=topology(exporter={"mode": "Watch"}), plugin=True, steps=steps, until="2m"))
    # a finishes at 10s: its deletion requeues c, and the Watch exporter has already published the freed zone
    assert start_time(watch, "c") == 10.0
    poll = simulate(scenario(objs, topo=topology(exporter={"mode": "Poll", "interval": "30s"}), plugin=True,
                             steps=steps, until="2m"))
    assert start_time(poll, "c") is None or start_time(poll, "c") >= 30.0  # type: ignore[operator]


# -- preemption ---------------------------------------------------------------------------------------------
QUICK = {"kubesched.io/exit-after": "1s"}


def _preemption_objects() -> list[Obj]:
    """n1 (2 x 8 CPUs) runs 13 CPUs of pods; the 5-CPU preemptor needs low-a and low-b gone to fit
    zone 0 (low-c alone would leave zone 1 at 4)."""
    return [
        make_priority_class("low", 100), make_priority_class("high", 1000), node("n1"),
        pod("low-a", "3", node="n1", priority_class="low", annotations=QUICK),   # zone 0
        pod("high-a", "2", node="n1", priority_class="high"),                    # zone 0
        pod("high-b", "4", node="n1", priority_class="high"),                    # zone 1
        pod("low-b", "2", node="n1", priority_class="low", annotations=QUICK),   # zone 0 (1 CPU left)
        pod("low-c", "2", node="n1", priority_class="low", annotations=QUICK),   # zone 1 (2 CPUs left)
    ]


def _preempted(result: Obj) -> list[tuple[str, float]]:
    return sorted((e["pod"], e["time"]) for e in events(result, "Preempted"))


def test_preemption_evicts_the_victims_that_free_one_zone(simulate: Simulate) -> None:
    """With the OnUpdate reservation cache the node's object comes with the pods it was checked
    against, so the dry run knows each victim's zone from the exporter's numaplacement attributes."""
    steps = [create_step("5s", pod("urgent", "5", priority_class="high"))]
    topo = topology(exporter={"mode": "Watch"})
    args = {"preemptionMode": "Enabled", "cacheResyncMode": "OnUpdate"}
    result = simulate(scenario(_preemption_objects(), topo=topo, plugin=True, args=args, steps=steps, until="2m"))
    assert _preempted(result) == [("default/low-a", 5.0), ("default/low-b", 5.0)]
    assert phase(result, "low-c") == "Running"
    assert phase(result, "urgent") == "Running" and node_of(result, "urgent") == "n1"
    assert rejections(result) == []
    disabled = simulate(scenario(_preemption_objects(), topo=topo, plugin=True, steps=steps, until="2m",
                                 args={"cacheResyncMode": "OnUpdate"}))
    assert events(disabled, "Preempted") == [] and phase(disabled, "urgent") == "Pending"


def test_without_the_reservation_cache_no_victim_frees_a_zone(simulate: Simulate) -> None:
    """scheduler-plugins' passthrough cache gives no container placement: the dry run sees the zones
    as they are and finds no candidate, even after the 5-minute flush."""
    steps = [create_step("5s", pod("urgent", "5", priority_class="high"))]
    result = simulate(scenario(_preemption_objects(), topo=topology(exporter={"mode": "Watch"}), plugin=True,
                               args={"preemptionMode": "Enabled"}, steps=steps, until="6m"))
    assert events(result, "Preempted") == [] and phase(result, "urgent") == "Pending"
    failures = [e["message"] for e in events(result, "FailedScheduling", "urgent")]
    assert len(failures) == 2
    assert all("preemption: 0/1 nodes are available: 1 cannot align container." in m for m in failures)


def test_the_periodic_cache_preempts_once_a_resync_kept_the_nodes_pods(simulate: Simulate) -> None:
    """The periodic cache starts from objects without pods and keeps the pods only when a resync
    flushes a node — one the plugin filtered out. At 5 s the urgent pod fails on node resources
    (NodeResourcesFit), so the plugin never marks n1: no placement, no preemption. A pod that fits
    the node but no zone (probe, at 1 s) makes the plugin mark it; the resync at the next cycle after
    5 s flushes it, and urgent, arriving at 10 s, preempts. It then waits for the next flush of the
    cached object (which still has the victims) and, as the resync sends no event, for the queue's
    5-minute flush."""
    topo = topology(exporter={"mode": "Watch"})
    args = {"preemptionMode": "Enabled", "cacheResyncPeriodSeconds": 5}
    alone = [create_step("5s", pod("urgent", "5", priority_class="high"))]
    result = simulate(scenario(_preemption_objects(), topo=topo, plugin=True, args=args, steps=alone, until="2m"))
    assert events(result, "Preempted") == [] and phase(result, "urgent") == "Pending"
    probed = [create_step("1s", pod("probe", "3")), create_step("10s", pod("urgent", "5", priority_class="high"))]
    result = simulate(scenario(_preemption_objects(), topo=topo, plugin=True, args=args, steps=probed, until="6m"))
    assert events(result, "FailedScheduling", "probe")[0]["message"].startswith(CANNOT_ALIGN)
    assert _preempted(result) == [("default/low-a", 10.0), ("default/low-b", 10.0)]
    started = start_time(result, "urgent")
    assert started is not None and started >= 300.0 and node_of(result, "urgent") == "n1"


# -- the failure loop ---------------------------------------------------------------------------------------
def test_deployment_failure_loop_and_its_disappearance(simulate: Simulate) -> None:
    gpu_zones = zones(2, cpus=16, memory="64Gi", gpus=2)
    objs: list[Obj] = [node("bad", "32", "128Gi", gpus=4), node("good", "32", "128Gi", gpus=4),
                       pod("inf-a", "10", "8Gi", gpu=1, node="bad"), pod("inf-b", "10", "8Gi", gpu=1, node="bad"),
                       pod("train", "10", "8Gi", gpu=2, node="good"), pod("etl", "10", "8Gi", node="good"),
                       make_deployment("trainer", 1, pod("trainer", containers=[container("4", "8Gi", gpu=2)]), namespace="default")]
    topo = topology(zone_list=gpu_zones, exporter={"mode": "Watch"})
    loops = []
    for seed in range(1, 7):
        default = simulate(scenario(objs, topo=topo, seed=seed))
        created = [e for e in events(default, "Created") if "trainer" in e["pod"]]
        # every trainer but the last was placed on the bad node and rejected, the ReplicaSet replaced it
        assert len(rejections(default)) == len(created) - 1
        assert all(e["node"] == "bad" for e in rejections(default))
        assert [p["node"] for k, p in default["pods"].items() if "trainer" in k and p["phase"] == "Running"] == ["good"]
        loops.append(len(created) - 1)
        aware = simulate(scenario(objs, topo=topo, plugin=True, seed=seed))
        assert rejections(aware) == []
        assert [p["node"] for k, p in aware["pods"].items() if "trainer" in k] == ["good"]
    assert max(loops) >= 1  # ties between the two nodes are broken at random: some seeds loop


# -- examples -----------------------------------------------------------------------------------------------
def _trainers(result: Obj) -> list[Obj]:
    return [p for k, p in result["pods"].items() if "trainer" in k and p["phase"] == "Running"]


def test_example_failure_loop() -> None:
    default = simulate_scenario(str(EXAMPLES / "default-scheduler.yaml")).result
    aware = simulate_scenario(str(EXAMPLES / "numa-aware-scheduler.yaml")).result
    assert len(rejections(default)) >= 3
    assert rejections(aware) == []
    for result in (default, aware):
        trainers = _trainers(result)
        assert len(trainers) == 3 and all(p["node"].startswith("good-") for p in trainers)


def test_example_stale_topology_and_compare_script(capsys: pytest.CaptureFixture[str]) -> None:
    result = simulate_scenario(str(EXAMPLES / "stale-topology.yaml")).result
    assert len(rejections(result)) > 0
    import importlib.util

    spec = importlib.util.spec_from_file_location("numa_compare", EXAMPLES / "compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main() == 0
    table = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in table.splitlines()
            if line.startswith("| plugin") or line.startswith("| default")}
    assert rows["plugin, cacheResyncMode OnUpdate, Watch"] == "0"
    assert rows["plugin, cacheResyncPeriodSeconds 5, Watch"] == "0"
    assert int(rows["plugin, no cache, Poll 30s"]) > int(rows["plugin, no cache, Watch"])


# -- foreign pods ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("detect", ["All", "OnlyExclusiveResources", "None"])
def test_a_foreign_pod_makes_the_node_data_invalid_until_a_resync_catches_up(simulate: Simulate, detect: str) -> None:
    """With the reservation cache, a pod another scheduler placed marks its node: until a resync
    finds the exporter's fingerprint matching the node's pods, the plugin refuses the node ("invalid
    node topology data"), as scheduler-plugins does. OnlyExclusiveResources marks only for pods with
    exclusive resources (this Guaranteed 2-cpu pod has them); None never. The resync (at 5 s) sends
    no event, so the refused pod waits in the unschedulable pool for its 5-minute flush."""
    objs = [node("n1"), pod("other", "2", node="n1", schedulerName="other-scheduler")]
    steps = [create_step("1s", pod("p", "2"))]
    result = simulate(scenario(objs, topo=topology(exporter={"mode": "Watch"}), plugin=True, steps=steps,
                               args={"cacheResyncPeriodSeconds": 5, "cache": {"foreignPodsDetect": detect}},
                               until="6m"))
    failures = [e["message"] for e in events(result, "FailedScheduling", "p")]
    if detect == "None":
        assert failures == [] and start_time(result, "p") == 1.0
        return
    assert failures[0].startswith("0/1 nodes are available: 1 invalid node topology data.")
    started = start_time(result, "p")
    assert started is not None and 300.0 <= started <= 331.0


def test_a_burstable_foreign_pod_marks_nothing_when_only_exclusive_resources_count(simulate: Simulate) -> None:
    objs = [node("n1"), pod("other", "2", node="n1", schedulerName="other-scheduler", guaranteed=False)]
    steps = [create_step("1s", pod("p", "2"))]
    args = {"cacheResyncPeriodSeconds": 5, "cache": {"foreignPodsDetect": "OnlyExclusiveResources"}}
    result = simulate(scenario(objs, topo=topology(exporter={"mode": "Watch"}), plugin=True, steps=steps, args=args,
                               until="30s"))
    assert events(result, "FailedScheduling", "p") == [] and start_time(result, "p") == 1.0


@pytest.mark.parametrize("other, foreign", [
    (profile("other-scheduler", args={"cacheResyncPeriodSeconds": 5}), False),
    (profile("other-scheduler", plugin=False), True),
    # upstream registers a profile only where its plugin sets the detection up: with the reservation
    # cache and foreignPodsDetect other than None
    (profile("other-scheduler"), True),
    (profile("other-scheduler", args={"cacheResyncPeriodSeconds": 5, "cache": {"foreignPodsDetect": "None"}}), True),
])
def test_pods_of_another_profile_are_foreign_unless_it_detects_foreign_pods_too(simulate: Simulate, other: Obj,
                                                                               foreign: bool) -> None:
    """scheduler-plugins keeps one process-wide set of profile names: a pod whose schedulerName is
    any profile registered there is no foreign pod, whichever profile placed it."""
    steps = [create_step("0s", pod("theirs", "2", schedulerName="other-scheduler")), create_step("1s", pod("p", "2"))]
    result = simulate(scenario([node("n1")], topo=topology(exporter={"mode": "Watch"}), plugin=True, steps=steps,
                               args={"cacheResyncPeriodSeconds": 5}, profiles=[other], until="1m"))
    assert node_of(result, "theirs") == "n1"
    failures = [e["message"] for e in events(result, "FailedScheduling", "p")]
    if foreign:
        assert failures[0].startswith("0/1 nodes are available: 1 invalid node topology data.")
        assert start_time(result, "p") is None
    else:
        assert failures == [] and start_time(result, "p") == 1.0

