"""Gang scheduling: waiting Permit in the framework and scheduler-plugins' Coscheduling with
PodGroups, checked on what a user sees (where and when pods run, the messages, PodGroup status)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.api.loader import load_scenario, load_scheduler_configuration
from kubesched.scheduler.framework.waiting import WaitingPod, go_duration
from kubesched.sim import simulate
from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.framework import pod_info
from kubesched.testkit.runs import ScenarioRun, run_docs, run_path
from kubesched.testkit.scenarios import create_step, delete_step, scenario_document

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gang-scheduling"
GROUP = "scheduling.x-k8s.io/pod-group"
COSCHEDULING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler",
                  "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                              "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}}}]}


def pod_group(name: str, min_member: int, *, timeout: int | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"minMember": min_member, **spec}
    if timeout is not None:
        body["scheduleTimeoutSeconds"] = timeout
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": body}


def member(name: str, group: str, cpu: str = "3", **fields: Any) -> dict[str, Any]:
    return make_pod(name, cpu=cpu, labels={GROUP: group}, **fields)


def completed(run: ScenarioRun, prefix: str) -> list[float]:
    return [e["time"] for e in run.ev("Completed") if e["pod"].split("/", 1)[1].startswith(prefix)]


def test_one_by_one_two_gangs_deadlock_and_coscheduling_runs_them_in_turn() -> None:
    default = run_path(EXAMPLES / "jobs.yaml")
    assert default.result["summary"]["pending"] == 4
    assert completed(default, "train-") == []  # every running worker waits for peers forever
    running = [k for k, p in default.result["pods"].items() if p["phase"] == "Running"]
    assert sorted(k.split("-worker")[0] for k in running) == ["ml/train-a"] * 2 + ["ml/train-b"] * 2

    scenario = load_scenario(EXAMPLES / "jobs.yaml")
    scenario.scheduler_configuration = load_scheduler_configuration(str(EXAMPLES / "coscheduling.yaml"))
    gang = ScenarioRun(simulate(scenario))
    assert completed(gang, "train-a") == [120.0] * 4
    assert completed(gang, "train-b") == [240.0] * 4
    # no worker of train-b ever held a node while train-a ran
    assert all(t >= 120.0 for t, _ in (s for i in range(4) for s in gang.scheduled(f"ml/train-b-worker-{i}")))
    group = gang.sim.cluster.api.get("PodGroup", "ml", "train-b")
    assert group is not None and group["status"]["phase"] == "Finished"
    assert group["status"]["succeeded"] == 4


def test_members_wait_at_permit_and_are_rejected_on_timeout(tmp_path: Path) -> None:
    """Two of three members fit; the third is held back by a scheduling gate: the two wait at Permit
    for the group's 30 s, are rejected (the FitError upstream reports), release their nodes and try
    again after backoff; nothing of the group ever runs."""
    run = run_docs(tmp_path, [
        scenario_document(config=COSCHEDULING, until="70s"),
        make_node("n1"), make_node("n2"),
        pod_group("g", 3, timeout=30),
        member("m0", "g"), member("m1", "g"),
        member("m2", "g", schedulingGates=[{"name": "example.com/hold"}]),
    ])
    for name in ("m0", "m1"):
        failures = run.failed(name)
        assert failures[0] == (30.0, "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin "
                                     "Coscheduling.")
        assert run.scheduled(name) == []
        assert [t for t, _ in failures] == [30.0, 61.0]  # tried again after 1 s of backoff, waited again
    assert all(p["phase"] == "Pending" for p in run.result["pods"].values())


def test_a_group_smaller_than_min_member_is_refused_before_filtering(tmp_path: Path) -> None:
    run = run_docs(tmp_path, [
        scenario_document(config=COSCHEDULING, steps=[create_step("20s", member("m2", "g", cpu="1"))], until="1m"),
        make_node("n1"),
        pod_group("g", 3),
        member("m0", "g", cpu="1"), member("m1", "g", cpu="1"),
    ])
    assert run.failed("m0")[0][1].startswith(
        "0/1 nodes are available: pre-filter pod m0 cannot find enough sibling pods, current pods number: 2, "
        "minMember of group: 3.")
    # the third member's creation (a Pod/Add event) brings the others back: the gang starts together
    assert {run.scheduled(n)[0][0] for n in ("m0", "m1", "m2")} == {20.0}


def test_min_resources_the_cluster_cannot_offer_are_refused(tmp_path: Path) -> None:
    run = run_docs(tmp_path, [
        scenario_document(config=COSCHEDULING, until="10s"),
        make_node("n1", cpu="4"),
        pod_group("g", 2, minResources={"cpu": "6"}),
        member("m0", "g", cpu="1"), member("m1", "g", cpu="1"),
    ])
    assert run.failed("m0")[0][1].startswith("0/1 nodes are available: resource gap: map[cpu:2].")


def test_a_waiting_member_that_is_deleted_frees_its_node(tmp_path: Path) -> None:
    run = run_docs(tmp_path, [
        scenario_document(config=COSCHEDULING, steps=[delete_step("5s", "Pod", "m0", grace=0),
                                                      create_step("6s", make_pod("other", cpu="3"))],
                          until="20s"),
        make_node("n1"),
        pod_group("g", 2, timeout=600),
        member("m0", "g"), member("m1", "g", schedulingGates=[{"name": "example.com/hold"}]),
    ])
    assert run.phase("m0") == "Deleted" and run.scheduled("m0") == []
    assert run.node_of("other") == "n1"  # the deleted waiting pod no longer holds n1


def test_waiting_pod_decides_once_and_cancels_its_timers() -> None:
    cancelled: list[str] = []
    outcomes: list[Any] = []
    waiting = WaitingPod(pod_info(make_pod("p")), "n1", {"A": 10.0, "B": 20.0})
    waiting.add_timer(cancelled.append, "timer-a")
    waiting.wait(outcomes.append)
    waiting.allow("A")
    assert outcomes == [] and waiting.pending_plugins == ["B"]
    waiting.allow("B")
    assert outcomes == [None] and cancelled == ["timer-a"]
    waiting.reject("B", "too late")  # a decision after the first is ignored
    assert outcomes == [None]


@pytest.mark.parametrize(("seconds", "text"), [(10, "10s"), (60, "1m0s"), (90, "1m30s"), (900, "15m0s"),
                                               (1.5, "1.5s"), (3600, "1h0m0s")])
def test_durations_are_printed_as_go_prints_them(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_a_gang_that_can_never_fit_ends_a_run_without_until(tmp_path: Path) -> None:
    """Four members, room for three: in a real cluster they wait at Permit, time out and are retried
    for ever. A run without ``until`` ends 10 simulated minutes after the last event other than
    those retries, with every member Pending and the reason in their events."""
    run = run_docs(tmp_path, [
        scenario_document(config=COSCHEDULING),
        make_node("n1"), make_node("n2"), make_node("n3"),
        pod_group("g", 4, timeout=30),
        *(member(f"m{i}", "g") for i in range(4)),
    ])
    assert run.result["endTime"] == 600.0
    assert all(p["phase"] == "Pending" for p in run.result["pods"].values())
    assert run.result["summary"]["pending"] == 4
    _, last = run.failed("m3")[-1]
    assert last.startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert "PodGroup default/g gets rejected" in last
