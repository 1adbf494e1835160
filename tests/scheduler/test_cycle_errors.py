"""A scheduling cycle that fails unexpectedly never loses its pod: the pod gets upstream's error
handling (PodScheduled=False/SchedulerError, a FailedScheduling event, back to the queue with
backoff) and is scheduled once the fault is gone. Odd quantities do not make cycles fail at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.loader import load_scenario
from kubesched.scheduler.cycle import SchedulingAttempt
from kubesched.sim import Simulation, simulate
from kubesched.testkit.builders import make_node, make_pod


def _write(tmp_path: Path, docs: list[dict[str, Any]]) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_a_cycle_that_raises_requeues_its_pod_with_a_scheduler_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = SchedulingAttempt.schedule_pod

    def flaky(attempt: SchedulingAttempt) -> Any:
        if attempt.qpi.pod.name == "boom" and attempt.sched.clock() < 3:
            raise KeyError("a fault for this pod")
        return real(attempt)

    monkeypatch.setattr(SchedulingAttempt, "schedule_pod", flaky)
    path = _write(tmp_path, [make_node("n1"), make_pod("boom"), make_pod("fine")])
    sim = Simulation(load_scenario(path), until=600.0)
    conditions: list[tuple[str, str]] = []

    class Watch:
        def on_add(self, kind: str, obj: Any) -> None:
            pass

        def on_update(self, kind: str, old: Any, new: Any) -> None:
            if kind == "Pod" and new["metadata"]["name"] == "boom":
                for c in (new.get("status") or {}).get("conditions") or []:
                    if c["type"] == "PodScheduled" and (c["status"], c.get("reason", "")) not in conditions:
                        conditions.append((c["status"], c.get("reason", "")))

        def on_delete(self, kind: str, obj: Any) -> None:
            pass

    sim.cluster.watch(Watch())
    result = sim.run().result
    failed = [e for e in result["events"] if e["reason"] == "FailedScheduling" and e["pod"] == "default/boom"]
    assert failed and failed[0]["time"] == 0 and failed[0]["message"] == "KeyError: 'a fault for this pod'"
    assert conditions == [("False", "SchedulerError"), ("True", "")]
    # requeued by the next events and retried while the fault lasts, then after its last failure
    # (nothing happens in the cluster any more) at the unschedulable pool's 5-minute flush; the
    # other pod was not held up
    scheduled = {e["pod"]: e["time"] for e in result["events"] if e["reason"] == "Scheduled"}
    assert scheduled["default/fine"] == 0 and 300 <= scheduled["default/boom"] <= 330
    assert result["pods"]["default/boom"]["phase"] == "Running"


def test_odd_quantities_neither_stop_scheduling_nor_lose_pods(tmp_path: Path) -> None:
    docs = [make_node("huge", cpu="10P"), make_node("n1", cpu="4", memory="8Gi"),
            make_pod("e1", cpu=None, memory="5Ei", node="n1"), make_pod("e2", cpu=None, memory="5Ei", node="n1"),
            make_pod("big", cpu="10P", memory=None), *[make_pod(f"p{i}", cpu="1", memory="1Gi") for i in range(3)]]
    result = simulate(_write(tmp_path, docs), until=60.0).result
    pods = result["pods"]
    # 10P cpu is 10^19 milli-cpu, beyond int64: read as 0, as upstream's Quantity.MilliValue gives it
    # back (the 10P node has no cpu for the 1-cpu pods, the 10P pod asks for none)
    assert {pods[f"default/p{i}"]["node"] for i in range(3)} == {"n1"}
    # the two 5Ei pods written onto n1 wrap its int64 memory sum negative, as upstream's NodeInfo
    # does: a pod scored on n1 and another node gets an invalid NodeResourcesFit score and fails
    # with a SchedulerError, until the kubelet has refused both (1 s later) ...
    failures = [e for e in result["events"] if e["reason"] == "FailedScheduling"]
    assert [(e["time"], e["pod"]) for e in failures] == [(0.0, "default/big")]
    assert failures[0]["message"].startswith(
        'applying score defaultWeights on Score plugins: plugin "NodeResourcesFit" returns an invalid score ')
    assert failures[0]["message"].endswith(", it should in the range of [0, 100] after normalizing")
    assert (pods["default/e1"]["phase"], pods["default/e1"]["reason"]) == ("Failed", "OutOfmemory")
    assert (pods["default/e2"]["phase"], pods["default/e2"]["reason"]) == ("Failed", "OutOfmemory")
    # ... whose updates requeue the failed pod (no plugin named in its failure, so any event does):
    # it is scheduled then, the cluster having recovered by itself
    scheduled = [e for e in result["events"] if e["reason"] == "Scheduled" and e["pod"] == "default/big"]
    assert [e["time"] for e in scheduled] == [1.0]
