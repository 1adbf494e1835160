"""The Pod Preemption design's eviction example (examples/eviction/design-example.yaml) and what a
kubelet eviction writes: phase, reason, message, DisruptionTarget condition, node condition/taint."""

from __future__ import annotations

from kubesched.k8s.timefmt import rfc3339
from kubesched.testkit.runs import run_path

from .conftest import EXAMPLES

KEY = ("Preempted", "Deleted", "Scheduled", "Evicted", "NodeHasInsufficientMemory", "NodeHasSufficientMemory")


def test_design_example_ends_as_the_design_describes():
    run = run_path(EXAMPLES / "eviction" / "design-example.yaml")
    timeline = [(e["time"], e["reason"], e["pod"].split("/", 1)[1]) for e in run.events if e["reason"] in KEY]
    assert timeline == [
        (5.0, "Preempted", "burstable"),      # 4./5. the scheduler preempts the burstable pod only
        (35.0, "Deleted", "burstable"),       # its 30 s grace period is over
        (35.0, "Scheduled", "high"),
        (40.0, "Evicted", "best-effort"),     # 6. the kubelet kills the best-effort pod
        (45.0, "NodeHasInsufficientMemory", "node-1"),
        (345.0, "NodeHasSufficientMemory", "node-1"),  # 5 min pressure transition period
    ]
    assert run.phase("high") == "Running"
    assert run.phase("burstable") == "Deleted"
    assert run.phase("best-effort") == "Failed"
    evictions = run.eviction["evictions"]
    assert [(e["pod"], e["usage"], e["request"], e["priority"]) for e in evictions] == [
        ("default/best-effort", "1Gi", "0", 100)]


def test_evicted_pod_status_is_what_the_kubelet_writes():
    run = run_path(EXAMPLES / "eviction" / "design-example.yaml")
    pod = run.live("best-effort")
    assert pod is not None
    status = pod["status"]
    message = ("The node was low on resource: memory. Threshold quantity: 100Mi, available: -412Mi. "
               "Container app was using 1Gi, request is 0, has larger consumption of memory. ")
    assert (status["phase"], status["reason"], status["message"]) == ("Failed", "Evicted", message)
    target = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert target == [{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                       "message": message, "lastTransitionTime": rfc3339(40)}]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"


def test_node_condition_and_taint_follow_the_pressure():
    run = run_path(EXAMPLES / "eviction" / "design-example.yaml", until=100)
    node = run.sim.cluster.api.get("Node", None, "node-1")
    assert node is not None
    pressure = next(c for c in node["status"]["conditions"] if c["type"] == "MemoryPressure")
    assert (pressure["status"], pressure["reason"]) == ("True", "KubeletHasInsufficientMemory")
    assert {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"} in node["spec"]["taints"]
    done = run_path(EXAMPLES / "eviction" / "design-example.yaml")
    node = done.sim.cluster.api.get("Node", None, "node-1")
    assert node is not None
    pressure = next(c for c in node["status"]["conditions"] if c["type"] == "MemoryPressure")
    assert pressure["status"] == "False"
    assert not (node.get("spec") or {}).get("taints")
    assert done.eviction["nodeConditions"] == [
        {"time": 45.0, "node": "node-1", "type": "MemoryPressure", "status": "True"},
        {"time": 345.0, "node": "node-1", "type": "MemoryPressure", "status": "False"},
    ]


def test_same_run_twice_is_identical():
    a = run_path(EXAMPLES / "eviction" / "design-example.yaml").result
    b = run_path(EXAMPLES / "eviction" / "design-example.yaml").result
    assert a == b
