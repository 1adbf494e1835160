"""GangPreemption: a PodGroup's members preempt together or not at all, where DefaultPreemption
(upstream's behaviour with Coscheduling) evicts pods for a gang that can never run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.testkit.builders import make_node, make_pod, make_priority_class
from kubesched.testkit.runs import ScenarioRun, run_docs
from kubesched.testkit.scenarios import create_step, scenario_document

GROUP = "scheduling.x-k8s.io/pod-group"


def config(preemption: str) -> dict[str, Any]:
    enabled = [{"name": "Coscheduling"}]
    disabled = []
    if preemption == "GangPreemption":
        enabled.insert(0, {"name": "GangPreemption"})  # before Coscheduling's PostFilter
        disabled.append({"name": "DefaultPreemption"})
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler",
                          "plugins": {"multiPoint": {"enabled": enabled, "disabled": disabled},
                                      "queueSort": {"enabled": [{"name": "Coscheduling"}],
                                                    "disabled": [{"name": "*"}]}},
                          "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 20}}]}]}


def cluster(low_nodes: int, critical_nodes: int, members: int) -> list[dict[str, Any]]:
    """Nodes of 4 cpu, each running one 3-cpu pod: ``low`` (priority 10) or ``critical`` (priority
    2000); at 10 s a gang of ``members`` 3-cpu pods of priority 1000 arrives (minMember = members)."""
    objects: list[dict[str, Any]] = [make_priority_class("low", 10), make_priority_class("gang", 1000),
                                     make_priority_class("critical", 2000)]
    for i in range(low_nodes + critical_nodes):
        cls = "low" if i < low_nodes else "critical"
        objects += [make_node(f"n{i}"), make_pod(f"{cls}-{i}", cpu="3", node=f"n{i}", priority_class=cls)]
    objects.append({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                    "metadata": {"name": "job", "namespace": "default"}, "spec": {"minMember": members}})
    return objects


def run(tmp_path: Path, preemption: str, low_nodes: int, critical_nodes: int, members: int) -> ScenarioRun:
    steps = [create_step("10s", make_pod(f"worker-{i}", cpu="3", priority_class="gang", labels={GROUP: "job"}))
             for i in range(members)]
    return run_docs(tmp_path, [scenario_document(config=config(preemption), steps=steps, until="3m"),
                               *cluster(low_nodes, critical_nodes, members)])


def test_default_preemption_evicts_for_a_gang_that_cannot_run_gang_preemption_evicts_nobody(
        tmp_path: Path) -> None:
    default = run(tmp_path, "DefaultPreemption", low_nodes=2, critical_nodes=2, members=3)
    assert default.victims() == {"low-0", "low-1"}  # evicted for a gang that never runs
    assert all(default.phase(f"worker-{i}") == "Pending" for i in range(3))

    gang = run(tmp_path, "GangPreemption", low_nodes=2, critical_nodes=2, members=3)
    assert gang.victims() == set()
    assert gang.phase("low-0") == "Running" and gang.phase("low-1") == "Running"
    message = gang.failed("worker-0")[0][1]
    assert "preemption: not every member of PodGroup default/job can be placed (2 of 3); pod worker-" in message


def test_gang_preemption_evicts_for_every_member_at_once_and_the_gang_runs(tmp_path: Path) -> None:
    gang = run(tmp_path, "GangPreemption", low_nodes=3, critical_nodes=1, members=3)
    assert gang.victims() == {"low-0", "low-1", "low-2"}
    preempted_at = {t for t, _, _ in gang.preempted()}
    assert preempted_at == {10.0}  # all in the first member's PostFilter
    assert sorted(gang.node_of(f"worker-{i}") or "" for i in range(3)) == ["n0", "n1", "n2"]
    # the other members were nominated to the freed nodes at once
    nominated = {name: gang.nominations(name) for name in ("worker-0", "worker-1", "worker-2")}
    assert sum(1 for n in nominated.values() if n and n[0][0] == 10.0) == 3
    assert gang.phase("critical-3") == "Running"
